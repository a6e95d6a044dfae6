"""Accuracy of the estimators against benchmarks/calibration. Run: python benchmarks/accuracy.py

Prints the error of every row and the median and maximum per data set.
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibration  # noqa: E402


def summarize(name: str, rows: list[dict], unit: str = "B") -> None:
    print(f"\n== {name} ({len(rows)} rows)")
    for r in rows:
        flag = f"   [{r['artefact']}]" if r.get("artefact") else ""
        m, p = r["measured"], r["predicted"]
        ms, ps = (f"{m / 2**20:10.1f} MiB", f"{p / 2**20:10.1f} MiB") if unit == "B" else (f"{m:8.1f} GiB", f"{p:8.1f} GiB")
        print(f"  {r['id']:<48} measured {ms}  predicted {ps}  error {100 * r['error']:+6.1f}%{flag}")
    errs = [abs(r["error"]) for r in rows]
    clean = [abs(r["error"]) for r in rows if not r.get("artefact")]
    print(f"  median |error| {100 * statistics.median(errs):.2f}%   max {100 * max(errs):.2f}%"
          f"   (without flagged rows: median {100 * statistics.median(clean):.2f}%, max {100 * max(clean):.2f}%)")


def main() -> None:
    summarize("per-layer activations, h100_hf_activations.jsonl", calibration.activation_rows())
    summarize("logits and loss, h100_hf_logits.jsonl", calibration.logits_rows())
    summarize("whole-step peak, torchtitan rows of published_runs.yaml", calibration.torchtitan_peak_rows(), unit="GiB")
    summarize("one layer per transformers family, CPU, cpu_family_saved_tensors.jsonl", calibration.family_saved_rows())
    print("\n== what LoRA changes in a layer's saved tensors, cpu_lora_saved_tensors.jsonl (bytes per token)")
    lora = calibration.lora_saved_rows()
    for r in lora:
        print(f"  {r['id']:<40} measured {r['measured']:+8.1f}  predicted {r['predicted']:+8.1f}"
              f"  error {r['error']:+.3f} h" + (f"   [{r['artefact']}]" if r["artefact"] else ""))
    print(f"  max |error| {max(abs(r['error']) for r in lora if not r['artefact']):.3f} bytes per token per"
          " hidden unit (flagged rows left out)")
    print("\n== PEFT's LoRA on one transformers 5 MoE layer, cpu_peft_experts.jsonl (kept and backward: bytes"
          " that do not grow with the tokens; adapters, 4-bit: parameters)")
    for r in calibration.peft_expert_rows():
        bytes_ = r["what"] in ("kept", "backward")
        unit, name = (2**20, "MiB") if bytes_ else (1e6, "M")
        print(f"  {r['id']:<40} measured {r['measured'] / unit:9.3f} {name}"
              f"  predicted {r['predicted'] / unit:9.3f} {name}"
              + (f"  error {100 * r['error']:+6.2f}%" if r["predicted"] else
                 f"  ({100 * r['error']:.2f}% of a merge of its experts: none made)"))
    print("\n== one transformers 5 MoE layer per token, cpu_peft_experts.jsonl (full: bytes a token;"
          " LoRA: its change per token, in h)")
    moe = calibration.moe_layer_token_rows()
    for r in moe:
        err = f"{100 * r['error']:+6.2f}%" if r["what"] == "full" else f"{r['error']:+.3f} h"
        print(f"  {r['id']:<40} measured {r['measured']:+9.1f}  predicted {r['predicted']:+9.1f}  error {err}"
              + (f"   [{r['artefact']}]" if r["artefact"] else ""))
    clean = [r for r in moe if not r["artefact"]]
    print(f"  max |error| without flagged rows: full {100 * max(abs(r['error']) for r in clean if r['what'] == 'full'):.2f}%,"
          f" LoRA {max(abs(r['error']) for r in clean if r['what'] == 'lora'):.3f} h")
    print("\n== whole steps on one GPU, like for like (row by row: python benchmarks/trainer_steps.py)")
    for name, rows in (("Trainer, H100, h100_hf_trainer_steps.jsonl", calibration.trainer_rows("h100")),
                       ("Trainer, H200, h200_hf_trainer_steps.jsonl", calibration.trainer_rows("h200")),
                       ("plain loops, H200, h200_torch_loops.jsonl", calibration.loop_rows())):
        for part, sel in (("fit", [r for r in rows if not r["held_out"]]), ("held out", [r for r in rows if r["held_out"]])):
            errs = [abs(r["error"]) for r in sel if r["error"] is not None]
            wrong = sum(r["fits_measured"] != r["fits_predicted"] for r in sel)
            print(f"  {name:<46} {part:<9} {len(errs):3} ran  median |error| {100 * statistics.median(errs):5.2f}%"
                  f"  max {100 * max(errs):5.2f}%   fits/OOM wrong {wrong} of {len(sel)}")
    print("\n== the out-of-memory boundary, one fresh process a run, H200, h200_fresh_boundary.jsonl"
          " (like for like; split: the caching allocator's split peak)")
    fresh = calibration.fresh_rows()
    for r in fresh:
        meas = f"{r['measured_gib']:6.1f}" if r["measured_gib"] else "   OOM"
        print(f"  {r['id']:<26} measured {meas}  estimate {r['predicted_gib']:6.1f} of {r['capacity_gib']:.1f}"
              f"  fits {'yes' if r['fits_predicted'] else 'no ':<3} split {r['split_peak_gib']:6.1f}"
              + ("  WRONG" if r["fits_measured"] != r["fits_predicted"] else "")
              + ("  (warned)" if r["split_flagged"] and not r["fits_measured"] else ""))
    for kind in ("expandable", "caching"):
        sel = [r for r in fresh if r["allocator"] == kind]
        wrong = [r for r in sel if r["fits_measured"] != r["fits_predicted"]]
        print(f"  {kind:<10} fits/OOM wrong {len(wrong)} of {len(sel)}; of the runs that ran out though the estimate "
              f"fits, warned: {sum(r['split_flagged'] for r in wrong if not r['fits_measured'])} of "
              f"{sum(not r['fits_measured'] for r in wrong)}")


if __name__ == "__main__":
    main()
