"""The model Megatron-LM builds (model_args): the shape the estimate sized -- layers, widths,
heads, MLA, norms and their epsilon, activation, biases, position embedding -- gathered with
the RoPE, MoE, Llama 4 and attention-backend flags of the modules beside it, and caveats for
what its command line cannot build."""
from __future__ import annotations

from ..target import Target
from ..torchtitan_build import scales_query_by_position
from .attention import attention_backend_args
from .cuda_graphs import graphed_moe
from .family_caveats import FAMILY_CAVEATS, GEMMA_FAMILIES, gemma_caveats
from .llama4 import llama4_args
from .moe import moe_args, router_group_args
from .rope import FULL_LAYER_ROPE_SCALING, INTERLEAVED_ROPE, nope_args, rope_args


def model_args(tg: Target) -> tuple[list[str], list[str]]:
    """The model Megatron builds: the shape the estimate sized, and caveats for what its command
    line cannot build (megatron/training/arguments.py; TransformerConfig fields become flags
    through argument_utils.ArgumentGroupFactory)."""
    m, s = tg.job.model, tg.job.training.seq_len
    a = ["--num-layers", m.layers, "--hidden-size", m.hidden, "--ffn-hidden-size", m.ffn,
         "--num-attention-heads", m.heads]
    if m.is_mla:
        a += mla_args(m)
    else:
        if m.kv_heads < m.heads:
            a += ["--group-query-attention", "--num-query-groups", m.kv_heads]
        if m.head_dim and m.head_dim * m.heads != m.hidden:
            a += ["--kv-channels", m.head_dim]
    if m.qk_norm:
        a += ["--qk-layernorm"]
    if m.family in INTERLEAVED_ROPE:
        a += ["--rotary-interleaved"]
    if m.attn_sinks:
        # a learned logit per head beside the scores (TransformerConfig.softmax_type)
        a += ["--softmax-type", "learnable"]
    if m.window_masks(s):
        # TE's window is (left, right) past and future tokens; HF's sliding_window counts the query
        # itself, so w - 1 to the left (Megatron-Bridge gpt_oss_bridge.py: sliding_window - 1, 0).
        # Every Nth layer full: window_attn_skip_freq (transformer/utils.py is_layer_window_attention).
        # A window of at least the sequence masks nothing and is left out: TE still treats any
        # window as sliding-window attention and drops kernels for it -- cuDNN fused attention
        # under context parallelism with cp_comm_type p2p or a2a+p2p (Megatron's default p2p), with
        # dropout, and with FP8 attention on Hopper (NVIDIA/TransformerEngine@d0067d0
        # pytorch/attention/dot_product_attention/utils.py get_attention_backend, lines 1261, 1344)
        a += ["--window-size", f"{m.sliding_window - 1},0"]
        if m.full_attn_every:
            a += ["--window-attn-skip-freq", m.full_attn_every]
    positions, caveats = max_positions(m, s)
    a += ["--seq-length", s, "--max-position-embeddings", positions]
    if m.learned_pos:
        a += ["--position-embedding-type", "learned_absolute"]
        rope = []
    else:
        rope, more = rope_args(m)
        caveats += more
    a += rope + nope_args(m)
    if m.norm == "rmsnorm":
        a += ["--normalization", "RMSNorm"]
        if m.family in GEMMA_FAMILIES:
            # Gemma's x / rms(x) x (1 + w): TransformerConfig.layernorm_zero_centered_gamma, which TENorm
            # passes to te.pytorch.RMSNorm as zero_centered_gamma, y = x / RMS(x) x (1 + gamma)
            # (extensions/transformer_engine.py line 1100; the fused norm of the QKV and fc1 linears
            # too, line 1539), Megatron-Bridge's Gemma providers' setting; the q/k norms are TENorm alike
            a += ["--apply-layernorm-1p"]
    a += norm_eps_args(m)
    act, more = activation_args(m)
    a += act
    caveats += more
    if not m.linear_bias:
        a += ["--disable-bias-linear"]
    if m.qkv_bias:
        a += ["--add-qkv-bias"]
    if not m.tied:
        a += ["--untie-embeddings-and-output-weights"]
    # no dropout, where Megatron defaults to 0.1 for both: the memory estimate keeps no dropout
    # masks, today's LLMs pre-train without (Llama 3, Qwen3, DeepSeek-V3 config.json:
    # attention_dropout 0.0), and under a full-iteration graph recomputation refuses it
    # (TransformerConfig: "attention dropout is not supported with graphed attention recomputation")
    a += ["--attention-dropout", 0.0, "--hidden-dropout", 0.0]
    if m.attn_dropout or m.resid_dropout:
        # a config.json that trains with dropout (Seed-OSS's 0.1 defaults): the script does not
        caveats.append(f"config.json's dropout (attention_dropout {m.attn_dropout:g}, residual dropout "
                       f"{m.resid_dropout:g}) is turned off here (--attention-dropout 0.0 --hidden-dropout 0.0), "
                       "as the Megatron memory estimate sizes no dropout masks")
    backend, more = attention_backend_args(tg)
    a += backend
    caveats += more
    if m.is_moe:
        a += moe_args(m, graphs=graphed_moe(tg))
        more, said = router_group_args(m)
        a += more
        caveats += said
    if m.family == "llama4":
        more, said = llama4_args(m, graphs=graphed_moe(tg))
        a += more
        caveats += said
    if m.parallel_attn:
        caveats.append("parallel attention and MLP (one shared input norm): Megatron-Core's GPT layer runs them in "
                       "sequence; the same weights bar one norm a layer, a different model")
    if m.sandwich_norm:
        caveats.append("post-attention and post-MLP norms (each sublayer's output normalised before its residual "
                       "add, four norms a layer): Megatron's command line has no flag for them (Megatron-Bridge's "
                       "Gemma 2 and Gemma 3 layer specs build them)")
    if m.attn_softcap:
        # Megatron-Core caps no attention logits: TransformerConfig has no soft-cap field and its
        # one flash-attn call fixes softcap at 0.0 (transformer/attention.py, NVIDIA/Megatron-LM@d98e8a6)
        caveats.append(f"attention logit soft-capping at {m.attn_softcap:g} (attn_logit_softcapping: "
                       "scores = cap x tanh(scores / cap)): Megatron-Core has no option for it; this script trains "
                       "uncapped scores, same shapes, other numerics")
    caveats += gemma_caveats(m)
    if m.family != "ministral3" or scales_query_by_position(m):
        caveats += FAMILY_CAVEATS.get(m.family, [])
    if m.family in FULL_LAYER_ROPE_SCALING and m.rope_scaling and m.sliding_layers:
        caveats.append(f"RoPE scaling {m.rope_scaling} (factor {m.rope_factor:g}) on the full-attention layers only, "
                       "the sliding-window ones unscaled (OLMo 3's rope_parameters by layer type): Megatron builds one "
                       "RotaryEmbedding for every layer, so this script scales all of them; same shapes, other "
                       "numerics")
    if m.o_bias and not m.linear_bias:
        caveats.append(f"o_proj's bias (attention_out_bias, {m.hidden} parameters a layer): Megatron biases q, k and v "
                       "alone (--add-qkv-bias) or every linear (--add-bias-linear); this script leaves it out")
    if m.embed_norm:
        caveats.append("embedding LayerNorm (BLOOM): Megatron's command line has no flag for it")
    return a, caveats


# TransformerConfig.layernorm_epsilon, set by --norm-epsilon (megatron/core/transformer/
# transformer_config.py line 201, NVIDIA/Megatron-LM@d98e8a6)
MEGATRON_NORM_EPS = 1e-5


def norm_eps_args(m) -> list:
    """--norm-epsilon where the model's (config.json rms_norm_eps: Qwen, Gemma, DeepSeek 1e-6)
    is not Megatron's default: every norm the GPT layer spec builds takes config.layernorm_epsilon
    as its eps -- the input and pre-MLP norms (transformer_layer.py lines 371, 407), the norm fused
    into the QKV and fc1 linears (extensions/transformer_engine.py line 1522), the q/k norms
    (attention.py line 1738), MLA's q/kv down-projection norms (multi_latent_attention.py line 623)
    and the final norm (transformer_block.py line 391)."""
    return ["--norm-epsilon", m.norm_eps] if m.norm_eps != MEGATRON_NORM_EPS else []


def max_positions(m, seq_len: int) -> tuple[int, list[str]]:
    """--max-position-embeddings: the model's, as config.json gives it (the table a learned
    position embedding has, which the estimate counts and a checkpoint of the model holds), and at
    least the sequence (validate_args: max_position_embeddings >= seq_length). With RoPE it sizes
    no weight (GPTModel keeps it as max_sequence_length for export and inference), so the
    model's value only keeps the script's model the model; where config.json gives none, the
    sequence. A learned table shorter than the sequence cannot hold it: the script builds one of
    the sequence's length, another model than config.json's."""
    table = m.learned_pos or m.max_positions
    if m.learned_pos and m.learned_pos < seq_len:
        return seq_len, [f"learned position embedding of {m.learned_pos} positions (config.json) is shorter than "
                         f"the sequence, {seq_len}: this script builds a table of {seq_len}, which a checkpoint of "
                         "the model cannot fill"]
    return max(table, seq_len), []


def activation_args(m) -> tuple[list[str], list[str]]:
    """The MLP's activation. SwiGLU is --swiglu (SiLU, gated). A gated GELU (Gemma's GeGLU) has
    one command-line form, --quick-geglu (argument_utils.py: gated_linear_unit with
    quick_gelu, x * sigmoid(1.702 x)): the same three projections and memory, with the sigmoid
    approximation of GELU rather than Gemma's tanh one. gpt-oss gates with exactly that
    quick-GELU, multiplies by (up + 1) and clamps at 7 (modeling_gpt_oss.py GptOssExperts, alpha
    1.702, swiglu_limit 7.0): --glu-linear-offset 1 and --activation-func-clamp-value 7, as
    Megatron-Bridge's gpt-oss provider sets them. Plain GELU is Megatron's default."""
    if m.family == "gpt_oss":
        return ["--quick-geglu", "--glu-linear-offset", 1.0, "--activation-func-clamp-value", 7.0], []
    if m.mlp == "swiglu":
        return ["--swiglu"], []
    if m.mlp == "geglu":
        return ["--quick-geglu"], ["GeGLU with tanh GELU (Gemma): Megatron's command line gates GELU only as "
                                   "--quick-geglu, x*sigmoid(1.702x); same shapes and memory, other numerics"]
    return [], []


def mla_args(m) -> list[str]:
    """Multi-head latent attention (DeepSeek-V2/V3): q/kv low-rank projections and the split of
    a head into a no-position part and a RoPE part (arguments.py _add_mla_args;
    --multi-latent-attention excludes --group-query-attention in validate_args)."""
    a = ["--multi-latent-attention", "--kv-lora-rank", m.kv_lora_rank, "--qk-head-dim", m.qk_nope_dim,
         "--qk-pos-emb-head-dim", m.qk_rope_dim, "--v-head-dim", m.v_head_dim]
    return a + (["--q-lora-rank", m.q_lora_rank] if m.q_lora_rank else [])
