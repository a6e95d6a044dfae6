"""Published peak memory that no constant was fitted to (benchmarks/calibration/published_peaks.yaml):
each row's job run through `shardwise memory ... --format json` in-process, compared like for like
with what the source measured, and what the run did that shardwise does not model.

    python benchmarks/published_peaks.py

Like for like (the row's `metric`): torch's peak active or allocated bytes against the estimate
less CUDA context and fragmentation (as benchmarks/trainer_steps.py); torch's peak reserved
against the estimate less CUDA context; nvidia-smi's reading against the whole estimate.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import yaml
from click.testing import CliRunner

from shardwise.cli.main import cli
from shardwise.kb.memory.overheads import reserved_with_room_gib

DATA = Path(__file__).resolve().parent / "calibration" / "published_peaks.yaml"
# components of the estimate that the metric does not see
_OUTSIDE = {"active": ("cuda_context", "fragmentation"), "allocated": ("cuda_context", "fragmentation"),
            "reserved": ("cuda_context",), "device": ()}


def figures() -> list[dict]:
    return yaml.safe_load(DATA.read_text())


def estimate(args: list[str]) -> dict:
    """The `memory` object of `shardwise memory <args> --format json`."""
    res = CliRunner().invoke(cli, ["memory", *args, "--format", "json"])
    if res.exit_code != 0:
        raise RuntimeError(f"shardwise memory {' '.join(args)}: {res.output.strip()}")
    return json.loads(res.output)["memory"]


def rows() -> list[dict]:
    out = []
    for f in figures():
        mem = estimate(f["args"])
        bd = mem["breakdown_gib"]
        pred = mem["peak_gib"] - sum(bd[k] for k in _OUTSIDE[f["metric"]])
        if f["metric"] in ("reserved", "device"):
            # reserved memory of a run with room to spare (kb/memory/overheads.reserved_with_room_gib)
            pred = reserved_with_room_gib(pred, bd["fragmentation"], mem["allocator"])
        out.append({"id": f["id"], "metric": f["metric"], "measured": f["measured_gib"], "predicted": pred,
                    "error": pred / f["measured_gib"] - 1, "phase": mem["peak_phase"],
                    "unmodelled": f["unmodelled"], "effect": f.get("unmodelled_effect"), "breakdown": bd,
                    "ladder": f.get("ladder")})
    return out


def _ladder(rs: list[dict]) -> None:
    """Consecutive rows of one source table that each add one technique: the measured and the
    predicted change per step. A step shardwise does not model predicts no change; its measured
    change is that technique's share of the gap."""
    steps = [(a, b) for a, b in zip(rs, rs[1:]) if a["ladder"] and a["ladder"] == b["ladder"]]
    if not steps:
        return
    print("== steps of one table (each adds one technique): measured and predicted change, GiB")
    widened = {True: 0.0, False: 0.0}       # by unmodelled steps, by modelled ones
    for a, b in steps:
        added = [u for u in b["unmodelled"] if u not in a["unmodelled"]]
        dm, dp = b["measured"] - a["measured"], b["predicted"] - a["predicted"]
        widened[bool(added)] += dp - dm
        print(f"  {b['id']:<34} measured {dm:+6.1f}  predicted {dp:+6.1f}"
              f"  {'unmodelled: ' + ', '.join(added) if added else ''}")
    first, last = steps[0][0], steps[-1][1]
    print(f"  gap (predicted - measured) {first['predicted'] - first['measured']:+.1f} GiB at {first['id']},"
          f" {last['predicted'] - last['measured']:+.1f} at {last['id']}: the unmodelled steps moved it"
          f" {widened[True]:+.1f}, the modelled ones {widened[False]:+.1f}\n")


def main() -> None:
    rs = rows()
    print(f"== published peak memory per GPU, {len(rs)} figures (benchmarks/calibration/published_peaks.yaml)")
    print(f"  {'figure':<36} {'metric':<9} {'meas':>6} {'pred':>6} {'error':>7}  {'phase':<15} unmodelled")
    for r in rs:
        print(f"  {r['id']:<36} {r['metric']:<9} {r['measured']:6.1f} {r['predicted']:6.1f} {100 * r['error']:+6.1f}%"
              f"  {r['phase']:<15} {'; '.join(r['unmodelled']) or '-'}")
    print()
    for label, effect in (("nothing unmodelled", None), ("unmodelled lowers it", "lowers"),
                          ("unmodelled raises it", "raises"), ("unmodelled both ways", "mixed")):
        sel = [r for r in rs if r["effect"] == effect]
        errs = [r["error"] for r in sel]
        print(f"  {label:<22} rows {len(sel):2}  median error {100 * statistics.median(errs):+6.1f}%"
              f"  median |error| {100 * statistics.median(map(abs, errs)):5.1f}%"
              f"  over-estimated {sum(e > 0 for e in errs)} of {len(sel)}")
    gaps = [abs(r["predicted"] - r["measured"]) for r in rs]
    on_unmodelled = sum(g for g, r in zip(gaps, rs) if r["unmodelled"])
    print(f"  |gap| in all rows {sum(gaps):.1f} GiB, {100 * on_unmodelled / sum(gaps):.0f}% of it in rows whose runs did"
          " something shardwise does not model\n")
    _ladder(rs)


if __name__ == "__main__":
    main()
