"""How far an answer's tokens/s and peak memory may be from what the job will see: the
estimates' errors on the measured and published runs most like the job (kb/data/track_record.yaml,
written by benchmarks/track_record.py; its step_time and memory sections).

The runs like a job are the first of these groups that holds enough of them:
    1. the same architecture under the same framework (same_architecture: a catalog model's own
       runs, and those of a model that differs only in its position encoding's reach);
    2. the same framework, dense or MoE as the job, on the same GPU;
    3. the same framework, dense or MoE as the job, on any GPU.
Enough is MIN_RUNS, and the range is the group's 10th to 90th percentile of error. A run's
error e is predicted / measured - 1, so the tokens/s the job is likely to run at are the
estimate / (1 + e) over that range (the peak's: memory_checked). Where no group has enough runs
(DeepSpeed: none in the calibration data; MoE under FSDP or the Hugging Face Trainer: few or
none) the answer says so instead: the framework's runs of the other kind say nothing of the
experts' all-to-all and grouped GEMMs. No Megatron-Core run has a measured peak in the data
(NVIDIA's published runs give none): its memory is checked by the published layouts like the
job that ran, so fit -- how many of them the estimate fits (the record's ran section,
layouts_that_ran).

The groups follow what moves the error on the published runs (benchmarks/throughput.py: a
model's own kernels, dense against MoE, the GPU); nothing is fitted. MIN_RUNS is chosen: from
ten runs the 10th and 90th percentiles leave out at least one run at each end, so one odd run
does not set the range. A model's own runs are the closest evidence, but not when few: the
smallest to largest of n runs holds the next one with probability (n - 1) / (n + 1), 50% for
three runs, and reaches the 80% a 10th-to-90th range claims only at nine.
"""
from __future__ import annotations

from functools import lru_cache

from . import catalog
from .package_data import package_yaml

MIN_RUNS = 10

FRAMEWORK_RUNS = {"megatron": "Megatron-Core", "fsdp": "torchtitan and other FSDP2",
                  "hf": "Hugging Face Trainer and plain PyTorch", "deepspeed": "DeepSpeed"}


# what each section of the record checks, as the answer names it
ESTIMATE = {"step_time": "the step-time model", "memory": "the memory estimate", "ran": "the memory estimate"}


def runs(estimate: str = "step_time") -> list[dict]:
    return package_yaml("track_record")[estimate]


def percentile(xs: list[float], q: float) -> float:
    """Nearest-rank percentile: the value at rank round(q * (n - 1)) of the sorted ``xs``
    (benchmarks/throughput.py reads its 90th percentile of |error| with it too)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def middle(xs: list[float], q: float) -> tuple[float, float]:
    """The values at the ``q`` and ``1 - q`` percentiles, leaving out as many values at each
    end: the upper one is the lower one of the negated values (round() halves to even, so
    ranks 2.5 and 22.5 of 26 values would leave out 2 below but 3 above)."""
    return percentile(xs, q), -percentile([-x for x in xs], q)


def _gpus_named(group: list[dict], gpu: str) -> str:
    """The GPUs the runs ran on, and that none ran on the job's ``gpu`` where none did: a model's
    runs on B200s and H100s say less of an L40S or an MI300X than the line would otherwise let on.
    The job's own GPU is named first where runs had it, so that a cut list ('and 2 more') never
    hides it; one name past four is named, as 'and 1 more' is no shorter."""
    names = sorted({r["gpu"] for r in group})
    if gpu in names:
        names = [gpu] + [n for n in names if n != gpu]
    cut = 4 if len(names) > 5 else len(names)
    shown = ", ".join(names[:cut]) + (f" and {len(names) - cut} more" if len(names) > cut else "")
    return shown if gpu in names else f"{shown}; none on {gpu}"


def _who(group: list[dict], framework: str) -> str:
    sources = sorted({r["source"] for r in group})
    return f"{len(group)} {' and '.join(sources)} {FRAMEWORK_RUNS.get(framework, framework)} runs"


# ModelSpec fields that do not change what a step runs: names and sources, and the position
# encoding's reach (RoPE's base, its context-extension factors and the trained length; YaRN is
# kept apart, as Megatron-Core runs it unfused: kb/perf/unfused.py). Llama 3.1 70B is Llama 3
# 70B's architecture with a longer reach; DeepSeek-R1 is DeepSeek-V3's.
NOT_ARCHITECTURE = {"name", "source", "inferred", "reading_notes", "max_positions", "rope_theta",
                    "rope_scaling", "rope_factor", "rope_params", "norm_eps"}


def architecture(model) -> str:
    """What a model runs, as one comparable string: every ModelSpec field but NOT_ARCHITECTURE."""
    d = {k: v for k, v in model.model_dump().items() if k not in NOT_ARCHITECTURE}
    d["yarn"] = model.rope_scaling == "yarn"
    return repr(sorted(d.items()))


@lru_cache(maxsize=None)
def _run_architecture(name: str) -> str:
    return architecture(catalog.model(name))


def same_architecture(run: dict, model) -> bool:
    """Whether a run trained ``model``'s architecture: the catalog model it names has the same
    architecture, so an --hf-config of Llama 3.1 70B has Llama 3 70B's runs, and a Llama in a
    folder named gpt-oss-120b has not GPT-OSS's."""
    return _same(run, architecture(model))


def _same(run: dict, arch: str) -> bool:
    return run["model"] is not None and _run_architecture(run["model"]) == arch


def catalog_gpu(name: str) -> str:
    """The catalog GPU a job's GPU is: build_job names a GPU given --gpu-memory '<name> (<GiB>
    GiB)' (kb/build.py), the same silicon with another memory size, whose runs are its own."""
    return name.split(" (", 1)[0]


def like_runs(job, estimate: str = "step_time") -> tuple[list[dict], str]:
    """The runs most like ``job`` (the groups of the module docstring) and what they are, or no
    runs and why none; ``estimate``: the record's section, step_time, memory or ran."""
    fw, moe, gpu = job.training.framework, job.model.is_moe, catalog_gpu(job.cluster.gpu.name)
    if estimate == "step_time" and job.cluster.gpu.custom_speed:
        # a GPU given its own TFLOP/s or bandwidth (kb/custom_gpu.py) is not the catalog GPU it
        # is built on for speed: no run on that one ran at its figures, and the range says so
        gpu = job.cluster.gpu.name
    mine = [r for r in runs(estimate) if r["framework"] == fw]
    kind = "MoE" if moe else "dense"
    arch = architecture(job.model)
    same_model = [r for r in mine if _same(r, arch)]
    if len(same_model) >= MIN_RUNS:
        named = sorted({r["model"] for r in same_model})
        of = " and ".join(named) + ("" if named == [job.model.name] else ", the same architecture")
        return same_model, f"{_who(same_model, fw)} of {of} (on {_gpus_named(same_model, gpu)})"
    same_gpu = [r for r in mine if r["moe"] == moe and r["gpu"] == gpu]
    if len(same_gpu) >= MIN_RUNS:
        return same_gpu, f"{_who(same_gpu, fw)} of {kind} models on {gpu}"
    same_kind = [r for r in mine if r["moe"] == moe]
    if len(same_kind) >= MIN_RUNS:
        return same_kind, f"{_who(same_kind, fw)} of {kind} models (on {_gpus_named(same_kind, gpu)})"
    measured = "speed" if estimate == "step_time" else "peak"
    has = (f"{ESTIMATE[estimate]} has {len(mine) or 'no'} {FRAMEWORK_RUNS.get(fw, fw)} runs with a measured "
           f"{measured} in its calibration data")
    if not mine:
        return [], has + " to be checked against"
    return [], f"{has}, {len(same_kind) or 'none'} of them of {kind} models; a range needs {MIN_RUNS}"


def hours_rounded(h: float) -> float:
    """A time to train in hours as the JSON gives it: to 0.01 h, or under an hour to 0.0001 h
    (0.36 s), so a short run is not rounded to 0 (cli/output.hours shows it so)."""
    return round(h, 2 if h >= 1 else 4)


def checked(job, tokens_per_s: float, hours: float | None) -> dict:
    """The likely range of the job's tokens/s (and time to train) from the runs like it, with
    what they are; ``runs`` 0 and ``unchecked`` where there are none, or where no run checks the
    job's GPU (GPUSpec.speed_checked_on empty: a catalog GPU without runs, or one at the user's own
    figures), whose tokens/s the answer calls an upper bound: the other GPUs' reading is then
    said, but as no range for this one."""
    group, what = like_runs(job)
    if not group:
        return {"runs": 0, "unchecked": what}
    lo, hi = middle([r["error_pct"] for r in group], 0.1)
    if not job.cluster.gpu.speed_checked_on:
        # no run on this GPU (or at the user's own figures): its kernels may not reach the
        # efficiencies those runs were timed at, so the answer warns that its tokens/s is an upper
        # bound (warn.unchecked-gpu-speed); a likely range reaching above it would contradict that
        return {"runs": 0, "unchecked": f"no measured or published run on {job.cluster.gpu.name} checks the step "
                                        f"time; against {what}, it read {read_as(lo, hi)}, a range that holds only "
                                        f"where the GPU reaches the efficiencies measured on theirs"}
    if job.cluster.gpus > 1 and max(r["gpus"] for r in group) == 1:
        what += f", one GPU each, so their error leaves out the communication between this job's {job.cluster.gpus} GPUs"
    out = {"runs": len(group), "against": what,
           "basis": "10th to 90th percentile",
           "error_pct": [lo, hi],
           "tokens_per_s": [round(tokens_per_s / (1 + hi / 100), 1), round(tokens_per_s / (1 + lo / 100), 1)]}
    if hours is not None:
        out["time_to_train_h"] = [hours_rounded(h) for h in (hours * (1 + lo / 100), hours * (1 + hi / 100))]
    return out


def like_for_like_gib(est, metric: str) -> float:
    """The part of an estimate's peak its runs' error was measured on (benchmarks/calibration.py):
    for an allocated peak the estimate less CUDA context and fragmentation (calibration._judged);
    for a reserved one what the allocator reserves with room to spare, the whole peak with the
    expandable segments' give-back read as kept (calibration.torchtitan_peak_rows,
    overheads.reserved_with_room_gib)."""
    from .memory.overheads import reserved_with_room_gib
    bd = est.breakdown_gib
    if metric == "reserved":
        return reserved_with_room_gib(est.peak_gib, bd["fragmentation"], est.allocator)
    return est.peak_gib - bd["cuda_context"] - bd["fragmentation"]


def memory_checked(job, est) -> dict:
    """The likely range of the job's peak memory from the measured peaks like it (the record's
    memory section), with what they are; ``runs`` 0 and ``unchecked`` where there are none, or
    where the job spans GPUs and every run was on one: its sharded states and communication
    buffers were in none of them, so their error says nothing of its peak. The range moves the
    like-for-like part (like_for_like_gib) and keeps the rest: (part) / (1 + e) + (peak - part);
    ``past_capacity``: whether the estimate fits but the likely range's top passes the GPU's
    memory (one that does not fit says so already)."""
    group, what = like_runs(job, "memory")
    if not group:
        return dict({"runs": 0, "unchecked": what}, **layouts_that_ran(job))
    lo, hi = middle([r["error_pct"] for r in group], 0.1)
    if job.cluster.gpus > 1 and max(r["gpus"] for r in group) == 1:
        words = read_as(lo, hi, "high", "low")
        return {"runs": 0, "unchecked": f"the {what} ran on one GPU each (the estimate read {words} there); none "
                                        f"sharded its states or held the communication buffers of {job.cluster.gpus} GPUs"}
    metric = " and ".join(sorted({r["metric"] for r in group}))
    part = like_for_like_gib(est, metric)
    rest = est.peak_gib - part
    peak = [round(part / (1 + hi / 100) + rest, 2), round(part / (1 + lo / 100) + rest, 2)]
    return {"runs": len(group), "against": what, "basis": "10th to 90th percentile",
            "metric": metric, "error_pct": [lo, hi], "peak_gib": peak,
            "past_capacity": bool(est.fits and peak[1] > est.capacity_gib)}


def layouts_that_ran(job) -> dict:
    """Where no measured peak is like the job: the published layouts like it that ran -- so fit --
    and how many of them the estimate fits (the record's ran section: NVIDIA's Megatron-Core
    runs), as {"ran": {"runs", "fit", "against"}}; {} where there are fewer than MIN_RUNS. A
    verdict, not a size: it says the estimate does not refuse what ran, not how close it is."""
    group, what = like_runs(job, "ran")
    if not group:
        return {}
    return {"ran": {"runs": len(group), "fit": sum(r["fits"] for r in group), "against": what}}


def memory_checked_line(c: dict) -> str:
    """The answer's line for ``memory_checked``'s dict."""
    if not c["runs"]:
        ran = c.get("ran")
        if not ran:
            return f"memory not checked: {c['unchecked']}"
        # 'fits' alone read as 'matches'; and a fit is all they show: an estimate that reads low fits them too
        fit = "all of them" if ran["fit"] == ran["runs"] else f"{ran['fit']} of them"
        return (f"memory checked: by layouts that ran, for fit only -- the {ran['against']} give no measured "
                f"peak, but each ran, and the estimate fits {fit} in memory; how close its peak is, they cannot say")
    lo, hi = c["error_pct"]
    words = read_as(lo, hi, "high", "low")
    peak = c["peak_gib"]
    return (f"memory checked: against {c['against']}, the estimate read {words} ({c['basis']}, like for like: "
            f"the peak {c['metric']}): likely {peak[0]:,.1f} to {peak[1]:,.1f} GiB at the peak"
            + (", past the GPU's memory at the top: it may not fit" if c["past_capacity"] else ""))


def read_as(lo: float, hi: float, up: str = "fast", down: str = "slow") -> str:
    """An error range in words: 'from 3.1% slow to 8.0% fast', '44.4% to 57.2% fast', and
    '0.0% to 5.0% fast' (an end at no error takes the other end's word); a peak's reads ``up``
    'high' and ``down`` 'low'."""
    if lo >= 0:
        return f"{lo:.1f}% to {hi:.1f}% {up}"
    if hi <= 0:
        return f"{abs(hi):.1f}% to {abs(lo):.1f}% {down}"     # abs: -0.0 would print '-0.0%'
    return f"from {abs(lo):.1f}% {down} to {hi:.1f}% {up}"


def checked_line(c: dict) -> str:
    """The answer's line for ``checked``'s dict."""
    if not c["runs"]:
        return f"speed not checked: {c['unchecked']}"
    lo, hi = c["error_pct"]
    tps = c["tokens_per_s"]
    line = (f"speed checked: against {c['against']}, the step-time model read {read_as(lo, hi)} ({c['basis']}): "
            f"likely {tps[0]:,.0f} to {tps[1]:,.0f} tokens/s")
    if "time_to_train_h" in c:
        h = c["time_to_train_h"]
        # as the headline reads them: hours, or under an hour minutes (a short run read '0.0 to 0.0 h')
        line += (f", {h[0]:,.1f} to {h[1]:,.1f} h to train" if h[0] >= 1 else
                 f", {h[0] * 60:,.1f} to {h[1] * 60:,.1f} min to train")
    return line
