"""How kb/data/gpus.yaml's sustained_share of the Blackwell GPUs was set, and how well it holds.

Run: python benchmarks/sustained_share.py. Prints, from benchmarks/calibration/published_runs.yaml:

1. Identical jobs on two GPU types (same model, container, GPU count, layout, batch, precision,
   sequence): the ratio of their measured tokens/s per GPU. GB300 and GB200 have the same
   datasheet peaks, yet every such pair runs faster on the GB300.
2. For B200 and GB200, the share of the datasheet peak at which the step-time model's median
   |error| over that GPU's dense rows is smallest (a 0.01 grid; MoE rows are left out because
   their fixed per-layer times, not the GPU's arithmetic, dominate many of them), and the same
   fit with each model held out in turn, with the held-out model's signed error.
3. The model's signed median error per GPU type with the catalog's shares and with none.

The GB300's share is not fitted to its own rows: it is the GB200's times the median ratio of
(1). Rows whose source names conditions the model does not know (benchmarks/calibration.py
_unmodelled_speed) are left out throughout.
"""
from __future__ import annotations

import dataclasses
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibration  # noqa: E402

GRID = [round(0.70 + 0.01 * i, 2) for i in range(61)]


def _job_key(r: dict) -> tuple:
    return (r["model_key"], r["software_version"], r["num_gpus"], r["tp"], r["pp"], r["cp"], r["vp"], r["ep"],
            r["micro_batch_size"], r["global_batch_size"], r["precision"], r["seq_len"])


def identical_job_ratios(a: str, b: str) -> list[tuple[float, str, str]]:
    """(tokens/s on a / tokens/s on b, model, container) for every job run alike on both."""
    by_job = defaultdict(dict)
    for r in calibration.published_runs():
        if r["run_kind"] == "pretrain_benchmark" and r["tokens_per_sec_per_gpu"] and not calibration._unmodelled_speed(r):
            by_job[_job_key(r)][r["gpu_type"]] = r
    return sorted((v[a]["tokens_per_sec_per_gpu"] / v[b]["tokens_per_sec_per_gpu"], k[0], k[1])
                  for k, v in by_job.items() if a in v and b in v)


def _error(case: dict, share: float | None) -> float:
    """Signed error of the predicted speed with the GPU's share replaced (None: as catalogued)."""
    from shardwise.kb.perf import step_time
    job = case["job"]
    if share is not None:
        gpu = job.cluster.gpu.model_copy(update={"sustained_share": share})
        job = dataclasses.replace(job, cluster=job.cluster.model_copy(update={"gpu": gpu}))
    measured, predicted, _ = calibration.compared(case, step_time(job, case["layout"]))
    return predicted / measured - 1


def best_share(cases: list[dict]) -> float:
    return min(GRID, key=lambda s: statistics.median(abs(_error(c, s)) for c in cases))


def main() -> None:
    cases = [c for c in calibration.throughput_cases() if not calibration._unmodelled_speed(c["row"])]
    ratios = identical_job_ratios("GB300", "GB200")
    print(f"identical jobs, GB300 / GB200 tokens/s per GPU ({len(ratios)} pairs): median "
          f"{statistics.median(x[0] for x in ratios):.3f}")
    for ratio, model, container in ratios:
        print(f"  {ratio:.3f}  {model:<16} {container}")
    for gpu in ("B200", "GB200"):
        dense = [c for c in cases if c["row"]["gpu_type"] == gpu and not c["job"].model.is_moe]
        print(f"\n{gpu}: {len(dense)} dense rows, best share {best_share(dense):.2f}")
        for model in sorted({c["row"]["model_key"] for c in dense}):
            train = [c for c in dense if c["row"]["model_key"] != model]
            test = [c for c in dense if c["row"]["model_key"] == model]
            s = best_share(train)
            held = statistics.median(_error(c, s) for c in test)
            full = statistics.median(_error(c, 1.0) for c in test)
            print(f"  without {model:<16} share {s:.2f}: {model} ({len(test)} rows) {100 * held:+6.1f}% "
                  f"(at the datasheet peak {100 * full:+6.1f}%)")
    print(f"\n{'GPU':<7} {'rows':>4} {'signed median error':>20} {'at the datasheet peak':>22}")
    for gpu in sorted({c["row"]["gpu_type"] for c in cases}):
        sub = [c for c in cases if c["row"]["gpu_type"] == gpu]
        print(f"{gpu:<7} {len(sub):>4} {100 * statistics.median(_error(c, None) for c in sub):+19.1f}% "
              f"{100 * statistics.median(_error(c, 1.0) for c in sub):+21.1f}%")


if __name__ == "__main__":
    main()
