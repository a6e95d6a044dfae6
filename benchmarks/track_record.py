"""Write (or check) kb/data/track_record.yaml: each run the step-time and memory estimates are
checked against, with their error on it, so that an answer can say how far its tokens/s and its
peak memory may be from what the job will see (kb/track_record.py).

Run: python benchmarks/track_record.py [--write]. Without --write it prints what differs from
the shipped file and exits 1 if anything does (tests/test_track_record.py runs the same check).
Rerun with --write whenever the step-time model or the calibration data change.

The runs: the published multi-GPU runs of calibration/published_runs.yaml that
benchmarks/throughput.py times, less the ones that did not run the framework they are timed as
or that their source says ran slow (calibration._off_record), and the measured single-GPU
steps through the Hugging Face Trainer (H100, H200) and plain PyTorch loops (H200). The error is
on tokens/s: predicted / measured - 1 (a step time's error e is 1 / (1 + e) - 1 of tokens/s).

Memory: the measured peaks -- the same single-GPU steps (those that fit) and the fresh-process
runs at the out-of-memory boundary, like for like (the estimate less CUDA context and
fragmentation against torch.cuda.max_memory_allocated: calibration._judged), and torchtitan's
published peaks (reserved, read as calibration.torchtitan_peak_rows says). NVIDIA's published
Megatron runs give no peak, so no Megatron-Core run is in it.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibration  # noqa: E402

OUT = calibration.ROOT / "kb" / "data" / "track_record.yaml"

HEADER = """\
# The estimates' track record: each measured or published training run the step-time model
# (step_time) and the memory estimate (memory) are checked against, with the error on it:
# predicted / measured - 1 in percent, of tokens/s (positive reads fast) and of the peak
# (positive reads high; metric: what the run measured, compared like for like).
# kb/track_record.py reads it to give an answer's likely range of tokens/s and peak memory from
# the runs most like the job. ran: published layouts that ran (so fit) and no peak was given
# for, with whether the estimate fits them (fits). Written by `python benchmarks/track_record.py --write` from
# benchmarks/calibration/ (published_runs.yaml, whose rows name their sources;
# h100_hf_trainer_steps.jsonl, h200_hf_trainer_steps.jsonl and h200_torch_loops.jsonl, measured
# as calibration/README.md says; h200_fresh_boundary.jsonl): not edited by hand, and
# tests/test_track_record.py fails when the estimates no longer give these errors.
#   run: the published run's id, or the measured row's label; source: published | measured
#   model: the catalog model the run trained (null: an architecture of the row's own)
#   framework, moe, gpu (catalog name), gpus: what it ran on
"""


def published() -> list[dict]:
    return [{"run": r["id"], "source": "published", "model": r["model"], "framework": r["framework"],
             "moe": r["moe"], "gpu": r["gpu_name"], "gpus": r["gpus"], "error_pct": round(100 * r["error"], 1)}
            for r in calibration.throughput_rows() if not r["off_record"]]


def measured() -> list[dict]:
    rows = calibration.trainer_rows("h100") + calibration.trainer_rows("h200") + calibration.loop_rows()
    return [{"run": r["id"], "source": "measured", "model": None, "framework": "hf", "moe": r["moe"],
             "gpu": r["gpu_name"], "gpus": 1, "error_pct": round(100 * (1 / (1 + r["step_error"]) - 1), 1)}
            for r in rows if r.get("step_error") is not None]


def measured_memory() -> list[dict]:
    rows = calibration.trainer_rows("h100") + calibration.trainer_rows("h200") + calibration.loop_rows() \
        + calibration.fresh_rows()
    return [{"run": r["id"], "source": "measured", "model": None, "framework": "hf", "moe": r["moe"],
             "gpu": r["gpu_name"], "gpus": 1, "metric": "allocated", "error_pct": round(100 * r["error"], 1)}
            for r in rows if r.get("error") is not None]


def published_memory() -> list[dict]:
    return [{"run": r["id"], "source": "published", "model": r["model"], "framework": "fsdp", "moe": False,
             "gpu": r["gpu_name"], "gpus": r["gpus"], "metric": "reserved", "error_pct": round(100 * r["error"], 1)}
            for r in calibration.torchtitan_peak_rows()]


def ran() -> list[dict]:
    """NVIDIA's published Megatron-Core layouts, which ran and so fit, with whether the estimate
    fits them; those whose recipe saves memory in ways the row does not record (per-module
    recompute, CPU offloading: calibration._unmodelled) are left out, as the layout rebuilt from
    the row is not the one that ran, and so are the runs the step-time record leaves out
    (calibration._off_record: Paxml's, which did not run Megatron-Core)."""
    return [{"run": r["id"], "source": "published", "model": r["model"], "framework": "megatron", "moe": r["moe"],
             "gpu": r["gpu_name"], "gpus": r["gpus"], "fits": bool(r["fits"])}
            for r in calibration.published_megatron_memory_rows() if not (r["unmodelled"] or r["off_record"])]


def _flow(d: dict) -> str:
    def one(v):
        if v is None:
            return "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return repr(v)
    return "{" + ", ".join(f"{k}: {one(v)}" for k, v in d.items()) + "}"


def text() -> str:
    rows = sorted(published(), key=lambda r: r["run"]) + sorted(measured(), key=lambda r: r["run"])
    mem = sorted(published_memory(), key=lambda r: r["run"]) + sorted(measured_memory(), key=lambda r: r["run"])
    return (HEADER + "step_time:\n" + "".join(f"  - {_flow(r)}\n" for r in rows)
            + "memory:\n" + "".join(f"  - {_flow(r)}\n" for r in mem)
            + "ran:\n" + "".join(f"  - {_flow(r)}\n" for r in sorted(ran(), key=lambda r: r["run"])))


def main() -> int:
    new = text()
    if "--write" in sys.argv:
        OUT.write_text(new)
        print(f"wrote {OUT.relative_to(calibration.ROOT)}: {new.count(chr(10) + '  - ')} runs")
        return 0
    old = OUT.read_text() if OUT.exists() else ""
    if old == new:
        print(f"{OUT.relative_to(calibration.ROOT)} is up to date")
        return 0
    gone = set(old.splitlines()) - set(new.splitlines())
    added = set(new.splitlines()) - set(old.splitlines())
    for line in sorted(gone):
        print(f"- {line}")
    for line in sorted(added):
        print(f"+ {line}")
    print("out of date: python benchmarks/track_record.py --write")
    return 1


if __name__ == "__main__":
    sys.exit(main())
