"""What an export is made from (a job and its layout) and what it gives (files and caveats).

Every export carries the whole layout; what a framework cannot express is a caveat, said in
the command's output and in the file's header, with the nearest faithful mapping.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from shardwise.kb.job import Job
from shardwise.kb.layout import Layout


@dataclass(frozen=True)
class Target:
    job: Job
    layout: Layout

    def __post_init__(self):
        # ZeRO over a single replica shards nothing: export it as ZeRO-0 rather than as an
        # optimizer sharding that frameworks would set up for one rank
        if self.layout.dp * self.layout.cp == 1 and self.layout.zero:
            object.__setattr__(self, "layout", self.layout.with_(zero=0, shard=0))

    @property
    def global_batch(self) -> int:
        return self.layout.global_batch

    def header(self, comment: str = "#") -> list[str]:
        m, c, t, lay = self.job.model, self.job.cluster, self.job.training, self.layout
        return [f"{comment} shardwise export: {m.name} on {c.gpus} x {c.gpu.name} ({c.nodes} nodes of {c.gpus_per_node}), "
                f"seq {t.seq_len}, {t.training} {t.precision}",
                f"{comment} layout: {lay.describe()}; global batch {lay.global_batch} sequences"]


@dataclass
class Export:
    framework: str
    files: dict = field(default_factory=dict)      # file name -> text
    caveats: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"framework": self.framework, "files": dict(self.files), "caveats": list(self.caveats)}


def with_caveats(lines: list[str], caveats: list[str], comment: str = "#") -> list[str]:
    return lines + [f"{comment} cannot express: {c}" for c in caveats]
