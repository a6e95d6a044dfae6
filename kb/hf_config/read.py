"""read_hf_config: a config.json into a ModelSpec. It finds and parses the file, unwraps a
multimodal wrapper, checks the model_type, reads each part from the module that holds it and
builds the spec; the reading notes and the consistency checks worded in the file's own field
names are here too.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError, read_input_file
from ..params import total_params
from ..schema import ModelSpec
from .adapter import refuse_adapter
from .fields import PARAMS_MAX, _field, _show, refuse_misspelt
from .json_file import _locate, _parse_json
from .naming import _name, _size_name
from .model_types import ALIASES, HYBRIDS, MLA_TYPES, SUPPORTED, _alias, _check_architectures, _sparse_attention
from .defaults import CLASS_DEFAULTS, _max_positions, norm_eps
from .rope import ROPE_THETA_DEFAULT, ROTARY_FRACTION_DEFAULTS, _ministral3_rope, _rope_layers, rope_fields
from .windows import sliding_layers, window_fields
from .linears import _activation, _bias_fields
from .dropout import _dropout_fields
from .moe import EXPERT_FIELDS, ROUTED_DEFAULTS, ROUTER_DEFAULTS, SHARED_EXPERT_DEFAULTS, _mtp_note, _router
from .vision import VISION_PARAMS, WRAPPER_VISION_PARAMS, vision_params
from .wrappers import TEXT_OWNS_HEAD, WRAPPERS, _text_config
from .family_fields import GEMMA_DEFAULTS, _ernie_fields, _gemma_fields, _llama4_fields, _olmoe_checks
from .type_fields import type_fields


def read_hf_config(path: str) -> ModelSpec:
    p = _locate(path)
    path = str(p) if p != Path(path) else path
    outer = cfg = _parse_json(read_input_file(path, "--hf-config"), path)
    refuse_adapter(cfg, path)
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
    refuse_misspelt(written, path, mt, skip=("head_dim",) if mt in MLA_TYPES else (), own=type_fields(mt))
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
