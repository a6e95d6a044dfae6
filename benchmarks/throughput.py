"""Step-time model against the published runs of benchmarks/calibration/published_runs.yaml.

Run: python benchmarks/throughput.py [-v]. Compares tokens/s per GPU (model TFLOP/s per GPU
where a row gives only that), prints per-row error with -v, and median / 90th percentile of
|error| by GPU type and precision, and for H100 BF16, H100 FP8 and all rows.
"""
from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibration  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def summary(rows: list[dict]) -> dict:
    groups = defaultdict(list)
    for r in rows:
        groups[(r["gpu"], r["precision"])].append(abs(r["error"]))
        groups[("all", "all")].append(abs(r["error"]))
        if r["moe"]:
            groups[("moe", "all")].append(abs(r["error"]))
    return {k: (len(v), statistics.median(v), pct(v, 0.9)) for k, v in groups.items()}


def main() -> None:
    layer = calibration.layer_compute_rows()
    errs = sorted(abs(r["error"]) for r in layer)
    print(f"per-layer compute, h100_hf_layer_compute.jsonl: {len(layer)} rows, median |err| "
          f"{100 * statistics.median(errs):.1f}%, max {100 * errs[-1]:.1f}%")
    rows = calibration.throughput_rows()
    if "-v" in sys.argv:
        for r in sorted(rows, key=lambda r: r["id"]):
            print(f"{r['id']:<52} {r['layout']:<60} meas {r['measured']:9.1f} pred {r['predicted']:9.1f} "
                  f"{r['what']:<11} {100 * r['error']:+6.1f}%")
    print(f"\n{'group':<20} {'rows':>5} {'median |err|':>13} {'p90 |err|':>10}")
    for (g, p), (n, med, p90) in sorted(summary(rows).items()):
        print(f"{g + ' ' + p:<20} {n:>5} {100 * med:12.1f}% {100 * p90:9.1f}%")


if __name__ == "__main__":
    main()
