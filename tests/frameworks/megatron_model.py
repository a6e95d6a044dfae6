"""The model Megatron-LM builds from our pretrain_gpt.py scripts, as Megatron itself counts it.

For each SCRIPT,WORLD,VOCAB argument: parse_args + validate_args + TransformerConfig as in
validate_megatron.py, then Megatron's own parameter count
(megatron/training/theoretical_memory_usage.compute_weight_and_optimizer_memory, vocabulary
padded by vocab_utils.calculate_padded_vocab_size as the tokenizer setup pads it where the script gives
no --padded-vocab-size). Prints one
JSON line per script: the count and the architecture fields of the built TransformerConfig,
with the layers that Megatron's own is_layer_window_attention gives a sliding window, and
the layers it leaves RoPE out of (TransformerConfig's no_rope_freq, expanded to one entry a layer).

Two readings of Megatron's function, both because it prints its count rounded to 10M:
- the exact total is read from the function's frame on return (sys.setprofile);
- the function decides gating by args.swiglu alone, while --quick-geglu gates too
  (argument_utils.core_transformer_config_from_args): where the config gates, it is counted
  with swiglu set, which changes only its gated-MLP multiplier.
"""
import json
import sys

from megatron_args import parse
from megatron.training import theoretical_memory_usage as T  # noqa: E402
from megatron.training.vocab_utils import calculate_padded_vocab_size  # noqa: E402
from megatron.core.transformer.utils import is_layer_window_attention  # noqa: E402


def megatron_count(args) -> int:
    seen = {}

    def on_return(frame, event, arg):
        if event == "return" and frame.f_code is T.compute_weight_and_optimizer_memory.__code__:
            seen["total"] = frame.f_locals["num_total_parameters"]

    sys.setprofile(on_return)
    try:
        T.compute_weight_and_optimizer_memory(args)
    finally:
        sys.setprofile(None)
    return int(seen["total"])


for item in sys.argv[1:]:
    script, world, vocab = item.rsplit(",", 2)
    args, cfg = parse(script, world)
    if args.padded_vocab_size is None:
        # as build_tokenizer's _set_padded_vocab_size: a --padded-vocab-size is the model's as it is
        args.padded_vocab_size = calculate_padded_vocab_size(int(vocab), args.make_vocab_size_divisible_by,
                                                             args.tensor_model_parallel_size, False)
    args.swiglu = args.swiglu or cfg.gated_linear_unit
    freq = cfg.moe_layer_freq
    print(json.dumps({
        "script": script, "params": megatron_count(args), "vocab_rows": args.padded_vocab_size, "gated": cfg.gated_linear_unit,
        "qk_layernorm": cfg.qk_layernorm, "mla": bool(getattr(cfg, "multi_latent_attention", False)),
        "moe_layers": (sum(freq) if isinstance(freq, list) else len(range(0, cfg.num_layers, freq)))
        if cfg.num_moe_experts else 0,
        "shared_ffn": cfg.moe_shared_expert_intermediate_size or 0, "qkv_bias": cfg.add_qkv_bias,
        "rotary_base": args.rotary_base, "rope_scaling": args.use_rope_scaling and args.rope_scaling_factor,
        # GPTModel's seq_len_interpolation_factor (argument_utils: linear position interpolation)
        "interpolation": args.rotary_seq_len_interpolation_factor,
        "rope_type": args.rope_type, "position": args.position_embedding_type,
        "yarn_factor": getattr(cfg, "rotary_scaling_factor", getattr(cfg, "yarn_rotary_scaling_factor", None)),
        "mscale_all_dim": getattr(cfg, "mscale_all_dim", getattr(cfg, "yarn_mscale_all_dim", None)),
        "window": list(cfg.window_size) if cfg.window_size else None,
        "no_rope": cfg.no_rope_freq or [], "qk_l2_norm": cfg.qk_l2_norm, "rotary_interleaved": cfg.rotary_interleaved,
        "one_plus_w_norm": cfg.layernorm_zero_centered_gamma, "norm_eps": cfg.layernorm_epsilon,
        "rotary_percent": args.rotary_percent, "score_function": cfg.moe_router_score_function,
        "pre_softmax": cfg.moe_router_pre_softmax, "probs_on_input": cfg.moe_apply_probs_on_input,
        "groups": [cfg.moe_router_num_groups, cfg.moe_router_group_topk],
        "topk_scale": cfg.moe_router_topk_scaling_factor,
        "window_layers": sum(is_layer_window_attention(cfg.window_size, cfg.window_attn_skip_freq, n)
                             for n in range(1, cfg.num_layers + 1)),
    }))
