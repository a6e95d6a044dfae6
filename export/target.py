"""What an export is made from (a job and its layout) and what it gives (files and caveats).

Every export carries the whole layout; what a framework cannot express is a caveat, said in
the command's output and in the file's header, with the nearest faithful mapping.
"""
from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field

from shardwise.kb.job import Job
from shardwise.kb.layout import Layout
from shardwise.kb.memory.overheads import allocator


@dataclass(frozen=True)
class Target:
    job: Job
    layout: Layout
    # what the export as a whole cannot carry to this framework, decided before its own module
    # runs (export/__init__.export), so that the file's header says it too
    carried: tuple = ()

    def __post_init__(self):
        # exported as ZeRO-0 rather than as an optimizer sharding set up for one rank
        object.__setattr__(self, "layout", self.layout.canonical(self.job.model.is_moe))

    @property
    def global_batch(self) -> int:
        return self.layout.global_batch

    @property
    def per_example(self) -> int:
        """Sequences in one example of the script's batch: a DPO preference pair is two, chosen and
        rejected in one forward (trl/trainer/dpo_trainer.py DataCollatorForPreference.torch_call:
        input_ids = prompt_chosen_ids + prompt_rejected_ids), so DPOTrainer's
        per_device_train_batch_size counts pairs; the layout counts sequences (kb/validity dpo-pairs)."""
        t = self.job.training
        return 2 if t.training == "rlhf" and t.rl_algorithm == "dpo" else 1

    @property
    def script_mbs(self) -> int:
        """The micro-batch as the script counts it (per_example)."""
        return self.layout.mbs // self.per_example

    @property
    def script_global_batch(self) -> int:
        """The global batch as the script counts it (per_example)."""
        return self.global_batch // self.per_example

    @property
    def train_steps(self) -> int | None:
        """Optimizer steps that train --token-budget tokens at this batch: budget / (global batch
        x sequence length), rounded up; None when the job has no budget."""
        t = self.job.training
        return math.ceil(t.token_budget / (self.global_batch * t.seq_len)) if t.token_budget else None

    def steps_comment(self, comment: str = "#", unset: str = "a placeholder") -> str:
        """Where the exported step count comes from, as a comment line; ``unset`` names what
        stands without a budget."""
        t = self.job.training
        if self.train_steps is None:
            return f"{comment} train steps: {unset} (give --token-budget and the export counts them)"
        return (f"{comment} train steps: {self.train_steps:,} = --token-budget {t.token_budget:,.0f} tokens / "
                f"({self.global_batch:,} sequences x {t.seq_len:,} tokens a step)")

    def header(self, comment: str = "#") -> list[str]:
        m, c, t, lay = self.job.model, self.job.cluster, self.job.training, self.layout
        where = f"{c.nodes} nodes of {c.gpus_per_node}" if c.nodes > 1 else "one node"
        return [f"{comment} shardwise export: {m.name} on {c.gpus} x {c.gpu.name} ({where}), "
                f"seq {t.seq_len}, {t.training} {t.precision}",
                f"{comment} layout: {lay.describe()}; global batch {lay.global_batch} sequences"] + \
            [f"{comment} cannot express: {c}" for c in self.carried]


@dataclass
class Export:
    framework: str
    files: dict = field(default_factory=dict)      # file name -> text
    caveats: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"framework": self.framework, "files": dict(self.files), "caveats": list(self.caveats)}


def dp_dims(lay: Layout) -> tuple[int, int]:
    """(replicate, shard) degrees of FSDP2's data-parallel mesh for a layout: ZeRO-0 replicates
    over DP; an HSDP group made of whole CP groups shards inside it and replicates across;
    otherwise FSDP shards over all DP ranks (CP ranks are their own mesh dimension)."""
    if lay.zero == 0:
        return lay.dp, 1
    if lay.shard and lay.shard % lay.cp == 0:
        return lay.dp * lay.cp // lay.shard, lay.shard // lay.cp
    return 1, lay.dp


def hsdp_caveats(lay: Layout) -> list[str]:
    """What FSDP2's mesh cannot express of an HSDP layout: a shard group that splits a CP group
    (dp_dims then shards over all DP x CP ranks)."""
    if lay.shard and lay.shard % lay.cp:
        return [f"HSDP shard group {lay.shard} does not hold whole CP groups (cp={lay.cp}): FSDP2 shards over "
                f"dp_shard x cp = {lay.dp * lay.cp} ranks instead"]
    return []


def shell_command(first: str, args: list[str], positional: tuple = ()) -> list[str]:
    """``first`` then one continued line per flag and its values (a value is what follows a
    --flag and is neither a flag nor a ``positional`` word: --recompute-modules takes several);
    $VARIABLES stay expandable."""
    items, i = [], 0
    while i < len(args):
        j = i + 1
        if args[i].startswith("--"):
            while j < len(args) and not args[j].startswith(("--",) + positional):
                j += 1
        items.append(" ".join([args[i]] + [_quote(v) for v in args[i + 1:j]]))
        i = j
    return [first + " \\"] + [f"  {x} \\" for x in items[:-1]] + [f"  {items[-1]}"]


def _quote(v: str) -> str:
    return f'"{v}"' if v.startswith("$") else shlex.quote(v)


def memory_as_run(tg: Target, optimizer: str | None = None, precision: str | None = None,
                  framework: str | None = None, **changes) -> str:
    """The estimated peak of the layout a framework actually runs (``changes`` applied to the
    planned one, e.g. ZeRO-1 where the plan sharded more; ``optimizer``, an --optimizer name, where
    it runs another optimizer than the planned one; ``precision``, a --precision name, where it
    keeps other states, e.g. fp32 masters where the plan had none; ``framework``, where the
    exporting framework's recipe is the one that decides it), for a caveat to say whether it fits."""
    from shardwise.kb.job import Job
    from shardwise.kb.memory.estimate import estimate_memory
    job = tg.job
    update = {k: v for k, v in (("optimizer", optimizer), ("precision", precision), ("framework", framework))
              if v is not None}
    if update:
        job = Job(job.model, job.cluster, job.training.model_copy(update=update))
    est = estimate_memory(job, tg.layout.with_(**changes))
    return (f"estimated {est.peak_gib:.1f} of {est.capacity_gib:.1f} GiB a GPU as it runs: "
            f"{'fits' if est.fits else 'does not fit'}")


def all_experts_caveats(tg: Target, runner: str) -> list[str]:
    """Where ``runner`` is transformers' own MoE block of a family that passes every token through
    every routed expert (kb/memory/activations.ALL_EXPERTS_FAMILIES: modeling_llama4.py
    Llama4TextMoe, hidden_states.repeat(num_experts, 1) * router_scores) but the estimate sized
    fewer copies (activations.routed_copies: top k on --framework fsdp's token-choice MoE, as
    torchtitan's common/moe.py TokenChoiceTopKRouter routes, or under DeepSpeed's experts at
    EP > 1): the routed experts then compute and keep E / k times what was sized."""
    from shardwise.kb.memory.activations import ALL_EXPERTS_FAMILIES, routed_copies
    m, t, lay = tg.job.model, tg.job.training, tg.layout
    sized = routed_copies(m, t, lay)
    if m.family not in ALL_EXPERTS_FAMILIES or not m.is_moe or sized >= m.experts:
        return []
    return [f"{runner} transformers' MoE block (Llama4TextMoe), which passes every token through all "
            f"{m.experts} routed experts (weighted 0 off its top {m.top_k}); the estimate sized {sized:g} a token "
            f"(--framework {t.framework}'s top-{m.top_k} routing): its routed experts compute and keep "
            f"{m.experts / sized:g}x what was sized, and the step is longer than estimated "
            "(`--framework hf` sizes transformers' block)"]


def with_caveats(lines: list[str], caveats: list[str], comment: str = "#") -> list[str]:
    return lines + [f"{comment} cannot express: {c}" for c in caveats]


def allocator_option(option: str) -> list[str]:
    """The launch script's lines that add one allocator option to whatever the environment already
    sets, under both names: PyTorch reads one variable, not both -- its generic allocator config
    PYTORCH_ALLOC_CONF where it is set and PYTORCH_CUDA_ALLOC_CONF "for backward compatibility ...
    with lower priority" (c10/core/AllocatorConfig.h, torch 2.14), a torch before the generic
    config only the CUDA one: an option in one alone is lost wherever the other is set."""
    return [f"export {v}=${{{v}:+${v},}}{option}" for v in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")]


def allocator_environment(job) -> list[str]:
    """The launch script's lines that give the run the allocator the estimate assumed (expandable
    segments; nothing for PyTorch's default)."""
    if allocator(job.training) != "expandable":
        return []
    return allocator_option("expandable_segments:True")
