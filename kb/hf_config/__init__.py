"""Read a Hugging Face ``config.json`` into a ModelSpec.

Supported ``model_type`` values and the fields read are listed in ``SUPPORTED``; anything else
is refused with the list. A mistyped field is refused naming the field; a missing one too, unless
transformers' config class has a default for it, which is then used (CLASS_DEFAULTS, or the
generic ones). What the file describes but the estimate does not size is said in the output
(ModelSpec.reading_notes).

The reading is split by concept, one module each:

- fields.py: one field read and checked; a value as a refusal quotes it
- json_file.py: the file a path names, and its JSON parsed strictly
- naming.py: the model's name in every output and export
- model_types.py: which model_types are read, aliased or refused
- defaults.py: the config classes' defaults for a field the file leaves out
- rope.py: RoPE: theta, scaling, partial rotary, layers without RoPE
- windows.py: sliding-window attention layers
- linears.py: biases and the MLP's activation
- dropout.py: dropout in training
- moe.py: experts, shared experts, router, multi-token prediction
- vision.py: vision towers' parameters (not sized, said)
- wrappers.py: multimodal wrappers' text_config and head tie
"""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError, read_input_file
from ..params import total_params
from ..schema import ModelSpec
from .fields import PARAMS_MAX, _field, _index, _show
from .json_file import _locate, _parse_json
from .naming import _name, _size_name
from .model_types import ALIASES, HYBRIDS, MLA_TYPES, SUPPORTED, _alias, _check_architectures, _sparse_attention
from .defaults import CLASS_DEFAULTS, MAX_POSITIONS_DEFAULT, _max_positions, norm_eps
from .rope import ROPE_THETA_DEFAULT, ROTARY_FRACTION_DEFAULTS, _ministral3_rope, _rope_layers, rope_fields
from .windows import sliding_layers, window_fields
from .linears import _activation, _bias_fields
from .dropout import _dropout_fields
from .moe import EXPERT_FIELDS, ROUTED_DEFAULTS, ROUTER_DEFAULTS, SHARED_EXPERT_DEFAULTS, _mtp_note, _router
from .vision import VISION_PARAMS, WRAPPER_VISION_PARAMS, llama4_vision_params, pixtral_params, vision_params
from .wrappers import TEXT_OWNS_HEAD, WRAPPERS, _text_config

__all__ = ["read_hf_config", "MAX_POSITIONS_DEFAULT", "SUPPORTED", "llama4_vision_params", "pixtral_params"]


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


def _reading_notes(outer: dict, cfg: dict, h: int) -> tuple[str, ...]:
    """What the config describes that the estimate does not size, said in the output."""
    notes = []
    vision = outer.get("vision_config") if outer is not cfg else None
    if isinstance(vision, dict):
        mt = outer.get("model_type")
        n = WRAPPER_VISION_PARAMS[mt](outer, h) if mt in WRAPPER_VISION_PARAMS else \
            VISION_PARAMS.get(mt, vision_params)(vision, h)
        notes.append(f"{outer.get('model_type')} config.json: only the language model (text_config) is sized; the "
                     f"vision tower and projector, about {n / 1e6:,.0f}M parameters (vision_config), are not")
    if outer.get("model_type") in TEXT_OWNS_HEAD and cfg.get("tie_word_embeddings") is False \
            and outer.get("tie_word_embeddings") is not False:
        notes.append(f"{outer.get('model_type')} config.json: the output head is sized apart from the embedding, as "
                     "its text_config has it (Mistral Small 3.x's checkpoints store lm_head, and from_pretrained keeps "
                     "both); a model built from the config alone would tie them (Mistral3Config's "
                     "tie_word_embeddings, true unless the wrapper says false)")
    q = cfg.get("quantization_config") or outer.get("quantization_config")
    if isinstance(q, dict):
        notes.append(f"config.json has a quantization_config (quant_method {str(q.get('quant_method'))[:40]!r}): the "
                     "weights are sized as the training type and precision hold them (bf16, or NF4 under QLoRA), "
                     "not as the checkpoint stores them")
    return tuple(notes)


def read_hf_config(path: str) -> ModelSpec:
    p = _locate(path)
    path = str(p) if p != Path(path) else path
    outer = cfg = _parse_json(read_input_file(path, "--hf-config"), path)
    _check_architectures(cfg, path)
    if cfg.get("model_type") in WRAPPERS:
        cfg = _text_config(cfg, path)
    # the object the file wrote the language model's fields in (a wrapper's text_config, before
    # _text_config filled it), to tell a field the file gives from one a default supplies
    written = outer["text_config"] if cfg is not outer else cfg
    alias_note: tuple[str, ...] = ()
    if isinstance(cfg.get("model_type"), str) and cfg["model_type"] in ALIASES:
        cfg, alias_note = _alias(cfg, path)
    mt = cfg.get("model_type")
    supported = ", ".join(sorted(set(SUPPORTED) | set(WRAPPERS) | set(ALIASES)))
    if mt is None:
        raise InputError(f"{path}: missing field 'model_type' (which transformers model the file describes); "
                         f"supported: {supported}")
    _sparse_attention(cfg, path, mt, supported)
    if isinstance(mt, str) and mt in HYBRIDS:
        raise InputError(f"{path}: model_type {_show(mt)} is not supported: its {HYBRIDS[mt]} are not modelled, only "
                         f"softmax-attention decoder layers; supported: {supported}")
    if not isinstance(mt, str) or mt not in SUPPORTED:
        raise InputError(f"{path}: model_type {_show(mt)} is not supported; supported: {supported}")
    max_positions, positions_note = _max_positions(written, path, mt)
    defaulted = sorted(k for k in CLASS_DEFAULTS.get(mt, {}) if k not in cfg)
    cfg = {**CLASS_DEFAULTS.get(mt, {}), **cfg}
    if mt in MLA_TYPES:
        cfg.pop("head_dim", None)
    family, extra = SUPPORTED[mt]
    h = _field(cfg, path, "hidden_size", least=1)
    heads = _field(cfg, path, "num_attention_heads", least=1)
    spec = dict(
        name=_name(outer, p) or mt,
        family=family,
        layers=_field(cfg, path, "num_hidden_layers", least=1),
        hidden=h,
        ffn=_field(cfg, path, "intermediate_size", least=1),
        heads=heads,
        kv_heads=_field(cfg, path, "num_key_value_heads", required=False, default=heads, least=1),
        head_dim=_field(cfg, path, "head_dim", required=False, default=0, least=1),
        vocab=_field(cfg, path, "vocab_size", least=1),
        tied=_field(cfg, path, "tie_word_embeddings", required=False, default=extra.get("tied", False), kind=bool),
        max_positions=max_positions,
        source=f"Hugging Face config.json at {path}",
        reading_notes=alias_note + _reading_notes(outer, cfg, h) + positions_note,
    )
    spec.update({k: v for k, v in extra.items() if k != "tied"})
    spec["mlp"] = _activation(cfg, path, mt)
    if mt == "ministral3":
        cfg = _ministral3_rope(cfg, path)
    spec.update(rope_fields(cfg, path, ROPE_THETA_DEFAULT.get(mt, 10000.0)))
    spec["norm_eps"] = norm_eps(cfg, path, mt)
    spec.update(window_fields(cfg, path, mt, spec["layers"]))
    spec.update(_bias_fields(cfg, path, mt))
    if mt in ("mixtral", "gpt_oss"):
        # transformers' attribute_map aliases (MixtralConfig, GptOssConfig: num_experts ->
        # num_local_experts): a config.json may carry either name
        spec.update(experts=_field(cfg, path, *EXPERT_FIELDS[mt], least=1),
                    top_k=_field(cfg, path, "num_experts_per_tok", least=1), expert_ffn=spec["ffn"])
    if mt in ROUTED_DEFAULTS:
        experts, top_k = ROUTED_DEFAULTS[mt]
        spec.update(experts=_field(cfg, path, *EXPERT_FIELDS[mt], required=False, default=experts, least=1),
                    top_k=_field(cfg, path, "num_experts_per_tok", required=False, default=top_k, least=1),
                    expert_ffn=spec["ffn"])
    if mt == "granitemoeshared":
        # GraniteMoeSharedConfig's shared_intermediate_size defaults to 0: no shared MLP
        shared = _field(cfg, path, "shared_intermediate_size", required=False, default=0)
        spec.update(shared_experts=1 if shared else 0, shared_ffn=shared)
    if mt == "olmoe":
        _olmoe_checks(cfg, path, spec)
    if mt == "llama4_text":
        spec.update(_llama4_fields(cfg, path, spec))
    if mt == "ernie4_5_moe":
        spec.update(_ernie_fields(cfg, path, spec))
    if mt in GEMMA_DEFAULTS:
        spec.update(_gemma_fields(cfg, path, mt, spec))
    if mt == "gpt_oss":
        # GptOssConfig's default swiglu_limit is 7.0 (transformers configuration_gpt_oss.py)
        spec["glu_limit"] = float(_field(cfg, path, "swiglu_limit", required=False, default=7.0, kind=float))
    if mt in ("qwen3_moe", "qwen2_moe"):
        # transformers 5 writes Qwen3MoeConfig's num_experts as num_local_experts (attribute_map)
        spec.update(experts=_field(cfg, path, *EXPERT_FIELDS[mt], least=1),
                    top_k=_field(cfg, path, "num_experts_per_tok", least=1),
                    expert_ffn=_field(cfg, path, "moe_intermediate_size", least=1))
        if _field(cfg, path, "decoder_sparse_step", required=False, default=1) != 1 or cfg.get("mlp_only_layers"):
            raise InputError(f"{path}: decoder_sparse_step != 1 / mlp_only_layers are not supported; "
                             "only models whose every layer is MoE")
        if mt == "qwen2_moe":
            spec["shared_ffn"] = _field(cfg, path, "shared_expert_intermediate_size", least=1)
            spec["shared_experts"] = 1
    if mt in SHARED_EXPERT_DEFAULTS:
        # DeepSeek's routed MoE fields, and GLM-4.5's, which is DeepSeek-V3's MoE (V2 routes by
        # softmax scores without V3's e_score_correction_bias, modeling_deepseek_v2.py)
        shared, dense = SHARED_EXPERT_DEFAULTS[mt]
        spec.update(experts=_field(cfg, path, *EXPERT_FIELDS[mt], least=1),
                    top_k=_field(cfg, path, "num_experts_per_tok", least=1),
                    expert_ffn=_field(cfg, path, "moe_intermediate_size", least=1),
                    # a null, the file's own, is none: modeling_deepseek.py builds shared experts only
                    # where n_shared_experts is not None (the class default fills a left-out key only)
                    shared_experts=0 if mt in MLA_TYPES and "n_shared_experts" in cfg
                    and cfg["n_shared_experts"] is None
                    else _field(cfg, path, "n_shared_experts", required=shared is None, default=shared),
                    first_dense=_field(cfg, path, "first_k_dense_replace", required=False, default=dense))
    if mt in ROUTER_DEFAULTS:
        spec.update(_router(cfg, path, mt))
    if mt in MLA_TYPES:
        # modeling_deepseek.py (the file's auto_map) and vLLM make a layer MoE only where
        # layer_idx % moe_layer_freq == 0; transformers' DeepseekV2/V3 ignore the field, and the
        # spec cannot place MoE every Nth layer after leading dense ones (ModelSpec.moe_every)
        freq = _field(cfg, path, "moe_layer_freq", required=False, default=1, least=1)
        if freq != 1:
            raise InputError(f"{path}: moe_layer_freq {freq} is not supported for {mt} (DeepSeek's modeling_deepseek.py "
                             "makes MoE only the layers past first_k_dense_replace whose index it divides, which "
                             "transformers ignores); supported: 1, every layer past first_k_dense_replace MoE, as every "
                             "published DeepSeek-V2/V3 file has")
        spec.update(q_lora_rank=_field(cfg, path, "q_lora_rank", required=False, default=0),
                    kv_lora_rank=_field(cfg, path, "kv_lora_rank", least=1),
                    qk_nope_dim=_field(cfg, path, "qk_nope_head_dim", least=1),
                    qk_rope_dim=_field(cfg, path, "qk_rope_head_dim", least=1),
                    v_head_dim=_field(cfg, path, "v_head_dim", least=1))
    if mt == "glm4_moe":
        # no q/k norms by default (configuration_glm4_moe.py; GLM-4.5 sets use_qk_norm, GLM-4.5-Air does not)
        spec["qk_norm"] = _field(cfg, path, "use_qk_norm", required=False, default=False, kind=bool)
    if mt == "smollm3":
        # SmolLM3Config builds no_rope_layers as Llama4TextConfig does (configuration_smollm3.py)
        spec["nope_layers"] = tuple(i for i, r in enumerate(_rope_layers(cfg, path, spec["layers"])) if not r)
    if mt == "exaone4" and cfg.get("sliding_window") is not None:
        # with a window, Exaone4Attention rotates q and k on its sliding layers only ("global NoPE")
        spec["nope_layers"] = tuple(i for i, s in enumerate(sliding_layers(cfg, path, mt, spec["layers"])) if not s)
    dropout, note = _dropout_fields(cfg, path, mt)
    spec.update(dropout)
    spec["reading_notes"] += note
    if mt in ("olmoe", "qwen2_moe", "qwen3_moe"):
        # the top k's softmax weights over all experts, renormalised over the k only where
        # norm_topk_prob is true; the three config classes default it to false
        # (configuration_olmoe.py, configuration_qwen2_moe.py, configuration_qwen3_moe.py)
        spec["router_pre_softmax"] = not _field(cfg, path, "norm_topk_prob", required=False, default=False, kind=bool)
    if mt in ROTARY_FRACTION_DEFAULTS:
        # RoPE on the first partial_rotary_factor of each head (Glm4MoeRotaryEmbedding and
        # Phi3RotaryEmbedding: dim = head_dim x partial_rotary_factor, apply_rotary_pos_emb passes
        # the rest; Phi-4-mini 0.75); the config classes' defaults where the file leaves it out
        # (ROTARY_FRACTION_DEFAULTS); transformers 5 may keep it in rope_parameters
        rope_params = cfg.get("rope_parameters") if isinstance(cfg.get("rope_parameters"), dict) else {}
        frac = _field(dict(rope_params, **cfg), path, "partial_rotary_factor", required=False,
                      default=ROTARY_FRACTION_DEFAULTS[mt], kind=float)
        if frac > 1:
            raise InputError(f"{path}: field 'partial_rotary_factor' must be a number in (0, 1], got {_show(frac)}")
        spec["rotary_fraction"] = float(frac)
    if mt == "smollm3" and _field(cfg, path, "use_sliding_window", required=False, default=False, kind=bool) \
            and cfg.get("sliding_window") is not None:
        raise InputError(f"{path}: use_sliding_window true is not supported for smollm3 (sliding windows on its "
                         "layers without RoPE); supported: false, its default")
    if not spec["head_dim"] and h % heads:
        raise InputError(f"{path}: num_attention_heads {heads} does not divide hidden_size {h}, and no head_dim "
                         "is given; give head_dim or heads that divide the hidden size")
    _check_consistent(spec, cfg, path, mt, defaulted)
    try:
        model = ModelSpec(**spec)
    except ValueError as e:     # what _check_consistent does not name: still one line, without pydantic's wording
        first = e.errors()[0] if hasattr(e, "errors") else {"msg": str(e)}
        msg = str(first.get("msg", e)).removeprefix("Value error, ")
        raise InputError(f"{path}: inconsistent config: {msg}")
    if total_params(model) > PARAMS_MAX:
        raise InputError(f"{path}: the config describes {total_params(model):.3g} parameters; supported: up to "
                         "10T (as for --params)")
    model = model.model_copy(update={"reading_notes": model.reading_notes + _mtp_note(cfg, path, model)})
    if not _name(outer, p):
        # nothing names the model: its model_type and size, the same for the same file anywhere
        model = model.model_copy(update={"name": _size_name(str(outer.get("model_type")), total_params(model))})
    return model


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


def _check_consistent(spec: dict, cfg: dict, path: str, mt: str, defaulted: list[str]) -> None:
    """What ModelSpec's validator checks, refused in config.json's own words (the field names
    the file uses) before it is built."""
    def given(*keys):               # a shape taken from the config class, not the file, is said
        shape = [k for k in defaulted if k in keys]
        return (f" ({', '.join(f'{k} {cfg[k]}' for k in shape)}: the {mt} config class's default, the file "
                f"gives none)") if shape else ""
    heads, kv = spec["heads"], spec["kv_heads"]
    if heads % kv:
        raise InputError(f"{path}: num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv})"
                         f"{given('num_key_value_heads')}; supported: a num_key_value_heads that divides "
                         "num_attention_heads (each key/value head serves a whole group of query heads)")
    if spec.get("experts") and spec.get("top_k", 0) > spec["experts"]:
        field = next(k for k in EXPERT_FIELDS[mt] if cfg.get(k) is not None)
        raise InputError(f"{path}: num_experts_per_tok ({spec['top_k']}) is more than {field} ({spec['experts']}); "
                         "supported: at most as many experts per token as there are experts")
    if spec.get("first_dense", 0) > spec["layers"]:
        told = "" if cfg.get("first_k_dense_replace") is not None else \
            f": the {mt} config class's default, the file gives none"
        raise InputError(f"{path}: first_k_dense_replace ({spec['first_dense']}{told}) is more than num_hidden_layers "
                         f"({spec['layers']}); supported: at most num_hidden_layers dense layers")
