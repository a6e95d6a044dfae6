"""Whole training steps on one GPU: the Hugging Face Trainer on an H100 and on an H200
(benchmarks/calibration/h1?0_hf_trainer_steps.jsonl) and plain PyTorch loops on an H200 at and
around the out-of-memory boundary (h200_torch_loops.jsonl). Memory like for like (the estimate
less CUDA context and fragmentation, against torch.cuda.max_memory_allocated), fits/OOM, and
step time, row by row, with the rows a fit may use and the held-out rows
(calibration.trainer_holdout, calibration.loop_holdout) summarised apart.

    python benchmarks/trainer_steps.py
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibration  # noqa: E402


def _summary(label: str, rows: list[dict], key: str) -> str:
    errs = [abs(r[key]) for r in rows if r.get(key) is not None]
    if not errs:
        return f"  {label}: no rows"
    return f"  {label:<22} rows {len(errs):2}  median |error| {100 * statistics.median(errs):5.1f}%  max {100 * max(errs):5.1f}%"


def table(title: str, rows: list[dict]) -> None:
    print(f"== {title}, {len(rows)} rows (H = held out of any fit)")
    print(f"  {'row':<66} {'meas GiB':>8} {'pred GiB':>8} {'error':>7}  {'fits m/p':>8}  {'phase':<15}"
          f" {'step m':>7} {'step p':>7} {'error':>7}")
    for r in rows:
        mem = (f"{r['measured_gib']:8.2f} {r['predicted_gib']:8.2f} {100 * r['error']:+6.1f}%" if r["error"] is not None
               else f"{'OOM':>8} {r['predicted_gib']:8.2f} {'':>7}")
        fit = f"{'Y' if r['fits_measured'] else 'N'}/{'Y' if r['fits_predicted'] else 'N'}"
        wrong = " WRONG" if r["fits_measured"] != r["fits_predicted"] else ""
        step = (f"{r['step_measured']:7.3f} {r['step_predicted']:7.3f} {100 * r['step_error']:+6.1f}%"
                if "step_error" in r else "")
        print(f"  {('H ' if r['held_out'] else '  ') + r['id']:<66} {mem}  {fit:>8}{wrong:6} {r['phase']:<15} {step}")
    for part, sel in (("fit rows", [r for r in rows if not r["held_out"]]), ("held-out rows", [r for r in rows if r["held_out"]]),
                      ("all rows", rows)):
        print(f"-- {part}")
        print(_summary("memory", sel, "error"))
        print(_summary("step time", sel, "step_error"))
        wrong = [r["id"].split()[0] + (f" ({100 * r['measured_gib'] / r['capacity_gib']:.0f}% of capacity)"
                                       if r["measured_gib"] else "") for r in sel if r["fits_measured"] != r["fits_predicted"]]
        print(f"  fits/OOM wrong on {len(wrong)} of {len(sel)}: {', '.join(wrong)}")
    print()


def main() -> None:
    table("whole Trainer steps on an H100 (h100_hf_trainer_steps.jsonl)", calibration.trainer_rows("h100"))
    table("the same Trainer steps on an H200 (h200_hf_trainer_steps.jsonl)", calibration.trainer_rows("h200"))
    table("plain PyTorch loops on an H200, at and around the OOM boundary (h200_torch_loops.jsonl)",
          calibration.loop_rows())


if __name__ == "__main__":
    main()
