"""Compare the estimators with benchmarks/calibration: one function per data set, each
returning rows of (id, measured, predicted, error). Used by benchmarks/accuracy.py (prints)
and by tests/test_accuracy.py (asserts the targets)."""
from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import yaml

from shardwise.kb.build import build_job
from shardwise.kb.frameworks import megatron_ep_overlap_share
from shardwise.kb.layout import Layout
from shardwise.kb.memory import activations as act
from shardwise.kb.memory import estimate_memory
from shardwise.kb.memory.logits import HELD_OUTPUT_PER_LOGIT, logits_bytes
from shardwise.kb.memory.overheads import reserved_with_room_gib
from shardwise.kb.schema import ModelSpec, TrainingSpec

ROOT = Path(__file__).resolve().parents[1]
# the project's own copy (PROVENANCE.md there); SHARDWISE_CALIBRATION points at another folder of the same files
CALIBRATION = Path(os.environ.get("SHARDWISE_CALIBRATION", ROOT / "benchmarks" / "calibration"))

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
        # measure.py loads the model in bf16: the pure-bf16 recipe (no fp32 residual stream)
        t = TrainingSpec(seq_len=r["seq"], framework="hf", attention=r["attn"], precision="pure-bf16")
        lay = Layout(mbs=r["mbs"], recompute="full" if r["ckpt"] else "none")
        pred = act.tokens_local(t, lay) * act.layer_bytes_per_token(m, t, lay, False, r["seq"])
        meas = r["saved_per_layer_bytes"]
        key = (r["model"], r["seq"], r["mbs"], r["ckpt"], r["attn"])
        out.append({"id": f"{r['model']} s={r['seq']} b={r['mbs']} ckpt={r['ckpt']} {r['attn']}",
                    "measured": meas, "predicted": pred, "error": pred / meas - 1,
                    "artefact": KNOWN_ARTEFACTS.get(key)})
    return out


def lora_saved_rows() -> list[dict]:
    """What PEFT's LoRA changes in a layer's saved tensors (cpu_lora_saved_tensors.jsonl, taken by
    measure_saved_tensors.py): the measured difference from the same layer fully trained in
    bf16, against the estimate's per-layer bytes of the two jobs. fp32 adapters are the
    Trainer's (hf, ZeRO-0), bf16 ones the DeepSpeed engine's; the *-dropout modes add PEFT's
    lora_dropout (the fused dropout kernel a GPU runs)."""
    rows = _jsonl("cpu_lora_saved_tensors.jsonl")
    shape = lambda r: tuple(r[k] for k in ("model_type", "hidden", "ffn", "heads", "kv_heads", "lora_rank"))  # noqa: E731
    full = {shape(r): r["saved_bytes_per_token"] for r in rows if r["mode"] == "full"}
    out = []
    for r in rows:
        if r["mode"] == "full":
            continue
        key = shape(r)
        mt = r["model_type"]
        mla = _LORA_MLA if mt == "deepseek_v3" else {}
        m = ModelSpec(name="calib", family=mt, layers=1, hidden=r["hidden"], ffn=r["ffn"], heads=r["heads"],
                      kv_heads=r["kv_heads"], vocab=1024, qk_norm=mt == "qwen3",
                      mlp="geglu" if mt == "gemma" else "swiglu", **mla)
        framework = "deepspeed" if r["mode"].startswith("lora-bf16") else "hf"
        lay = Layout(mbs=1, recompute="none")
        base = TrainingSpec(seq_len=r["seq"], framework=framework, precision="pure-bf16")
        lora = TrainingSpec(seq_len=r["seq"], framework=framework, training="lora", lora_rank=r["lora_rank"],
                            lora_dropout=r.get("lora_dropout", 0.0))
        pred = (act.layer_bytes_per_token(m, lora, lay, False, r["seq"])
                - act.layer_bytes_per_token(m, base, lay, False, r["seq"]))
        meas = r["saved_bytes_per_token"] - full[key]
        out.append({"id": f"{mt} h={key[1]} F={key[2]} heads={key[3]}/{key[4]} r={key[5]} {r['mode']}",
                    "measured": meas, "predicted": pred, "error": (pred - meas) / r["hidden"],
                    "artefact": LORA_CPU_ONLY.get((mt, r["mode"]))})
    return out


# measure_saved_tensors.py's DeepSeek-V3 attention shapes (its MLA dict)
_LORA_MLA = dict(q_lora_rank=192, kv_lora_rank=128, qk_nope_dim=64, qk_rope_dim=32, v_head_dim=64)

# cpu_lora_saved_tensors.jsonl rows whose CPU figure is not what a GPU keeps
_MATH_SDPA = "the CPU's math SDPA (MLA's unequal head sizes) does not keep the attention output a fused kernel saves"
LORA_CPU_ONLY = {
    ("deepseek_v3", "lora"): f"2 h under: {_MATH_SDPA}, so o_proj's fp32 adapter copy replaces it here",
    ("deepseek_v3", "lora-dropout"): f"2 h under: {_MATH_SDPA}, so with dropout nothing keeps o_proj's input here",
    ("deepseek_v3", "lora-bf16-dropout"): f"2 h under: {_MATH_SDPA}, so with dropout nothing keeps o_proj's input here",
}


# cpu_family_saved_tensors.jsonl rows whose CPU figure is not what a GPU keeps
FAMILY_CPU_ONLY = {
    "deepseek_v3": "multi-latent attention's unequal query and value head sizes take the CPU's fp32 math "
                   "SDPA (score matrices kept), not a GPU's fused kernel",
    "phi3": "2 h over: a copy of the attention output before o_proj that the CPU made here (q, k, v are "
            "views of one qkv_proj output) and not for Llama; not measured on a GPU",
    "glm4_moe": "2 h under (bf16 and fp32 weights): a copy of the attention output before o_proj, which "
                "partial RoPE's concatenated query (torch.cat of the rotated and passed halves) leads SDPA to "
                "lay out head-major here; not measured on a GPU, whose kernel output strides decide it",
}


# families whose rotary embedding hands its layers fp32 cos and sin whatever the weights
# (modeling_olmo2.py Olmo2RotaryEmbedding.forward returns them uncast, as modular_olmo3.py's
# Olmo3RotaryEmbedding does; Llama's casts them to the input's dtype)
FP32_ROPE_FAMILIES = ("olmo2", "olmo3")


# families whose layers keep no shared cos and sin, only the fp32 ones each layer builds, which
# the estimate counts per layer (activations.layer_rope_bytes: ERNIE 4.5's interleaved RoPE)
LAYER_ROPE_FAMILIES = ("ernie4_5_moe",)


def rope_bytes(model_type: str, fp32_weights: bool) -> float:
    """Bytes an element of the shared RoPE cos and sin takes in a measured layer."""
    if model_type in LAYER_ROPE_FAMILIES:
        return 0.0
    return 4.0 if fp32_weights or model_type in FP32_ROPE_FAMILIES else 2.0


def rope_width(m, cfg: dict) -> float:
    """Width of the cos and sin a layer multiplies: the rotary part of a head (MLA's rope head
    size; partial_rotary_factor of the head, GLM-4.5's 0.5)."""
    if m.is_mla:
        return m.qk_rope_dim
    return m.hd * float((cfg.get("rope_parameters") or {}).get("partial_rotary_factor", 1.0))


def _layer_from_config(cfg: dict):
    """The ModelSpec the estimate's config.json reader builds from a measured layer's config."""
    import tempfile
    from shardwise.kb.hf_config import read_hf_config
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "config.json"
        path.write_text(json.dumps(dict(cfg, num_hidden_layers=1)))
        return read_hf_config(str(path))


def family_saved_rows() -> list[dict]:
    """One decoder layer of each transformers family (cpu_family_saved_tensors.jsonl, taken by
    measure_family_layers.py), read through the estimate's own config.json reader: the bytes a
    token the layer keeps, against layer_bytes_per_token (the family's attention; pure bf16 for
    the bf16-weight rows, the Trainer's fp32 weights under autocast for the others). The
    measured figure less RoPE's cos and sin (2 x 2 or 4 bytes x head size a token, in the
    weights' dtype), which every layer of a model shares and a one-layer run charges to its
    layer."""
    out = []
    for r in _jsonl("cpu_family_saved_tensors.jsonl"):
        m = _layer_from_config(r["config"])
        fp32 = r.get("weights") == "fp32"
        # fp32 weights under bf16 autocast: the Trainer's recipe without ZeRO (precision bf16)
        t = TrainingSpec(seq_len=r["seq"], framework="hf", precision="bf16" if fp32 else "pure-bf16",
                         attention=r["attention"], training="finetune")
        lay = Layout(mbs=1, recompute="none", zero=0)
        pred = act.layer_bytes_per_token(m, t, lay, m.is_moe, r["seq"])
        rope = 2 * rope_bytes(r["model_type"], fp32) * rope_width(m, r["config"])
        meas = r["saved_bytes_per_token"] - rope
        flag = FAMILY_CPU_ONLY.get(r["model_type"])
        # bytes the layer keeps for its 256 tokens (the figure accuracy.py prints, in MiB)
        out.append({"id": f"{r['model_type']} ({r['attention']}, {'fp32' if fp32 else 'bf16'} weights)",
                    "measured": meas * r["seq"], "predicted": pred * r["seq"],
                    "error": pred / meas - 1, "artefact": flag})
    return out


def dropout_saved_rows() -> list[dict]:
    """What a config.json's dropout adds to one transformers layer's kept bytes a token
    (cpu_dropout_saved_tensors.jsonl, taken by measure_dropout_layers.py through the fused kernel a
    GPU runs): the measured difference between the layer with its dropout at 0.1 and at 0, against
    the same difference of layer_bytes_per_token, each read through the estimate's config.json
    reader (eager attention's mask a score, the residual dropout's masks)."""
    rows = _jsonl("cpu_dropout_saved_tensors.jsonl")
    base = {(r["model_type"], r["attention"], r["weights"]): r for r in rows if not any(r["dropout"].values())}
    out = []
    for r in rows:
        if not any(r["dropout"].values()):
            continue
        r0 = base[(r["model_type"], r["attention"], r["weights"])]
        fp32 = r["weights"] == "fp32"
        t = TrainingSpec(seq_len=r["seq"], framework="hf", precision="bf16" if fp32 else "pure-bf16",
                         attention=r["attention"], training="finetune")
        lay = Layout(mbs=1, recompute="none", zero=0)
        pred = [act.layer_bytes_per_token(m, t, lay, m.is_moe, r["seq"])
                for m in (_layer_from_config(r["config"]), _layer_from_config(r0["config"]))]
        drop = ", ".join(f"{k} {v:g}" for k, v in r["dropout"].items() if v)
        out.append({"id": f"{r['model_type']} ({r['attention']}, {r['weights']} weights, {drop})",
                    "measured": r["saved_bytes_per_token"] - r0["saved_bytes_per_token"],
                    "predicted": pred[0] - pred[1]})
    return out


def peft_expert_rows() -> list[dict]:
    """PEFT's LoRA on one transformers 5 MoE layer (cpu_peft_experts.jsonl, taken by
    measure_peft_experts.py), read through the estimate's config.json reader, with fp32 (the
    Trainer's) and bf16 (DeepSpeed's) adapters. Per family and adapter dtype:

    - kept: what the LoRA layer keeps beyond full fine-tuning that does not grow with the
      tokens (the constant of the LoRA - full difference in saved bytes, fitted through the two
      sequence lengths: attention is the same in both, so its quadratic part cancels), against
      peft_experts.merged_expert_bytes;
    - backward: the constant part of the LoRA layer's backward peak over its end of forward
      (SDPA families, whose tokens' part is linear), against the down projection's merged-weight
      gradient (DOWN_SHARE of the merged weights);
    - adapters: the LoRA parameters PEFT made, against lora_params where adapters are PEFT's;
    - 4-bit: the layer's parameters bitsandbytes stored in 4 bits when QLoRA loaded it, against
      what the estimate quantises (block projections, less the experts that stay bf16)."""
    import tempfile
    from shardwise.kb.hf_config import read_hf_config
    from shardwise.kb.memory import peft_experts as pe
    from shardwise.kb.memory.states import lora_params
    from shardwise.kb.params import layer_params
    data = _jsonl("cpu_peft_experts.jsonl")
    # a dropout changes what grows with the tokens only (moe_layer_token_rows reads those rows)
    rows = {(r["model_type"], r["mode"], r["seq"]): r for r in data if r["mode"] in ("full", "lora", "lora-bf16")}
    out = []
    for (mt, mode, seq), r in sorted(rows.items()):
        if mode == "full" or seq != min(x[2] for x in rows):
            continue
        long = max(x[2] for x in rows)
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "config.json"
            path.write_text(json.dumps(dict(r["config"], num_hidden_layers=1)))
            m = read_hf_config(str(path))
        t = TrainingSpec(seq_len=seq, framework="hf" if mode == "lora" else "deepspeed", training="lora",
                         lora_rank=r["lora_rank"])
        lay = Layout(mbs=1, recompute="none", zero=0)
        merged = pe.merged_expert_bytes(m, t, lay, layer_params(m, True).experts)

        def constant(a, b):      # the part of a (at seq) and b (at long) that does not grow with the tokens
            return a - (b - a) / (long - seq) * seq
        diff = [rows[(mt, mode, s)]["saved_bytes"] - rows[(mt, "full", s)]["saved_bytes"] for s in (seq, long)]
        kept = constant(*diff)
        tag = f"{mt} {'fp32' if mode == 'lora' else 'bf16'} adapters"
        out.append({"id": f"{tag}: kept", "measured": kept, "predicted": float(merged), "what": "kept",
                    "error": float(merged) / kept - 1 if merged else kept / (2.0 * layer_params(m, True).experts),
                    "artefact": None})
        if r["attention"] == "sdpa" and m.family in pe.ADAPTED_EXPERT_FAMILIES and not m.is_mla:
            excess = [rows[(mt, mode, s)]["peak_bytes"] - rows[(mt, mode, s)]["forward_end_bytes"] for s in (seq, long)]
            pred = pe.DOWN_SHARE * 2.0 * layer_params(m, True).experts
            c = constant(*excess)
            out.append({"id": f"{tag}: backward", "measured": c, "predicted": pred, "what": "backward",
                        "error": pred / c - 1, "artefact": None})
        made = sum(r["lora_params"].values())
        out.append({"id": f"{tag}: adapters", "measured": made, "predicted": lora_params(m, r["lora_rank"], t),
                    "what": "adapters", "error": lora_params(m, r["lora_rank"], t) / made - 1, "artefact": None})
    for r in data:
        if r["mode"] != "qlora-storage":
            continue
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "config.json"
            path.write_text(json.dumps(dict(r["config"], num_hidden_layers=1)))
            m = read_hf_config(str(path))
        t = TrainingSpec(seq_len=256, framework="hf", training="qlora")
        lp = layer_params(m, True)
        pred = lp.tp_sharded + (0 if pe.experts_stay_bf16(m, t) else lp.experts)
        out.append({"id": f"{r['model_type']} QLoRA: 4-bit", "measured": r["nf4_params"], "predicted": pred,
                    "what": "4-bit", "error": pred / r["nf4_params"] - 1, "artefact": None})
    return out


def moe_layer_token_rows() -> list[dict]:
    """What one transformers 5 MoE layer keeps per token (cpu_peft_experts.jsonl, taken by
    measure_peft_experts.py), read through the estimate's config.json reader: full fine-tuning's
    bytes a token at each measured length (the eager attention's square term shows between
    them), and what PEFT's LoRA changes per token -- the slope of LoRA less full fine-tuning from
    the shorter length to the longer, which leaves out what does not grow with the tokens (the
    merged experts, peft_expert_rows) -- with fp32 (the Trainer's) and bf16 (DeepSpeed's)
    adapters. Errors in bytes per token per hidden unit for LoRA, relative for full."""
    import tempfile
    from shardwise.kb.hf_config import read_hf_config
    data = _jsonl("cpu_peft_experts.jsonl")
    rows = {(r["model_type"], r["mode"], r["seq"]): r for r in data if r["mode"] != "qlora-storage"}
    seqs = sorted({k[2] for k in rows})
    lay = Layout(mbs=1, recompute="none", zero=0)
    out = []
    for mt in sorted({k[0] for k in rows}):
        r = rows[(mt, "full", seqs[0])]
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "config.json"
            path.write_text(json.dumps(dict(r["config"], num_hidden_layers=1)))
            m = read_hf_config(str(path))
        for seq in seqs:
            t = TrainingSpec(seq_len=seq, framework="hf", precision="pure-bf16", attention=r["attention"])
            pred = act.layer_bytes_per_token(m, t, lay, True, seq)
            meas = rows[(mt, "full", seq)]["saved_bytes"] / seq
            out.append({"id": f"{mt} full, {seq} tokens ({r['attention']})", "what": "full", "measured": meas,
                        "predicted": pred, "error": pred / meas - 1, "artefact": FAMILY_CPU_ONLY.get(mt)})

        def slope(mode):
            a, b = (rows[(mt, mode, s)]["saved_bytes"] for s in (seqs[0], seqs[-1]))
            return (b - a) / (seqs[-1] - seqs[0])
        for mode, fw in (("lora", "hf"), ("lora-bf16", "deepspeed"), ("lora-dropout", "hf"),
                         ("lora-bf16-dropout", "deepspeed")):
            if (mt, mode, seqs[0]) not in rows:
                continue
            base = TrainingSpec(seq_len=seqs[0], framework=fw, precision="pure-bf16", attention=r["attention"])
            lora = TrainingSpec(seq_len=seqs[0], framework=fw, training="lora", lora_rank=r["lora_rank"],
                                attention=r["attention"], lora_dropout=rows[(mt, mode, seqs[0])].get("lora_dropout", 0.0))
            pred = (act.layer_bytes_per_token(m, lora, lay, True, seqs[0])
                    - act.layer_bytes_per_token(m, base, lay, True, seqs[0]))
            meas = slope(mode) - slope("full")
            dtype = "bf16" if mode.startswith("lora-bf16") else "fp32"
            dropout = ", dropout" if mode.endswith("-dropout") else ""
            out.append({"id": f"{mt} {dtype} adapters{dropout}, per token", "what": "lora",
                        "measured": meas, "predicted": pred, "error": (pred - meas) / m.hidden,
                        "artefact": LORA_CPU_ONLY.get((mt, mode))})
    return out


def logits_rows() -> list[dict]:
    """measure.py's logits rows: a one-layer bf16 model with the vocabulary V less the same
    model with 256 entries, after the forward (kept) and at the fwd+bwd peak. Its script holds
    the model output (the bf16 logits) through backward, which a training step does not; and a
    difference of two peaks is not the logits' peak where the small model peaks elsewhere (in a
    layer's backward), so the peak is predicted the same way: the whole estimate of each model,
    like for like, subtracted."""
    from shardwise.kb.job import Job
    out = []
    cluster = _one_gpu("h100-sxm", TRAINER_CAPACITY_GIB)
    for r in _jsonl("h100_hf_logits.jsonl"):
        t = TrainingSpec(seq_len=r["seq"], framework="hf", precision="pure-bf16", training="finetune")
        lay = Layout(mbs=r["mbs"])
        held = HELD_OUTPUT_PER_LOGIT * r["seq"] * r["mbs"] * r["vocab"]
        models = {vocab: ModelSpec(name="calib", layers=1, hidden=r["h"], ffn=8192, heads=32, kv_heads=8, head_dim=64,
                                   vocab=vocab) for vocab in (r["vocab"], 256)}
        alloc = {}
        for vocab, m in models.items():
            est = estimate_memory(Job(model=m, cluster=cluster, training=t), lay)
            bd = est.breakdown_gib
            # above the model, as the script reads it (no optimizer ever ran there)
            alloc[vocab] = (est.peak_gib - bd["cuda_context"] - bd["fragmentation"] - bd["weights"]
                            - bd["optimizer"] - bd["master_weights"]) * 2 ** 30
        saved = logits_bytes(models[r["vocab"]], t, lay)[0] + held
        peak = alloc[r["vocab"]] - alloc[256] + held
        for what, meas, pred in (("kept", r["saved_extra_bytes"], saved), ("peak", r["peak_extra_bytes"], peak)):
            out.append({"id": f"V={r['vocab']} s={r['seq']} {what}", "measured": meas, "predicted": pred,
                        "error": pred / meas - 1, "artefact": None})
    return out


def published_runs() -> list[dict]:
    return yaml.safe_load((CALIBRATION / "published_runs.yaml").read_text())


_CATALOG_NAME = {"llama3-8b": "llama-3-8b", "llama3.1-405b": "llama-3.1-405b", "llama3-70b": "llama-3-70b"}


def torchtitan_batching(r: dict) -> tuple[int, int, int]:
    """(micro-batch, micro-batches per step, stages per rank) of a torchtitan benchmark row, from
    its local batch and schedule.

    torchtitan at 9dec370 (the benchmarks' commit) has no gradient accumulation: train.py runs
    one forward and backward of the whole local batch per step. With pipelining, the schedule
    splits the local batch into pipeline_parallel_microbatches, whose default is the pipeline
    degree (torchtitan/parallelisms/pipeline_llama.py: `job_config.experimental.
    pipeline_parallel_microbatches or parallel_dims.pp`); the benchmark does not set it. An
    interleaved schedule (PipelineScheduleMulti) places two stages on each rank by default
    (pipelining_utils.py generate_split_points: num_stages_per_rank = 2)."""
    local = int(r["notes"].split("local batch size")[1].split(";")[0])
    pp = r["pp"] or 1
    vp = 2 if "interleaved" in r["notes"].lower() else 1
    return (local // pp, pp, vp) if pp > 1 else (local, 1, 1)


def torchtitan_peak_rows() -> list[dict]:
    """Whole-step peak (reserved) of the torchtitan rows: FSDP2 (+TP/PP/CP), H100 96 GB. The rows
    are reserved memory of runs with room to spare, which torchtitan launches with expandable
    segments: read as overheads.reserved_with_room_gib says (their 1% allowance is what they hold
    near capacity, where they give the rest back before an allocation fails)."""
    out = []
    for r in published_runs():
        if r["peak_memory_gib"] is None or r["source_family"] != "torchtitan_benchmarks":
            continue
        notes = r["notes"]
        pp = r["pp"] or 1
        mbs, ga, vp = torchtitan_batching(r)
        precision = "fp8" if "float8" in r["precision"].lower() else "bf16"
        # the December 2024 torchtitan (9dec370) computed the loss on the whole output: no
        # ChunkedLossWrapper, which its 0.3 recipes use (kb/memory/logits.loss_chunks)
        job = build_job(model=_CATALOG_NAME[r["model_key"]], gpu=_row_gpu(r), gpu_memory=r["gpu_memory_gb"],
                        gpus=r["num_gpus"], seq_len=r["seq_len"], framework="fsdp", precision=precision,
                        loss_chunks=1)
        lay = Layout(tp=r["tp"], pp=pp, vp=vp, dp=r["dp"], cp=r["cp"] or 1, zero=3, sp=r["tp"] > 1, mbs=mbs,
                     grad_accum=ga, recompute=_recompute(r))
        est = estimate_memory(job, lay)
        pred = reserved_with_room_gib(est.peak_gib, est.breakdown_gib["fragmentation"], est.allocator)
        out.append({"id": r["id"], "model": _MODEL.get(r["model_key"]), "gpu_name": _row_gpu(r), "gpus": r["num_gpus"],
                    "measured": r["peak_memory_gib"], "predicted": pred,
                    "error": pred / r["peak_memory_gib"] - 1,
                    "artefact": "torch.compile fuses ops and keeps less" if "compile" in notes and r["tp"] == 1 else None,
                    "fits_measured": True, "fits_predicted": est.fits})
    return out


# --- throughput: published runs --------------------------------------------------------------

_GPU = {"H100": "h100-sxm", "A100": "a100-80gb", "H800": "h800", "B200": "b200", "B300": "b300",
        "GB200": "gb200", "GB300": "gb300"}
_MODEL = {"llama3-8b": "llama-3-8b", "llama3-70b": "llama-3-70b", "llama3.1-405b": "llama-3.1-405b",
          "qwen3-30b-a3b": "qwen3-30b-a3b", "qwen3-235b-a22b": "qwen3-235b-a22b", "deepseek-v3": "deepseek-v3",
          "mixtral-8x22b": "mixtral-8x22b", "gpt3-175b": "gpt-3-175b", "falcon-180b": "falcon-180b",
          "gpt-oss-120b": "gpt-oss-120b"}
# Architectures given only in the rows: GPT-style (LayerNorm, non-gated MLP: GELU for GPT-3,
# squared ReLU for Nemotron-4 -- both two matrices), vocabularies from the NeMo configs.
_FAMILY_VOCAB = {"gpt3-5b": 50304, "nemotron4-15b": 256000, "nemotron4-340b": 256000}


def row_model(r: dict):
    from shardwise.kb import catalog
    if r["model_key"] in _MODEL:
        return catalog.model(_MODEL[r["model_key"]])
    a = r.get("architecture") or {}
    if not all(a.get(k) for k in ("layers", "hidden", "heads")) or a["layers"] < 8:
        return None
    key = r["model_key"]
    gpt_style = key.startswith(("gpt3", "nemotron4", "megatron-gpt"))
    moe = {}
    if a.get("moe_experts"):
        moe = dict(experts=a["moe_experts"], top_k=a["moe_topk"], expert_ffn=a.get("moe_ffn_hidden") or a.get("ffn_hidden"),
                   shared_experts=a.get("shared_experts") or 0)
    return ModelSpec(name=key, layers=a["layers"], hidden=a["hidden"], ffn=a.get("ffn_hidden") or 4 * a["hidden"],
                     heads=a["heads"], kv_heads=a.get("kv_heads") or a["heads"], head_dim=a.get("head_dim") or 0,
                     vocab=a.get("vocab") or _FAMILY_VOCAB.get(key, 51200),
                     norm="layernorm" if gpt_style else "rmsnorm", mlp="gelu" if gpt_style else "swiglu", **moe)


def _precision(p) -> str:
    p = str(p or "").lower()
    return "fp8" if ("fp8" in p or "float8" in p) else "bf16"


def _framework(r) -> str:
    f = r["framework"].lower()
    return "fsdp" if ("torchtitan" in f or "olmo" in f or "automodel" in f) else "megatron"


def _power_capped(r: dict) -> bool:
    """The row ran on torchtitan's Grand Teton H100s: 96 GB HBM2e at 500 W, as the benchmark's
    Hardware section states."""
    return "hbm2e at 500w" in (r.get("notes") or "").lower()


def _row_gpu(r: dict) -> str:
    """Catalog name of the GPU a row ran on; the power-capped Grand Teton H100s have their own."""
    if _power_capped(r):
        return "h100-sxm-96gb-500w"
    return _GPU[r["gpu_type"]]


def _attention_kernel(r: dict) -> str:
    """The attention kernel a row ran. torchtitan's December 2024 benchmarks call
    F.scaled_dot_product_attention (torchtitan 9dec370 models/llama/model.py) on a torch nightly
    of 2024-12-23, whose SDPA tries the flash backend -- FlashAttention-2 -- first on Hopper
    (cuDNN attention was made opt-in by pytorch/pytorch#138522 after the 2.5 bugs, and became
    the default again only with the cuDNN bundled in torch 2.11: sdp_utils.cpp
    check_prefer_cudnn_attention); with CP, torchtitan's train context pins SDPA to the flash
    and efficient backends (torchtitan 9dec370 utils.py get_train_context). Every other row is
    Megatron-Core with Transformer Engine's cuDNN fused attention ("flash")."""
    return "flash2" if r.get("source_family") == "torchtitan_benchmarks" else "flash"


# The MoE recipes that run full-iteration CUDA graphs (--cuda-graphs full-iteration) with MXFP8,
# from the first NeMo container that shipped them, 26.06, which carries Megatron-Bridge 0.5.0
# (docs/releases/software-versions.md; the 06/16/2026 news item of the README at v0.6.0: "the
# NeMo 26.06 training stack that integrates full-iteration CUDA graphs, HybridEP/router
# optimizations, all-to-all overlap, MXFP8 attention"). v0.5.0's scripts/performance/configs set
# cuda_graph_impl="full_iteration" in DEEPSEEK_V3_PRETRAIN_CONFIG_{GB200,GB300}_FP8_MX_V1,
# QWEN3_235B_A22B_PRETRAIN_CONFIG_{GB200,GB300}_FP8_MX_V2, QWEN3_30B_A3B_PRETRAIN_CONFIG_{GB200,
# GB300,B300}_FP8_MX_V1 and GPT_OSS_120B_PRETRAIN_CONFIG_{GB200,GB300}_FP8_MX_V2; v0.4.2
# (26.04.01) sets it in no MoE config.
FULL_ITERATION_GRAPHS = {("deepseek-v3", "GB200"), ("deepseek-v3", "GB300"), ("qwen3-235b-a22b", "GB200"),
                         ("qwen3-235b-a22b", "GB300"), ("qwen3-30b-a3b", "GB200"), ("qwen3-30b-a3b", "GB300"),
                         ("qwen3-30b-a3b", "B300"), ("gpt-oss-120b", "GB200"), ("gpt-oss-120b", "GB300")}


def _cuda_graphs(r: dict) -> str:
    """The CUDA graphs a row's recipe ran: full-iteration for the MXFP8 MoE recipes of
    FULL_ITERATION_GRAPHS from the NeMo 26.06 container on, none otherwise (the step time has no
    term a dense model's graphs would remove)."""
    import re
    version = re.search(r"container (\d+)\.(\d+)", str(r.get("software_version") or ""))
    newer = version is not None and (int(version.group(1)), int(version.group(2))) >= (26, 6)
    mxfp8 = "mxfp8" in str(r.get("precision") or "").lower()
    return "full-iteration" if newer and mxfp8 and (r["model_key"], r["gpu_type"]) in FULL_ITERATION_GRAPHS else "none"


# Layers whose activations NVIDIA's Megatron-FSDP Llama recipes offload to host memory
# (cpu_offloading_num_layers), by (model, GPU, precision, micro-batch): Megatron-Bridge
# scripts/performance/configs/llama/llama3_workload_base_configs.py at c8327cfc2^ (the V1 and V2
# presets agree), before the presets moved to src/megatron/bridge/perf_recipes. A row at another
# micro-batch ran another preset, whose count is not published: it stays unmodelled.
RECIPE_OFFLOAD = {("llama3-70b", "GB300", "bf16", 2): 30, ("llama3-70b", "GB300", "fp8", 2): 20,
                  ("llama3-70b", "GB200", "bf16", 1): 20, ("llama3-70b", "GB200", "fp8", 2): 40,
                  ("llama3-70b", "B200", "fp8", 1): 5}


def throughput_cases() -> list[dict]:
    """Every full-model published row with a layout we can rebuild, as (job, layout, measured)."""
    from shardwise.kb.job import Job
    from shardwise.kb import catalog
    from shardwise.kb.schema import ClusterSpec
    cases = []
    for r in published_runs():
        notes = (r.get("notes") or "").lower()
        if "proxy" in notes or r["run_kind"] != "pretrain_benchmark":
            continue
        m = row_model(r)
        meas_tps, meas_tf = r["tokens_per_sec_per_gpu"], r["model_tflops_per_gpu"]
        if m is None or not r["num_gpus"] or not r["seq_len"] or r["gpu_type"] not in _GPU or not (meas_tps or meas_tf):
            continue
        tp, pp, cp = r["tp"] or 1, r["pp"] or 1, r["cp"] or 1
        dp = r["dp"] or r["num_gpus"] // (tp * pp * cp)
        if tp * pp * cp * dp != r["num_gpus"] or not r["global_batch_size"]:
            continue
        mbs, vp = r["micro_batch_size"] or 1, r["vp"] or 1
        if r["source_family"] == "torchtitan_benchmarks" and "local batch size" in (r["notes"] or ""):
            mbs, _, vp = torchtitan_batching(r)
        if r["global_batch_size"] % (mbs * dp):
            continue
        g = catalog.gpu(_row_gpu(r))
        if r.get("gpu_memory_gb"):
            g = g.model_copy(update={"memory_gib": float(r["gpu_memory_gb"])})
        gpn = r["gpus_per_node"] or g.gpus_per_node
        inter = catalog.link("infiniband-xdr" if r["gpu_type"] in ("GB300", "B300") else
                             "infiniband-hdr" if r["gpu_type"] == "A100" else "infiniband-ndr")
        cluster = ClusterSpec(gpu=g, gpus=r["num_gpus"], gpus_per_node=min(gpn, r["num_gpus"]),
                              intra=catalog.link(g.intra_link), inter=inter)
        sharding = str(r["sharding"] or "").lower()
        fw = _framework(r)
        zero = 3 if ("fsdp" in sharding and "fsdp=0" not in sharding) else 1
        shard = 0
        if zero == 3:
            import re
            size = re.search(r"(?:group size|shard_degree=|fsdp=|column = )\s*(\d+)", sharding)
            # "FSDP=1" in NVIDIA's tables is the on/off column, not a shard group of one
            if size and int(size.group(1)) > 1 and (dp * cp) % int(size.group(1)) == 0:
                shard = int(size.group(1))
            elif "fsdp+dp" in sharding:
                # "FSDP+DP" with the shard size not stated: HSDP, sharded inside a node and
                # replicated across nodes (an assumption; full sharding over the NICs could not
                # reach the published speed)
                shard = min(dp * cp, gpn)
        ep = r["ep"] or 1
        if m.is_moe and (m.experts % ep or (tp * cp * dp) % ep):
            continue
        rc = _recompute(r)
        t = TrainingSpec(seq_len=r["seq_len"], precision=_precision(r["precision"]), framework=fw,
                         attention=_attention_kernel(r), cuda_graphs=_cuda_graphs(r))
        try:
            lay = Layout(tp=tp, pp=pp, vp=vp, dp=dp, cp=cp, ep=ep if m.is_moe else 1, zero=zero, shard=shard,
                         sp=tp > 1 and r.get("sequence_parallel", True), mbs=mbs,
                         grad_accum=r["global_batch_size"] // (mbs * dp), recompute=rc)
        except Exception:
            continue
        if pp == 1 and rc == "none" and zero == 3:
            lay = lay.with_(offload=RECIPE_OFFLOAD.get((r["model_key"], r["gpu_type"], t.precision, mbs), 0))
        cases.append({"row": r, "job": Job(model=m, cluster=cluster, training=t), "layout": lay,
                      "measured_tps": meas_tps, "measured_tflops": meas_tf})
    return cases


def _recompute(r: dict) -> str:
    """The layout's recompute mode for a row's activation_recompute text. Paxml's policy
    SAVE_QKV_OUT_PROJ saves only the attention's input and output projections and recomputes
    the rest of the layer's forward -- the MLP GEMMs, norms and attention, about three quarters
    of it for GPT-3 175B, where "full" recomputes all of it and "selective" only the attention:
    taken as "full", which overstates that row's recompute by about a quarter of a forward."""
    rc = str(r["activation_recompute"] or "none").lower()
    if rc.startswith("full") or "save_qkv_out_proj" in rc:
        return "full"
    if rc.startswith("modules"):
        return "modules"
    return "selective" if "selective" in rc else "none"


def _unprofiled_framework(r: dict) -> bool:
    """The row ran a framework no profile of kb/data/frameworks.yaml describes: Paxml on JAX/XLA
    (the loader times it with the Megatron-Core profile)."""
    return "paxml" in r["framework"].lower()


def _shard_group_unpublished(r: dict) -> bool:
    """The row says FSDP but not over how many ranks it shards ("FSDP=?"): the loader guesses."""
    return "fsdp=?" in str(r.get("sharding") or "").lower()


def _unmodelled_speed(r: dict) -> str | None:
    """What the row's own text says it ran under that the step-time model does not know, or None."""
    notes = (r.get("notes") or "").lower()
    if _power_capped(r):
        return "power-capped GPUs (500 W; the catalog assumes a peak midway between H100 NVL and SXM)"
    if "performance regression" in notes:
        return "a performance regression the source names"
    if _shard_group_unpublished(r):
        return "FSDP shard group not published"
    if _unprofiled_framework(r):
        return "Paxml on JAX/XLA, a framework without a profile (timed as Megatron-Core)"
    return None


def _off_record(r: dict) -> str | None:
    """Why a row is left out of the estimates' track record (benchmarks/track_record.py), or
    None: it did not run the framework it is timed as (Paxml), or its source says it ran slower
    than the framework does (a named regression). Rows on power-capped GPUs or with a guessed
    shard group stay in: the catalog has their GPU, and the guess is what a user's job would get."""
    if _unprofiled_framework(r):
        return "Paxml on JAX/XLA, timed as Megatron-Core"
    if "performance regression" in (r.get("notes") or "").lower():
        return "a performance regression the source names"
    return None


def compared(case: dict, st) -> tuple[float, float, str]:
    """(measured, predicted, unit) of a throughput case against a StepTime: tokens/s per GPU,
    or model TFLOP/s per GPU where the row gives only that."""
    if case["measured_tps"]:
        return case["measured_tps"], st.tokens_per_s_per_gpu, "tok/s/GPU"
    return case["measured_tflops"], st.model_tflops_per_gpu, "TFLOP/s/GPU"


def throughput_rows() -> list[dict]:
    from shardwise.kb.perf import step_time
    out = []
    for c in throughput_cases():
        st = step_time(c["job"], c["layout"])
        r = c["row"]
        meas, pred, what = compared(c, st)
        out.append({"id": r["id"], "gpu": r["gpu_type"], "precision": c["job"].training.precision,
                    "moe": c["job"].model.is_moe, "measured": meas, "predicted": pred, "what": what,
                    "error": pred / meas - 1, "artefact": None, "layout": c["layout"].describe(),
                    "unmodelled": _unmodelled_speed(r), "model": _MODEL.get(r["model_key"]),
                    "framework": c["job"].training.framework, "gpu_name": _row_gpu(r), "gpus": r["num_gpus"],
                    "off_record": _off_record(r)})
    return out


def layer_compute_rows() -> list[dict]:
    """Per-layer forward+backward time, transformers profile, against h100_hf_layer_compute.jsonl."""
    from shardwise.kb import catalog
    from shardwise.kb.perf.compute import layer_time
    gpu = catalog.gpu("h100-sxm")
    out = []
    for r in _jsonl("h100_hf_layer_compute.jsonl"):
        m = ModelSpec(name=r["model"], layers=1, hidden=r["h"], ffn=r["ffn_shard"], heads=r["heads_shard"],
                      kv_heads=r["kv_shard"], head_dim=128, vocab=256)
        # one bf16 decoder layer (README.md here): the pure-bf16 recipe, no fp32 residual stream
        t = TrainingSpec(seq_len=r["seq"], framework="hf", precision="pure-bf16")
        pred = layer_time(m, t, Layout(mbs=r["mbs"]), gpu, False).total
        meas = r["ms_per_layer_fwdbwd"] / 1e3
        out.append({"id": f"{r['model']} tp={r['tp']} s={r['seq']}", "measured": meas, "predicted": pred,
                    "error": pred / meas - 1, "artefact": None})
    return out


# --- whole Trainer steps on one H100: h100_hf_trainer_steps.jsonl ------------------------------

# The architectures of measure_trainer.py (MODELS there), as ModelSpecs.
_TRAINER_MODELS = {
    "llama3.2-1b": dict(layers=16, hidden=2048, ffn=8192, heads=32, kv_heads=8, head_dim=64, vocab=128256),
    "llama3.2-3b": dict(layers=28, hidden=3072, ffn=8192, heads=24, kv_heads=8, head_dim=128, vocab=128256),
    "llama3-8b": dict(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, head_dim=128, vocab=128256),
    "qwen2.5-1.5b": dict(layers=28, hidden=1536, ffn=8960, heads=12, kv_heads=2, vocab=151936, tied=True,
                         qkv_bias=True),
    "mistral-7b-8layers": dict(layers=8, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=32000),
    "mixtral-small-moe": dict(layers=8, hidden=2048, ffn=5632, heads=16, kv_heads=8, vocab=32000,
                              experts=8, top_k=2, expert_ffn=5632),
}
# torch.cuda's "total capacity" on the card that measured them (README.md here)
TRAINER_CAPACITY_GIB = 79.18
# Rows a fit may use; the others are held out (every third row, t03, t06, ...: both
# kinds of outcome and every model family but qwen fall in each part).
def trainer_holdout(row_id: str) -> bool:
    return int(row_id[1:]) % 3 == 0


# The plain PyTorch loops of h200_torch_loops.jsonl (measure_loops.py): the released 1B and 3B
# tie their embeddings there, unlike the Trainer rows above.
_LOOP_MODELS = dict(_TRAINER_MODELS, **{
    "qwen2.5-0.5b": dict(layers=24, hidden=896, ffn=4864, heads=14, kv_heads=2, vocab=151936, tied=True, qkv_bias=True),
    "llama3.2-1b": dict(_TRAINER_MODELS["llama3.2-1b"], tied=True),
    "llama3.2-3b": dict(_TRAINER_MODELS["llama3.2-3b"], tied=True),
})
# torch.cuda.mem_get_info's total on the H200 that measured them, 150109880320 bytes (README.md here)
H200_CAPACITY_GIB = 150109880320 / 2 ** 30


def _one_gpu(name: str, capacity_gib: float):
    from shardwise.kb import catalog
    from shardwise.kb.schema import ClusterSpec
    g = catalog.gpu(name).model_copy(update={"memory_gib": capacity_gib})
    return ClusterSpec(gpu=g, gpus=1, gpus_per_node=1, intra=catalog.link(g.intra_link),
                       inter=catalog.link("infiniband-ndr"))


def trainer_case(r: dict, gpu: str = "h100-sxm", capacity_gib: float = TRAINER_CAPACITY_GIB):
    """(job, layout) of one Trainer row: fp32 weights under bf16 autocast = the hf 'bf16' recipe;
    a model loaded in bf16 = pure-bf16; LoRA via peft (all linear layers); the Trainer's
    optimizer (fused AdamW by default on torch >= 2.8, foreach with optim=adamw_torch)."""
    from shardwise.kb.job import Job
    m = ModelSpec(name=r["model"], **_TRAINER_MODELS[r["model"]])
    lora = r["mode"].startswith("lora")
    precision = "bf16" if r["weights"] == "fp32" else "pure-bf16"
    optimizer = "adamw-foreach" if r["optim"] == "adamw_torch" else "adamw-fused"
    kw = dict(seq_len=r["seq"], framework="hf", precision=precision, attention="sdpa",
              training="lora" if lora else "finetune", optimizer=optimizer)
    if lora:
        kw["lora_rank"] = int(r["mode"][4:])
    t = TrainingSpec(**kw)
    lay = Layout(mbs=r["mbs"], recompute="full" if r["ckpt"] else "none")
    return Job(model=m, cluster=_one_gpu(gpu, capacity_gib), training=t), lay


def loop_holdout(r: dict) -> bool:
    """Rows a fit may not use: every configuration whose number is a multiple of 3 (L03, L06,
    L09, L12: single-tensor AdamW, both eager configurations, a foreach one and Adafactor fall
    in the held-out part; fused, 8-bit and the other foreach AdamW, SGD, set_to_none False,
    LoRA and QLoRA in the other)."""
    return int(r["config"][1:]) % 3 == 0


def loop_case(r: dict):
    """(job, layout) of one plain-loop row: fp32 weights under bf16 autocast = the hf 'bf16'
    recipe, a bf16 model = pure-bf16; the optimizer as run; set_to_none False keeps the grads."""
    from shardwise.kb.job import Job
    m = ModelSpec(name=r["model"], **_LOOP_MODELS[r["model"]])
    adapters = {"full": "finetune", "lora16": "lora", "qlora16": "qlora"}[r["mode"]]
    kw = dict(seq_len=r["seq"], framework="hf", precision="bf16" if r["weights"] == "fp32" else "pure-bf16",
              attention=r["attn"], training=adapters, optimizer=r["optimizer"],
              zero_grad="set-to-none" if r["set_to_none"] else "zeros")
    if adapters != "finetune":
        kw["lora_rank"] = 16
    lay = Layout(mbs=r["mbs"], recompute="full" if r["ckpt"] else "none")
    return Job(model=m, cluster=_one_gpu("h200", H200_CAPACITY_GIB), training=TrainingSpec(**kw)), lay


def _judged(job, lay, r: dict, label: str, held_out: bool) -> dict:
    """One measured step against the estimate, like for like (less CUDA context and
    fragmentation); a row that ran out of memory is judged by fits."""
    from shardwise.kb.perf import step_time
    est = estimate_memory(job, lay)
    bd = est.breakdown_gib
    alloc = est.peak_gib - bd["cuda_context"] - bd["fragmentation"]
    meas = r.get("peak_allocated_bytes")
    row = {"id": label, "held_out": held_out, "moe": job.model.is_moe, "gpu_name": job.cluster.gpu.name,
           "fits_measured": "error" not in r, "fits_predicted": est.fits,
           "predicted_gib": alloc, "peak_gib": est.peak_gib, "phase": est.phase,
           "capacity_gib": job.cluster.gpu.memory_gib,
           "measured_gib": meas / 2**30 if meas else None,
           "error": alloc / (meas / 2**30) - 1 if meas else None, "artefact": None}
    if r.get("step_s"):
        st = step_time(job, lay)
        row.update(step_measured=r["step_s"], step_predicted=st.step_time_s, step_error=st.step_time_s / r["step_s"] - 1)
    return row


def loop_rows() -> list[dict]:
    out = []
    for r in _jsonl("h200_torch_loops.jsonl"):
        job, lay = loop_case(r)
        label = (f"{r['config']} {r['model']} {r['mode']} {r['weights']} {r['optimizer']}"
                 f"{'' if r['set_to_none'] else ' zeros'}{' ckpt' if r['ckpt'] else ''} {r['attn']}"
                 f" b={r['mbs']} s={r['seq']}")
        out.append(_judged(job, lay, r, label, loop_holdout(r)))
    return out


def fresh_rows() -> list[dict]:
    """h200_fresh_boundary.jsonl: each run in a fresh process with the allocator it ran under
    (--allocator caching for PyTorch's default, expandable for expandable_segments:True), judged
    like the loops; t02 is the Trainer case at an H100's capacity. ``split_flagged``: the estimate
    says it fits and its split peak (kb/memory/estimate._split_candidate: the largest tensor's cached
    segment split) does not, which warns (rules/warnings.yaml warn.split-segments)."""
    out = []
    for r in _jsonl("h200_fresh_boundary.jsonl"):
        if r["config"].startswith("t"):
            job, lay = trainer_case(dict(r, id=r["config"]), "h100-sxm", TRAINER_CAPACITY_GIB)
        else:
            job, lay = loop_case(r)
        kind = "expandable" if r["allocator"] == "expandable_segments" else "caching"
        job = replace(job, training=job.training.model_copy(update={"allocator": kind}))
        row = _judged(job, lay, r, f"{r['config']} s={r['seq']} {kind}", False)
        est = estimate_memory(job, lay)
        row.update(allocator=kind, split_peak_gib=est.split_peak_gib,
                   split_flagged=bool(est.fits and est.split_peak_gib > est.capacity_gib))
        out.append(row)
    return out


def trainer_rows(gpu: str = "h100") -> list[dict]:
    """Like for like: the estimate less CUDA context and fragmentation (outside or above
    torch.cuda.max_memory_allocated) against the measured peak; OOM rows are judged by fits.
    ``gpu``: h100 (h100_hf_trainer_steps.jsonl) or h200 (the same steps rerun on an H200,
    h200_hf_trainer_steps.jsonl, where the rows the H100 could not hold have peaks)."""
    card, capacity = {"h100": ("h100-sxm", TRAINER_CAPACITY_GIB), "h200": ("h200", H200_CAPACITY_GIB)}[gpu]
    out = []
    for r in _jsonl(f"{gpu}_hf_trainer_steps.jsonl"):
        job, lay = trainer_case(r, card, capacity)
        label = (f"{r['id']} {r['model']} {r['mode']} {r['weights']} s={r['seq']} b={r['mbs']}"
                 f"{' ckpt' if r['ckpt'] else ''}{' foreach' if r['optim'] == 'adamw_torch' else ''}")
        out.append(_judged(job, lay, r, label, trainer_holdout(r["id"])))
    return out


# --- memory of the published Megatron layouts (they ran, so they fit) --------------------------

def _unmodelled(r: dict, lay) -> str | None:
    """Why a published layout cannot be rebuilt well enough to judge its memory, or None: what
    NVIDIA's recipe for the run does that the row does not record."""
    if _shard_group_unpublished(r):
        return "FSDP shard group not published (the loader assumes one node)"
    if (lay.zero == 3 and not lay.offload and r["gpu_type"] in ("GB200", "GB300")
            and r["model_key"] in ("llama3-70b", "llama3.1-405b")):
        # Megatron-Bridge scripts/performance/configs/llama/llama3*_workload_base_configs.py:
        # use_megatron_fsdp=True with cpu_offloading_num_layers=20-92
        return "activations offloaded to CPU in NVIDIA's recipe (cpu_offloading_num_layers)"
    if r["model_key"] == "deepseek-v3":
        # Megatron-Bridge scripts/performance/configs/deepseek/deepseek_workload_base_configs.py
        return "per-module recompute in NVIDIA's recipe (recompute_modules moe_act / mla_up_proj)"
    if lay.vp > 1 and megatron_ep_overlap_share(lay) > 0 and r["gpu_type"] != "H100":
        # Megatron-Bridge scripts/performance/utils/utils.py WorkloadBaseConfig: moe_a2a_overlap
        # defaults to False, and the qwen3 configs set it True only on H100 (False outright on
        # B200/B300); the estimate, like the export, runs it, and interleaved it warms up with one
        # chunk forward more (kb/memory/activations.stage_activations)
        return "EP all-to-all overlap off in NVIDIA's recipe, which the export turns on (one warm-up forward more)"
    return None


def published_megatron_memory_rows() -> list[dict]:
    """Every published Megatron run with a layout (throughput_cases): the estimated peak against
    the GPU's memory. Recomputation, offloading and per-module recompute are rarely in the rows
    (activation_recompute is empty in all of them), so each is estimated without."""
    out = []
    for c in throughput_cases():
        if c["job"].training.framework != "megatron":
            continue
        # NVIDIA's performance scripts launch with expandable segments (Megatron-Bridge
        # scripts/performance/utils/executors.py PERF_ENV_VARS: "PYTORCH_CUDA_ALLOC_CONF":
        # "expandable_segments:True"), so each run is judged under --allocator expandable
        job = replace(c["job"], training=c["job"].training.model_copy(update={"allocator": "expandable"}))
        e = estimate_memory(job, c["layout"])
        r = c["row"]
        out.append({"id": r["id"], "gpu": r["gpu_type"], "moe": c["job"].model.is_moe, "layout": c["layout"].describe(),
                    "model": _MODEL.get(r["model_key"]), "gpu_name": _row_gpu(r), "gpus": r["num_gpus"],
                    "off_record": _off_record(r),
                    "peak_gib": e.peak_gib, "capacity_gib": e.capacity_gib, "fits": e.fits, "phase": e.phase,
                    "activations_gib": e.breakdown_gib["activations"], "unmodelled": _unmodelled(r, c["layout"]),
                    "modules_peak_gib": _per_module_peak(c, r)})
    return out


def _per_module_peak(case: dict, r: dict) -> float | None:
    """The peak of a row whose recipe recomputes modules the row does not record (DeepSeek-V3's
    mla_up_proj, with mlp or moe_act in some recipes) under shardwise's per-module mode, which
    recomputes those and the norms and core attention: a lower bound on what the recipe needs,
    not like for like. None for the other rows."""
    if r["model_key"] != "deepseek-v3":
        return None
    return estimate_memory(case["job"], case["layout"].with_(recompute="modules")).peak_gib
