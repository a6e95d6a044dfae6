"""`explain --why SETTING`: the rules that bear on it, the best layout with each other value,
and the what-ifs that would change it -- all read from the one Decision (decision/run.py).

The what-ifs are other jobs (memory x1.5 and x0.6, sequence x2 and /2, twice the GPUs, and
expandable segments where the caching allocator was assumed), each decided as `recommend` decides it.
"""
from __future__ import annotations

from shardwise.decision.reasons import SETTINGS, alternatives, reasons, without_costly
from shardwise.decision.text import signed_pct
from shardwise.decision.run import Decision, decide
from shardwise.kb.custom_gpu import named
from shardwise.kb.errors import InputError, NoLayout
from shardwise.kb.fact_schema import SETTING_NAMES, shown_setting
from shardwise.kb.job import Job
from shardwise.kb.memory.overheads import allocator
from shardwise.kb.track_record import catalog_gpu
from shardwise.search.sizing import node_size, with_cluster


def unit(path: str) -> str:
    if path.endswith("_gib"):
        return " GiB"
    if path.endswith("_pct"):
        return " %"
    if path.endswith("tokens_per_s"):
        return " tokens/s"
    if path.endswith("_s"):
        return " s"
    return ""


def shown_value(v):
    """A fact's value as a person reads it: floats to two decimals (the trace keeps them whole),
    true/false in the rule language's words."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return f"{v:.2f}" if isinstance(v, float) else v


def _with_memory(job: Job, gib: float) -> Job:
    """The job on its GPU with ``gib`` of memory, named as --gpu-memory names it (kb/build.py):
    '<catalog name> (<GiB> GiB)'. Rules and the track record read the catalog name before it
    (track_record.catalog_gpu); a refusal's text reads the whole, which kept the job's own
    memory ('on 8 x h100-sxm (24.0 GiB)' for a GPU of 14.4, 'it would fit on 16 x h100-sxm').
    """
    c = job.cluster
    gpu = named(c.gpu.model_copy(update={"memory_gib": gib, "custom": tuple(dict.fromkeys(("gpu_memory",) + c.gpu.custom))}),
                catalog_gpu(c.gpu.name), f"{gib:.1f} GiB")
    return Job(job.model, c.model_copy(update={"gpu": gpu}), job.training)


def variants(job: Job) -> list[tuple[str, Job]]:
    c, t = job.cluster, job.training
    # memory to the 0.1 GiB the text shows, so that --gpu-memory with the number read reruns the
    # what-if as it was decided ('119 GiB' was 119.475, and a refusal beside it named 119.5)
    more, less = round(c.gpu.memory_gib * 1.5, 1), round(c.gpu.memory_gib * 0.6, 1)
    out = [
        (f"memory per GPU were {more:g} GiB", _with_memory(job, more)),
        (f"memory per GPU were {less:g} GiB", _with_memory(job, less)),
        (f"the sequence were {t.seq_len * 2:,} tokens", Job(job.model, c, t.model_copy(update={"seq_len": t.seq_len * 2}))),
    ]
    if t.seq_len >= 256:
        out.append((f"the sequence were {t.seq_len // 2:,} tokens",
                    Job(job.model, c, t.model_copy(update={"seq_len": t.seq_len // 2}))))
    # twice the GPUs off a single whole node: two nodes or more, or part of a node, which
    # kb/build.py records as a node of the job's own size (sizing.node_size: the server's)
    # Part of a node doubles only while it stays inside the node: 6 of an 8-GPU server doubled
    # to 12 is one and a half servers, which the job flags refuse (and Cluster.domain_block fails on)
    node = node_size(c)
    if c.gpus >= 2 * node or 2 * c.gpus <= node:
        out.append((f"there were {c.gpus * 2} GPUs", with_cluster(job, c.gpus * 2)))
    if allocator(t) == "caching":
        # the one what-if a launch line changes: its fragmentation allowance and split peak
        # (kb/memory/overheads.fragmentation_share, estimate._split_candidate)
        out.append(("the run used expandable segments (--allocator expandable)",
                    Job(job.model, c, t.model_copy(update={"allocator": "expandable"}))))
    return out


def what_ifs(job: Job, rules: list, playbook: str | None) -> list[tuple[str, object]]:
    """Each variant with its headline layout (or why none)."""
    out = []
    for text, variant in variants(job):
        try:
            # a what-if sizes its own GPU only; a memory what-if rescores nothing
            d = decide(variant, rules, playbook, other_frameworks=False, reuse_scores=True)
            why = d.nothing_allowed
            if why and text.startswith("memory per GPU") and d.sizing and d.sizing["gpus_that_fit"]:
                # the catalog's GPUs have their real memory, not the hypothetical one: listing
                # them beside "if memory were 48 GiB" read as if the job's own GPU would do
                why = why.replace(d.sizing["summary"], d.sizing["summary_same_gpu"])
            out.append((text, d.layout if d.layout else why))
        except InputError as e:
            out.append((text, InputError(" ".join(str(e).split())[:160])))
    return out


def would_change(setting: str, current, tried: list) -> list[str]:
    out = []
    for text, lay in tried:
        if isinstance(lay, InputError):
            out.append(f"if {text}: the job would be refused ({lay})")
        elif isinstance(lay, str):
            out.append(f"if {text}: no layout would be allowed ({lay})")
        elif getattr(lay, setting) != current:
            out.append(f"{SETTING_NAMES[setting]} would be {shown_setting(getattr(lay, setting))} instead of "
                       f"{shown_setting(current)} if {text}")
    return out


def explain(d: Decision, setting: str, tried: list) -> dict:
    if d.layout is None:
        raise NoLayout(f"no layout to explain: {d.nothing_allowed}")
    current = getattr(d.layout, setting)
    # the what-ifs tried depend on the job (no GPU doubling inside one node, expandable segments
    # only under the caching allocator): an answer that none changes the setting names these, not a fixed list
    return {"setting": setting, "value": current, "layout": d.layout.describe(), "reasons": reasons(d, setting),
            "alternatives": alternatives(d, setting),
            "would_change": without_rules(d, setting) + would_change(setting, current, tried),
            "what_ifs_tried": [text for text, _ in tried]}


def without_rules(d: Decision, setting: str) -> list[str]:
    """A hard rule the answer pays for is a what-if too, the one a review meeting can change:
    the setting's value without it, that layout and its speed."""
    current = getattr(d.layout, setting)
    return [f"{SETTING_NAMES[setting]} would be {shown_setting(w['value'])} instead of {shown_setting(current)} "
            f"without {w['rule']} ({w['where']}: {w['what']}): {w['layout']}, {signed_pct(w['delta_pct'])} tokens/s"
            for w in without_costly(d, setting)]


__all__ = ["SETTINGS", "explain", "what_ifs", "would_change", "without_rules", "unit", "shown_value"]
