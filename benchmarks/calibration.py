"""Compare the estimators with ../shared/calibration: one function per data set, each
returning rows of (id, measured, predicted, error). Used by benchmarks/accuracy.py (prints)
and by tests/test_accuracy.py (asserts the targets)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from shardwise.kb.build import build_job
from shardwise.kb.layout import Layout
from shardwise.kb.memory import activations as act
from shardwise.kb.memory import estimate_memory
from shardwise.kb.memory.logits import logits_bytes
from shardwise.kb.schema import ModelSpec, TrainingSpec

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION = Path(os.environ.get("SHARDWISE_CALIBRATION", ROOT.parent / "shared" / "calibration"))

# A measurement artefact, not physics: this row is 16 MiB (exactly one s x F bf16 tensor) below
# the 58.07 h that the same model shows at every other size, including mbs=2 at the same seq.
KNOWN_ARTEFACTS = {("llama3.2-1b", 1024, 1, False, "sdpa"):
                   "16 MiB below the 58.07 h of every other size of this model (allocator artefact)"}


def _jsonl(name: str) -> list[dict]:
    return [json.loads(line) for line in (CALIBRATION / name).read_text().splitlines() if line.strip()]


def _row_model(r: dict, vocab: int = 256) -> ModelSpec:
    return ModelSpec(name=r.get("model", "calib"), layers=3, hidden=r["h"], ffn=r.get("ffn", 4 * r["h"]),
                     heads=r.get("heads", 32), kv_heads=r.get("kv_heads", 8), head_dim=r.get("head_dim", 0),
                     vocab=vocab)


def activation_rows() -> list[dict]:
    """Per-layer bytes kept for backward, transformers profile, against every measured row."""
    out = []
    for r in _jsonl("h100_hf_activations.jsonl"):
        if "saved_per_layer_bytes" not in r:
            continue
        m = _row_model(r)
        t = TrainingSpec(seq_len=r["seq"], framework="hf", attention=r["attn"])
        lay = Layout(mbs=r["mbs"], recompute="full" if r["ckpt"] else "none")
        pred = act.tokens_local(t, lay) * act.layer_bytes_per_token(m, t, lay, False, r["seq"])
        meas = r["saved_per_layer_bytes"]
        key = (r["model"], r["seq"], r["mbs"], r["ckpt"], r["attn"])
        out.append({"id": f"{r['model']} s={r['seq']} b={r['mbs']} ckpt={r['ckpt']} {r['attn']}",
                    "measured": meas, "predicted": pred, "error": pred / meas - 1,
                    "artefact": KNOWN_ARTEFACTS.get(key)})
    return out


def logits_rows() -> list[dict]:
    out = []
    for r in _jsonl("h100_hf_logits.jsonl"):
        m = ModelSpec(name="calib", layers=1, hidden=r["h"], ffn=8192, heads=32, kv_heads=8, vocab=r["vocab"])
        t = TrainingSpec(seq_len=r["seq"], framework="hf")
        saved, peak = logits_bytes(m, t, Layout(mbs=r["mbs"]))
        for what, meas, pred in (("kept", r["saved_extra_bytes"], saved), ("peak", r["peak_extra_bytes"], peak)):
            out.append({"id": f"V={r['vocab']} s={r['seq']} {what}", "measured": meas, "predicted": pred,
                        "error": pred / meas - 1, "artefact": None})
    return out


def published_runs() -> list[dict]:
    return yaml.safe_load((CALIBRATION / "published_runs.yaml").read_text())


_CATALOG_NAME = {"llama3-8b": "llama-3-8b", "llama3.1-405b": "llama-3.1-405b", "llama3-70b": "llama-3-70b"}


def torchtitan_peak_rows() -> list[dict]:
    """Whole-step peak (reserved) of the torchtitan rows: FSDP2 (+TP/PP/CP), H100 96 GB."""
    out = []
    for r in published_runs():
        if r["peak_memory_gib"] is None or r["source_family"] != "torchtitan_benchmarks":
            continue
        notes = r["notes"]
        local = int(notes.split("local batch size")[1].split(";")[0])
        pp = r["pp"] or 1
        mbs = 1 if pp > 1 else local          # torchtitan: PP micro-batch 1 (default), else local batch
        ga = local // mbs if pp > 1 else 1
        precision = "fp8" if "float8" in r["precision"].lower() else "bf16"
        job = build_job(model=_CATALOG_NAME[r["model_key"]], gpu="h100-sxm", gpu_memory=r["gpu_memory_gb"],
                        gpus=r["num_gpus"], seq_len=r["seq_len"], framework="fsdp", precision=precision)
        vp = 2 if "Interleaved" in notes else 1
        recompute = "selective" if "selective" in r["activation_recompute"] else r["activation_recompute"]
        lay = Layout(tp=r["tp"], pp=pp, vp=vp, dp=r["dp"], cp=r["cp"] or 1, zero=3, sp=r["tp"] > 1, mbs=mbs,
                     grad_accum=ga, recompute=recompute)
        est = estimate_memory(job, lay)
        out.append({"id": r["id"], "measured": r["peak_memory_gib"], "predicted": est.peak_gib,
                    "error": est.peak_gib / r["peak_memory_gib"] - 1,
                    "artefact": "torch.compile fuses ops and keeps less" if "compile" in notes and r["tp"] == 1 else None,
                    "fits_measured": True, "fits_predicted": est.fits})
    return out
