"""Megatron-LM's flags for what Llama 4 has beyond Llama's shapes (interleaved RoPE, the q/k
L2 norm, a sigmoid router whose score scales the expert's input), with caveats for what they
cannot build, chunked attention among them (its temperature tuning is in family_caveats)."""
from __future__ import annotations


def llama4_args(m, graphs: bool) -> tuple[list, list[str]]:
    """What Llama 4 has beyond Llama's shapes (modeling_llama4.py, transformers 5.24), with the
    flags Megatron-LM's Llama 4 example passes (examples/inference/llama_mistral):

    - RoPE on interleaved pairs (apply_rotary_emb: view_as_complex over the last dimension in
      pairs): --rotary-interleaved (rope_utils._rotate_half: x[..., ::2], x[..., 1::2]).
    - weightless L2 norms of q and k on the RoPE layers (use_qk_norm): --qk-l2-norm, which puts
      L2Norm on every layer's q and k (gpt_layer_specs.py), its layers without RoPE too, where
      Llama 4 has none (a caveat; Megatron-Bridge's own layer spec leaves them out). A norm over
      each head's dimensions commutes with RoPE's rotation, so its place before RoPE is exact.
    - the router: the top k logits through a sigmoid, not renormalised (Llama4Router):
      --moe-router-score-function sigmoid, exact at top 1 (Megatron renormalises over k > 1,
      moe_utils.topk_routing_with_score_function); and the score scales the expert's input, not
      its output (Llama4TextMoe: routed_in * router_scores): --moe-apply-probs-on-input, which
      experts.py takes at top 1 only and the fused grouped MLP of a captured MoE layer refuses
      (experts.py _is_fused_impl_supported)."""
    a, caveats = ["--rotary-interleaved"], []
    if m.chunked_layers:
        # Megatron-Core has no chunked attention: its one attention_chunk is flash-attn's inference
        # argument, fixed at 0 (transformer/attention.py); Megatron-Bridge's Llama4SelfAttention
        # chunks every layer, its NoPE ones too. The estimate times what this script runs
        # (kb/perf/compute.local_kernel_keys)
        caveats.append(f"chunked attention on {m.chunked_layers} layers (attention_chunk_size {m.attn_chunk}): "
                       "Megatron-Core has no option for it, so this script runs them as full causal attention -- "
                       f"other numerics past {m.attn_chunk:,} tokens, and more attention work, as the estimate "
                       "times it (Megatron-Bridge's Llama 4 layer spec chunks every layer)")
    if m.qk_l2_norm_layers:
        a += ["--qk-l2-norm"]
        if m.nope_layers:
            caveats.append(f"--qk-l2-norm also normalises q and k on the {len(m.nope_layers)} layers without RoPE, "
                           "where Llama 4 does not (Megatron-LM's command line puts the L2 norm on every layer)")
    if m.is_moe:
        a += ["--moe-router-score-function", "sigmoid"]
        if m.top_k > 1:
            caveats.append(f"Llama 4's top-{m.top_k} sigmoid scores are not renormalised; Megatron's sigmoid router "
                           "renormalises them over the k")
        if m.top_k == 1 and not graphs:
            a += ["--moe-apply-probs-on-input"]
        else:
            caveats.append("Llama 4 scales each expert's input by its router score; Megatron scales the output here ("
                           + ("--moe-apply-probs-on-input takes top 1 only" if m.top_k > 1 else
                              "the fused grouped MLP of a captured MoE layer refuses --moe-apply-probs-on-input")
                           + "): same shapes, other numerics")
    return a, caveats
