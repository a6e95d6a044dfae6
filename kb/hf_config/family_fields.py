"""What single families set beyond Llama's shapes, read or refused: Gemma's soft-caps, score
scale and local RoPE base; Llama 4's MoE layers, NoPE layers, q/k norms and chunked attention;
ERNIE 4.5's MoE placement; OLMoE's settings the estimate does not build.
"""
from __future__ import annotations

from ..errors import InputError
from .fields import _field, _index, _show
from .rope import _rope_layers
from .moe import EXPERT_FIELDS


# Gemma 2's and Gemma 3's config classes' defaults (transformers configuration_gemma2.py,
# configuration_gemma3.py Gemma3TextConfig): attn_logit_softcapping, final_logit_softcapping (None:
# no cap), query_pre_attn_scalar, rope_local_base_freq (Gemma 3 only)
GEMMA_DEFAULTS = {"gemma2": (50.0, 30.0, 256, None), "gemma3_text": (None, None, 256, 10000.0)}


def _gemma_fields(cfg: dict, path: str, mt: str, spec: dict) -> dict:
    """Gemma's numerics that no shape shows: the soft-caps on the attention scores and on the final
    logits (cap x tanh(x / cap); a null in config.json turns one off), the scores' scale
    query_pre_attn_scalar ** -0.5 (Gemma2Attention / Gemma3Attention .scaling), kept where it is
    not the head dimension, and Gemma 3's RoPE base on its sliding-window layers
    (rope_local_base_freq; transformers 5 keeps it as rope_parameters.sliding_attention.rope_theta),
    kept where it is not rope_theta."""
    attn, final, scalar, local = GEMMA_DEFAULTS[mt]

    def cap(name: str, default):
        v = cfg.get(name, default)
        return 0.0 if v is None else float(_field({name: v}, path, name, kind=float))

    out = {"attn_softcap": cap("attn_logit_softcapping", attn), "final_softcap": cap("final_logit_softcapping", final)}
    scalar = float(_field(cfg, path, "query_pre_attn_scalar", required=False, default=scalar, kind=float))
    head_dim = spec["head_dim"] or spec["hidden"] // spec["heads"]
    out["attn_scale_dim"] = scalar if scalar != head_dim else 0.0
    if local is not None:
        rp = cfg.get("rope_parameters")
        sliding = rp.get("sliding_attention") if isinstance(rp, dict) else None
        local = _field(sliding if isinstance(sliding, dict) else {}, path, "rope_theta", required=False, default=None,
                       kind=float) or _field(cfg, path, "rope_local_base_freq", required=False, default=local, kind=float)
        out["rope_local_theta"] = float(local) if float(local) != spec["rope_theta"] else 0.0
    return out


def _llama4_fields(cfg: dict, path: str, spec: dict) -> dict:
    """What a llama4_text config.json sets beyond Llama's shapes (configuration_llama4.py and
    modeling_llama4.py, transformers 5.24; Llama4TextConfig's defaults where it leaves a field out):

    - MoE layers: moe_layers where given, else every interleave_moe_layer_step-th layer (layer
      N - 1, 2N - 1, ...: Scout 1, every layer; Maverick 2); a list of another pattern is refused.
      Each has num_local_experts routed experts of intermediate_size (top num_experts_per_tok),
      one shared expert of intermediate_size and a bias-free router; the other layers a dense MLP
      of intermediate_size_mlp.
    - use_qk_norm: a weightless L2 norm of q and k on the RoPE layers (no parameters; its fp32 copy
      is kept: activations.l2_qk_norm_bytes); no_rope_layers (or every no_rope_layer_interval-th
      layer) names the layers without RoPE, whose attention temperature tuning keeps nothing
      measurable (a CPU NoPE layer keeps what a RoPE layer without q/k norms does, less RoPE's
      freqs); both change no shape.
    - attention_chunk_size: the layers layer_types calls "chunked_attention" (by default the
      RoPE layers, Llama4TextConfig.__post_init__; none where attention_chunk_size is null)
      attend within chunks (8,192 tokens): ModelSpec.attn_chunk and chunked_layers. The model's
      FLOPs count a chunk's keys (kb/perf/flops.chunk_keys); no kernel the estimate times skips
      the rest (kb/perf/compute.windowed_attention_flops), said in the answer."""
    layers = spec["layers"]
    out = {}
    every = _field(cfg, path, "interleave_moe_layer_step", required=False, default=1, least=1)
    moe = cfg.get("moe_layers")
    if moe is None:
        moe = list(range(every - 1, layers, every))
    elif not isinstance(moe, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in moe):
        raise InputError(f"{path}: field 'moe_layers' must be a list of layer indices, got {_show(moe)}")
    moe = sorted(set(i for i in moe if 0 <= i < layers))
    step = next((n for n in range(1, layers + 1) if moe == list(range(n - 1, layers, n))), 0) if moe else 0
    if moe and not step:
        raise InputError(f"{path}: moe_layers {_show(moe)} is not supported; supported: every Nth layer MoE "
                         "(layers N-1, 2N-1, ...), as interleave_moe_layer_step builds it")
    out["ffn"] = _field(cfg, path, "intermediate_size_mlp", required=False, default=16384, least=1)
    if moe:
        out.update(experts=_field(cfg, path, *EXPERT_FIELDS["llama4_text"], required=False, default=16, least=1),
                   top_k=_field(cfg, path, "num_experts_per_tok", required=False, default=1, least=1),
                   expert_ffn=spec["ffn"], shared_experts=1, shared_ffn=spec["ffn"], moe_every=step if step > 1 else 0)
    rope = _rope_layers(cfg, path, layers)
    out["nope_layers"] = tuple(i for i, r in enumerate(rope) if not r)
    if _field(cfg, path, "use_qk_norm", required=False, default=True, kind=bool):
        out["qk_l2_norm_layers"] = sum(rope)
    chunk = _field(cfg, path, "attention_chunk_size", required=False, default=8192, least=1) \
        if "attention_chunk_size" not in cfg or cfg["attention_chunk_size"] is not None else None
    chunked = sum(_chunked_layers(cfg, path, rope, chunk))
    if chunked:
        out.update(attn_chunk=chunk, chunked_layers=chunked)
        out["reading_notes"] = spec["reading_notes"] + (
            f"llama4: {chunked} layers attend within chunks of {chunk:,} tokens (attention_chunk_size): the model "
            f"FLOPs (MFU) count a chunk's keys, but they are timed as the kernels run them, over the whole causal "
            f"sequence (Megatron-Core has no chunked attention) or, under transformers' SDPA from {chunk:,} tokens on, "
            "the whole masked square",)
    return out


def _chunked_layers(cfg: dict, path: str, rope: list[bool], chunk: int | None) -> list[bool]:
    """Which layers attend within chunks: layer_types' "chunked_attention" entries where given, else
    the RoPE layers (Llama4TextConfig.__post_init__: "chunked_attention" where no_rope_layers is 1 and
    attention_chunk_size is set); none without a chunk size."""
    types = cfg.get("layer_types")
    if types is None:
        return [r and chunk is not None for r in rope]
    kinds = ("chunked_attention", "full_attention")
    if not isinstance(types, list) or len(types) != len(rope) or any(k not in kinds for k in types):
        raise InputError(f"{path}: field 'layer_types' must list {len(rope)} entries (num_hidden_layers), each "
                         "'chunked_attention' or 'full_attention'")
    if chunk is None and "chunked_attention" in types:
        raise InputError(f"{path}: layer_types names chunked_attention layers but attention_chunk_size is null; "
                         "allowed: an attention_chunk_size of 1 or more, or only full_attention layers")
    return [k == "chunked_attention" for k in types]


def _ernie_fields(cfg: dict, path: str, spec: dict) -> dict:
    """What an ernie4_5_moe config.json sets beyond Llama's shapes (configuration_ernie4_5_moe.py,
    modular_ernie4_5_moe.py, transformers 5.24; Ernie4_5_MoeConfig's defaults where it leaves a
    field out):

    - MoE layers: layer i is MoE where (i + 1) % moe_layer_interval == 0 and moe_layer_start_index
      <= i <= moe_layer_end_index (-1: the last layer; Ernie4_5_MoeDecoderLayer). Carried where that
      is every layer from one on (first_dense: ERNIE-4.5-21B-A3B's 1, -300B-A47B's 3) or every Nth
      layer (moe_every, layers N - 1, 2N - 1, ...); another placement is refused naming the fields.
      A null moe_layer_end_index is refused: the layer's comparison with None fails in transformers.
    - Each MoE layer: moe_num_experts experts of moe_intermediate_size (top moe_k; num_experts and
      num_experts_per_tok are their attribute_map aliases), one ungated shared MLP of
      moe_num_shared_experts x moe_intermediate_size (none at 0), and the router's weight and
      e_score_correction_bias (router_bias). moe_norm_min floors the renormalising sum: no shape
      or kept tensor depends on it, so it is only checked as a number.
    - use_bias true biases q, k, v, o, the dense and shared MLPs and lm_head but not the routed
      experts: no spec field builds that split (linear_bias biases every expert), so it is refused."""
    if _field(cfg, path, "use_bias", required=False, default=False, kind=bool):
        raise InputError(f"{path}: use_bias true is not supported for ernie4_5_moe (it biases the attention, the "
                         "dense and shared MLPs and lm_head but not the routed experts, a split the estimate does "
                         "not build); supported: false, Ernie4_5_MoeConfig's default")
    _field(cfg, path, "moe_norm_min", required=False, default=1e-12, kind=float)
    layers = spec["layers"]
    every = _field(cfg, path, "moe_layer_interval", required=False, default=1, least=1)
    start = _index(cfg, path, "moe_layer_start_index", 1)
    if cfg.get("moe_layer_end_index", -1) is None:
        raise InputError(f"{path}: field 'moe_layer_end_index' is null, which transformers' Ernie4_5_MoeDecoderLayer "
                         "cannot compare a layer index with; supported: a layer index, or -1 (the last layer)")
    end = _index(cfg, path, "moe_layer_end_index", -1)
    end = layers - 1 if end == -1 else end
    moe = [i for i in range(layers) if (i + 1) % every == 0 and start <= i <= end]
    if not moe:
        return {}
    out = {}
    if moe == list(range(moe[0], layers)):
        out["first_dense"] = moe[0]
    elif moe[0] == every - 1 and moe == list(range(every - 1, layers, every)):
        out["moe_every"] = every
    else:
        raise InputError(f"{path}: moe_layer_start_index {start}, moe_layer_end_index {_show(cfg.get('moe_layer_end_index', -1))} "
                         f"and moe_layer_interval {every} put MoE on layers {_show(moe)} of {layers}, which is not "
                         "supported; supported: every layer from one on to the last, or every Nth layer (N-1, 2N-1, "
                         "...) to the last")
    experts = _field(cfg, path, *EXPERT_FIELDS["ernie4_5_moe"], required=False, default=64, least=1)
    top_k = _field(cfg, path, "moe_k", "num_experts_per_tok", required=False, default=6, least=1)
    if top_k > experts:
        raise InputError(f"{path}: moe_k ({top_k}) is more than moe_num_experts ({experts}); supported: at most as "
                         "many experts per token as there are experts")
    return dict(out, experts=experts, top_k=top_k,
                expert_ffn=_field(cfg, path, "moe_intermediate_size", required=False, default=1536, least=1),
                shared_experts=_field(cfg, path, "moe_num_shared_experts", required=False, default=2))


def _olmoe_checks(cfg: dict, path: str, spec: dict) -> None:
    """What an OLMoE config.json may set that the estimate does not build, refused: clip_qkv
    (OlmoeAttention clamps q, k and v in place, and autograd keeps a copy of each for the clamp's
    backward: 2 (q + 2 kv) bytes a token more, measured on a CPU layer, not modelled), and a
    head_dim whose heads do not span hidden_size (q_norm is an RMSNorm of hidden_size over the
    heads x head_dim projection: transformers' own layer fails), and a sliding_window (OlmoeConfig
    has none, but OlmoeAttention hands one the file adds to the attention kernel, and flash
    attention slides by it: "main diff with Llama")."""
    if cfg.get("sliding_window") is not None:
        raise InputError(f"{path}: sliding_window {_show(cfg['sliding_window'])} is not supported for olmoe (its "
                         "attention hands it to flash attention, a window the estimate does not build); supported: "
                         "none, as OlmoeConfig has")
    if cfg.get("clip_qkv") is not None:
        raise InputError(f"{path}: clip_qkv {_show(cfg['clip_qkv'])} is not supported for olmoe (its in-place clamps "
                         "keep copies of q, k and v that the estimate does not size); supported: null, its default")
    if spec["head_dim"] and spec["head_dim"] * spec["heads"] != spec["hidden"]:
        raise InputError(f"{path}: head_dim {spec['head_dim']} x num_attention_heads {spec['heads']} is not "
                         f"hidden_size {spec['hidden']}; supported for olmoe: heads that span hidden_size (its "
                         "q_norm is hidden_size wide)")
