"""Megatron-LM's rotary position flags: RoPE as config.json sets it (base, partial rotation,
llama3 / YaRN / linear scaling), the layers without it (--no-rope-freq), and the families
whose rotation or scaling the flags carry only in part."""
from __future__ import annotations

from itertools import groupby


# families whose RoPE rotates interleaved pairs (modular_ernie4_5.py apply_rotary_pos_emb:
# repeat_interleave of cos / sin with GLM's rotate_half): --rotary-interleaved
INTERLEAVED_ROPE = ("ernie4_5_moe",)


# families whose config scales RoPE on the full-attention layers only (Olmo3Config.
# convert_rope_params_to_dict puts rope_scaling in rope_parameters["full_attention"]; Olmo3Model
# rotates each layer with its type's, modular_olmo3.py)
FULL_LAYER_ROPE_SCALING = ("olmo3",)


# Megatron's fixed Llama 3.x scaling numbers (rotary_pos_embedding.RotaryEmbedding._apply_scaling)
# and multi-latent attention's YaRN defaults (transformer_config.MLATransformerConfig)
LLAMA3_SCALING = {"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
MLA_YARN = {"beta_fast": 32.0, "beta_slow": 1.0, "original_max_position_embeddings": 4096}


def scaling_built(m) -> bool:
    """Whether the script builds the model's RoPE scaling (rope_args): llama3, yarn, or linear by a
    whole factor."""
    return m.rope_scaling in ("llama3", "yarn") or (m.rope_scaling == "linear" and m.rope_factor == int(m.rope_factor))


def rope_args(m) -> tuple[list, list[str]]:
    """RoPE as config.json sets it: --position-embedding-type, the base (--rotary-base; Megatron's
    default is 10000, Llama 3 uses 500000, Qwen 1000000) and the long-context scaling.

    Linear scaling by a whole factor (Gemma 3's 8) is --rotary-seq-len-interpolation-factor.
    Llama 3.x scaling is --use-rope-scaling with its factor; Megatron fixes its other numbers
    (LLAMA3_SCALING), so others are a caveat. YaRN is --rotary-scaling-factor with --mscale and
    --mscale-all-dim where the model sets them (DeepSeek-V3's 1.0 and 1.0: Megatron's 0.0 would
    scale its softmax by 1.87x less). With multi-latent attention it is --rope-type yarn, whose beta
    and original-length numbers are MLATransformerConfig's (MLA_YARN); otherwise it is
    --position-embedding-type yarn with --yarn-beta-fast/slow, --yarn-original-max-position-embeddings
    and --no-yarn-correction-range-round-to-int for gpt-oss's truncate false
    (argument_utils._apply_yarn_config_from_args). Other scalings are a caveat."""
    a, caveats = ["--position-embedding-type", "yarn" if m.rope_scaling == "yarn" and not m.is_mla else "rope"], []
    if m.rope_theta != 10000:
        a += ["--rotary-base", int(m.rope_theta)]
    if m.rotary_fraction != 1:
        # the first rotary_fraction of each head rotated, the rest passed through, as transformers'
        # partial_rotary_factor (rope_utils._apply_rotary_pos_emb_bshd: t[..., :rot_dim])
        a += ["--rotary-percent", m.rotary_fraction]
    p = dict(m.rope_params)
    if m.rope_scaling == "llama3":
        a += ["--use-rope-scaling", "--rope-scaling-factor", m.rope_factor]
        if any(p.get(k, v) != v for k, v in LLAMA3_SCALING.items()):
            caveats.append(f"Llama 3 RoPE scaling numbers {p}: Megatron fixes them at {LLAMA3_SCALING}")
    elif m.rope_scaling == "yarn":
        a += ["--rotary-scaling-factor", m.rope_factor] + _given(p, mscale="--mscale", mscale_all_dim="--mscale-all-dim")
        if m.is_mla:
            a += ["--rope-type", "yarn"]
            if any(p.get(k, v) != v for k, v in MLA_YARN.items()):
                caveats.append(f"YaRN numbers {p}: Megatron's multi-latent attention fixes beta and the original "
                               f"length at {MLA_YARN}")
        else:
            a += _given(p, original_max_position_embeddings="--yarn-original-max-position-embeddings",
                        beta_fast="--yarn-beta-fast", beta_slow="--yarn-beta-slow")
            if p.get("truncate") == 0:
                a += ["--no-yarn-correction-range-round-to-int"]
    elif scaling_built(m):       # linear by a whole factor
        # transformers' linear scaling divides inv_freq by the factor (modeling_rope_utils.py
        # _compute_linear_scaling_rope_parameters); Megatron divides the positions by it, the same
        # angles (rotary_pos_embedding.py get_freqs_non_repeated: seq *= 1 / seq_len_interpolation_factor),
        # an int on the command line (arguments.py --rotary-seq-len-interpolation-factor, type=int)
        a += ["--rotary-seq-len-interpolation-factor", int(m.rope_factor)]
    elif m.rope_scaling:
        caveats.append(f"RoPE scaling {m.rope_scaling}{f' (factor {m.rope_factor:g})' if m.rope_factor else ''}: "
                       "Megatron's command line builds llama3, yarn and whole-number linear scaling only; this "
                       "script trains unscaled RoPE")
    return a, caveats


def _given(p: dict, **flags: str) -> list:
    """Each flag with the model's number for it, where the model gives one (whole numbers as
    integers: --yarn-original-max-position-embeddings takes an int)."""
    return [x for k, flag in flags.items() if k in p for x in (flag, int(p[k]) if p[k] == int(p[k]) else p[k])]


def nope_args(m) -> list:
    """--no-rope-freq for the layers without RoPE (ModelSpec.nope_layers; arguments.py
    no_rope_freq_type, attention.py: layer_number - 1's entry drops rotary_pos_emb): the integer N
    where the layers N, 2N, ... (1-based) are those and N divides the layers (TransformerConfig
    turns N into [0]*(N-1)+[1] repeated and refuses an N that does not divide), else the list
    form, 1 for a layer without RoPE, the length of the layers."""
    if not m.nope_layers:
        return []
    nope = set(m.nope_layers)
    n = min(nope) + 1
    if m.layers % n == 0 and nope == set(range(n - 1, m.layers, n)):
        return ["--no-rope-freq", n]
    runs = [(v, len(list(g))) for v, g in groupby(int(i in nope) for i in range(m.layers))]
    return ["--no-rope-freq", "+".join(f"[{v}]*{k}" for v, k in runs)]
