"""Hypothesis strategies for jobs across the whole input range: 0.1B-10T parameters (catalog
models, parameter counts, generated HF configs, dense and MoE), 1-16,384 GPUs, 8-320 GB, sequences
128-1M, every training type, precision, framework, recompute and attention."""
import json

from hypothesis import strategies as st

from shardwise.kb import catalog

MODELS = sorted(catalog.raw("models")["models"])
GPUS = sorted(catalog.raw("gpus")["gpus"])
TRAINING = ["pretrain", "finetune", "lora", "qlora", "rlhf"]
PRECISION = ["bf16", "pure-bf16", "fp8"]
FRAMEWORK = ["megatron", "deepspeed", "fsdp", "hf"]
RECOMPUTE = ["auto", "none", "selective", "full"]
ATTENTION = ["flash", "sdpa", "eager"]
INTERCONNECT = [None, "nvlink", "infiniband", "roce", "ethernet", "pcie"]


def log_int(lo: int, hi: int):
    """Integers spread over orders of magnitude, powers of two favoured (real clusters)."""
    return st.one_of(st.integers(0, hi.bit_length()).map(lambda e: 1 << e).filter(lambda v: lo <= v <= hi),
                     st.floats(0, 1).map(lambda u: int(round(lo * (hi / lo) ** u))))


@st.composite
def hf_config(draw) -> dict:
    heads = draw(st.sampled_from([4, 8, 16, 32, 40, 64, 96, 128]))
    head_dim = draw(st.sampled_from([64, 128]))
    cfg = {"model_type": draw(st.sampled_from(["llama", "mistral", "qwen2", "mixtral", "qwen3_moe"])),
           "hidden_size": heads * head_dim, "num_attention_heads": heads,
           "num_key_value_heads": draw(st.sampled_from([h for h in (1, 2, 4, 8, heads) if heads % h == 0])),
           "num_hidden_layers": draw(st.integers(2, 160)),
           "intermediate_size": draw(st.integers(1, 8)) * heads * head_dim,
           "vocab_size": draw(st.sampled_from([32000, 50257, 128256, 151936]))}
    if cfg["model_type"] in ("mixtral", "qwen3_moe"):
        experts = draw(st.sampled_from([4, 8, 16, 64, 128, 256]))
        cfg["num_local_experts" if cfg["model_type"] == "mixtral" else "num_experts"] = experts
        cfg["num_experts_per_tok"] = draw(st.integers(1, min(8, experts)))
        if cfg["model_type"] == "qwen3_moe":
            cfg["moe_intermediate_size"] = cfg["intermediate_size"] // 4 or 256
    return cfg


@st.composite
def job_settings(draw, tmp_dir=None) -> dict:
    """Keyword arguments for build_job (the same keys as a job file)."""
    kind = draw(st.sampled_from(["catalog", "params", "hf"] if tmp_dir else ["catalog", "params"]))
    s: dict = {}
    if kind == "catalog":
        s["model"] = draw(st.sampled_from(MODELS))
    elif kind == "params":
        s["params"] = f"{draw(st.floats(0.1, 10000)):.4g}B"
    else:
        path = tmp_dir / f"config-{draw(st.integers(0, 10**9))}.json"
        path.write_text(json.dumps(draw(hf_config())))
        s["hf_config"] = str(path)
    s["gpu"] = draw(st.sampled_from(GPUS))
    if draw(st.booleans()):
        s["gpu_memory"] = draw(st.sampled_from([8, 16, 24, 40, 48, 80, 96, 141, 192, 288, 320]))
    s["gpus"] = draw(log_int(1, 16384))
    if draw(st.booleans()):
        s["gpus_per_node"] = draw(st.sampled_from([1, 2, 4, 8, 16, 36, 72]))
    ic = draw(st.sampled_from(INTERCONNECT))
    if ic:
        s["interconnect"] = ic
    s["seq_len"] = draw(log_int(128, 1 << 20))
    for key, values in (("training", TRAINING), ("precision", PRECISION), ("framework", FRAMEWORK),
                        ("recompute", RECOMPUTE), ("attention", ATTENTION)):
        s[key] = draw(st.sampled_from(values))
    if draw(st.booleans()):
        s["mbs"] = draw(st.sampled_from([1, 2, 3, 4, 8]))
    if draw(st.booleans()):
        s["global_batch"] = draw(log_int(1, 1 << 16))
    return s
