"""Estimated peak memory of the published Megatron layouts (benchmarks/calibration/published_runs.yaml):
they all ran, so each should fit. Prints the ones that do not and a summary per GPU.

    python benchmarks/published_memory.py
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibration  # noqa: E402


def main() -> None:
    rows = calibration.published_megatron_memory_rows()
    print(f"== published Megatron layouts: {len(rows)} runs; estimated peak / capacity where it reads above 100%")
    for r in sorted(rows, key=lambda r: r["peak_gib"] / r["capacity_gib"]):
        if not r["fits"]:
            why = f"  [{r['unmodelled']}]" if r["unmodelled"] else ""
            if r["modules_peak_gib"] is not None:
                why += f" {100 * r['modules_peak_gib'] / r['capacity_gib']:.1f}% with --recompute modules"
            print(f"  {r['id']:<52} {100 * r['peak_gib'] / r['capacity_gib']:6.1f}%  act {r['activations_gib']:6.1f} GiB"
                  f"  {r['layout']}{why}")
    by = defaultdict(list)
    for r in rows:
        by[r["gpu"]].append(r)
    print(f"  {'GPU':<6} {'runs':>5} {'fit':>5} {'over':>5} {'unmodelled':>11}")
    for g in sorted(by):
        rs = by[g]
        print(f"  {g:<6} {len(rs):5} {sum(r['fits'] for r in rs):5} {sum(not r['fits'] for r in rs):5}"
              f" {sum(bool(r['unmodelled']) for r in rs):11}")
    print(f"  {'all':<6} {len(rows):5} {sum(r['fits'] for r in rows):5} {sum(not r['fits'] for r in rows):5}"
          f" {sum(bool(r['unmodelled']) for r in rows):11}")
    known = [r for r in rows if not r["unmodelled"]]
    print(f"  runs whose recipe the rows record: {sum(r['fits'] for r in known)} of {len(known)} fit")


if __name__ == "__main__":
    main()
