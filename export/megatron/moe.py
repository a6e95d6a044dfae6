"""Megatron-LM's mixture-of-experts flags: the experts, their dispatcher and the MoE layers'
pattern (moe_args), and the router's scoring, scaling and group-limited routing as
config.json sets them (router_group_args), with caveats where Megatron routes otherwise."""
from __future__ import annotations


# routers that add their correction bias to softmax scores (ERNIE 4.5: Ernie4_5_MoeTopKRouter picks
# the top k of softmax + e_score_correction_bias, weighs them by the softmax renormalised):
# Megatron's expert bias is taken only with sigmoid scores (TransformerConfig), so the script
# routes by the softmax alone (Megatron's default softmax router, renormalised over the k) and
# says so (FAMILY_CAVEATS)
SOFTMAX_BIAS_ROUTERS = ("ernie4_5_moe",)


def moe_args(m, graphs: bool = False) -> list[str]:
    """Experts, router and shared experts of the MoE layers, the local experts run as one grouped
    GEMM (--moe-grouped-gemm, as NVIDIA's MoE recipes run them and as the estimate's per-expert
    overhead assumes, kb/perf/step.moe_layer_overhead).

    Leading dense layers (DeepSeek's first_k_dense_replace) are --moe-layer-freq's list form,
    0 dense and 1 MoE per layer (arguments.py moe_freq_type), as is every Nth layer MoE (Llama 4
    Maverick); without either every layer is MoE.
    The shared experts are one MLP of their summed width (--moe-shared-expert-intermediate-size,
    kb/schema.shared_width), gated where the model gates them (Qwen2-MoE). DeepSeek-V3's
    aux-loss-free correction bias is --moe-router-enable-expert-bias, which TransformerConfig
    accepts only with sigmoid (or sqrtsoftplus) scores: DeepSeek-V3's scoring_func is sigmoid.
    Tokens reach their experts by all-to-all, which the estimate times (kb/perf/step.py), not by
    Megatron-LM's default allgather dispatcher (arguments.py: "We recommend using 'alltoall'
    when applying expert parallelism"). Under full-iteration CUDA graphs (``graphs``) the
    dispatcher is the flex one on HybridEP, the backend that pads to a per-rank capacity
    (cuda_graph_args)."""
    dispatch = ["flex", "--moe-flex-dispatcher-backend", "hybridep"] if graphs else ["alltoall"]
    a = ["--num-experts", m.experts, "--moe-router-topk", m.top_k, "--moe-ffn-hidden-size", m.expert_ffn,
         "--moe-grouped-gemm", "--moe-token-dispatcher-type", *dispatch]
    if m.first_dense:
        a += ["--moe-layer-freq", f"([0]*{m.first_dense}+[1]*{m.moe_layers})"]
    elif m.moe_every > 1:
        # the list form: Megatron's integer N makes layer 0 MoE (arguments.py moe_freq_type,
        # i % N == 0), where transformers' interleave step makes layer N - 1 MoE
        rest = m.layers % m.moe_every
        a += ["--moe-layer-freq", f"([0]*{m.moe_every - 1}+[1])*{m.layers // m.moe_every}" + (f"+[0]*{rest}" if rest else "")]
    if m.shared_width:
        a += ["--moe-shared-expert-intermediate-size", m.shared_width]
        if m.shared_gate:
            a += ["--moe-shared-expert-gate"]
    if m.router_bias and m.family not in SOFTMAX_BIAS_ROUTERS:
        a += ["--moe-router-enable-expert-bias", "--moe-router-score-function", "sigmoid"]
    if m.router_pre_softmax and not m.router_bias:
        # softmax over all experts, then the top k, not renormalised (moe_utils.py
        # topk_routing_with_score_function, use_pre_softmax), as norm_topk_prob false weighs them;
        # the sigmoid router ignores the flag (router_group_args says so)
        a += ["--moe-router-pre-softmax"]
    return a


# how many of a group's best scores sum to its score, per config.json topk_method (transformers
# 5.24: DeepseekV3TopkRouter and Glm4MoeTopkRouter .topk(2).sum(), DeepseekV2TopkRouter .max())
GROUP_SCORE_TOP = {"noaux_tc": 2, "group_limited_greedy": 1}


def router_group_args(m) -> tuple[list, list[str]]:
    """DeepSeek's routing numbers (ModelSpec.router_*). routed_scaling_factor is
    --moe-router-topk-scaling-factor: Megatron multiplies the top k's weights by it after any
    renormalisation (moe_utils.topk_routing_with_score_function), where transformers does.
    Group-limited routing is --moe-router-num-groups and --moe-router-group-topk, whose group
    score is the sum of the group's top (topk // group_topk) scores (moe_utils.group_limited_topk):
    the model's only where that count is its own (GROUP_SCORE_TOP; DeepSeek-V3's 8 // 4 = 2),
    else a caveat: DeepSeek-V2's best-score groups with 6 // 3 = 2 would be picked by another rule.
    A sigmoid router (DeepSeek-V3's correction bias, moe_args) whose config.json says norm_topk_prob
    false weighs its top k by their sigmoid scores as they are; Megatron's sigmoid router divides
    them by their sum whenever k > 1, whatever --moe-router-pre-softmax says (moe_utils.py
    topk_routing_with_score_function, NVIDIA/Megatron-LM@d98e8a6 line 929), and has no flag
    against it: a caveat."""
    a, caveats = [], []
    if m.router_scale != 1:
        a += ["--moe-router-topk-scaling-factor", m.router_scale]
    if m.router_bias and m.router_pre_softmax and m.top_k > 1:
        caveats.append(f"norm_topk_prob false: the model weighs its top {m.top_k} experts by their sigmoid scores "
                       "as they are; Megatron's sigmoid router renormalises them over the k (no flag turns that "
                       "off): same shapes, other routing weights")
    if not m.group_limited:
        return a, caveats
    if m.top_k // m.router_group_topk == GROUP_SCORE_TOP[m.router_topk_method]:
        return a + ["--moe-router-num-groups", m.router_groups, "--moe-router-group-topk", m.router_group_topk], caveats
    caveats.append(f"group-limited routing ({m.router_topk_method}: {m.router_group_topk} of {m.router_groups} "
                   f"groups, each scored by its top {GROUP_SCORE_TOP[m.router_topk_method]}): Megatron scores a "
                   f"group by its top {m.top_k // m.router_group_topk} (top k // group top k), another rule; "
                   "this script routes over all experts")
    return a, caveats
