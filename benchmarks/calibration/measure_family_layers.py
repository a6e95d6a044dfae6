"""What one transformers decoder layer keeps for backward, per model family: the bytes of every
tensor autograd saves (torch.autograd.graph.saved_tensors_hooks), counted once per storage,
parameters left out, for one layer of each family's own modeling code at a small shape (bf16
weights under bf16 autocast, 256 tokens, the attention each family trains with: SDPA, or eager
where transformers refuses SDPA -- Gemma 2's soft-capping -- or has no SDPA path for its
sinks, gpt-oss). Runs on a CPU in a minute. The config each layer was built from is written
beside its figure, so the estimate reads the same model through its own config.json reader.

What the CPU does not show as a GPU would: DeepSeek's multi-latent attention has different
query and value head sizes, which the CPU's fused SDPA does not take, so it falls back to the
math path in fp32 (its attention is not comparable); RoPE's cos and sin are computed once per
model and shared by every layer, so a one-layer run charges them to the layer (0.5 h a token).

With --fp32-weights the layer holds fp32 weights under bf16 autocast, as the Trainer runs a
model loaded in fp32 (the estimate's hf recipe without ZeRO).

Run: python measure_family_layers.py > cpu_family_saved_tensors.jsonl
     python measure_family_layers.py --fp32-weights >> cpu_family_saved_tensors.jsonl
(model types as arguments measure only those: the olmo2, smollm3 and glm4_moe rows were added so,
with torch 2.13.0+cpu and transformers 5.24.0, and the olmoe, granitemoe and granitemoeshared rows,
and the llama4_text rows, and the dots1 rows, and the olmo3, exaone4 and seed_oss rows, and the
ernie4_5_moe and ministral3 rows)
(taken with torch 2.14.1, transformers 5.24.0)
"""
import json

import torch
from transformers import AutoConfig, AutoModelForCausalLM

SEQ = 256
EAGER = ("gemma2", "gpt_oss")
CAST_EXPERTS = ("llama4_text",)
# families whose _keep_in_fp32_modules_strict weights from_pretrained keeps fp32 in a bf16 model
# (ERNIE 4.5's gate.weight and e_score_correction_bias, modular_ernie4_5_moe.py), kept so here
# after the cast: its router's weight.float() is then the parameter, not a copy (the rows taken
# before this was added, none of whose families is listed, are unchanged)
KEEP_FP32 = ("ernie4_5_moe",)
FAMILIES = {
    "llama": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=2),
    "mistral": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=2,
                    sliding_window=None),
    "qwen2": dict(hidden_size=512, intermediate_size=2816, num_attention_heads=8, num_key_value_heads=2),
    "qwen3": dict(hidden_size=512, intermediate_size=1536, num_attention_heads=8, num_key_value_heads=2, head_dim=64),
    "phi3": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=8,
                 pad_token_id=0, bos_token_id=1, eos_token_id=2),
    "granite": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=2),
    "gemma": dict(hidden_size=512, intermediate_size=2048, num_attention_heads=8, num_key_value_heads=1, head_dim=64),
    "gemma2": dict(hidden_size=512, intermediate_size=2048, num_attention_heads=8, num_key_value_heads=4, head_dim=64,
                   sliding_window=4096),
    "mixtral": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=2,
                    num_local_experts=8, num_experts_per_tok=2),
    "qwen2_moe": dict(hidden_size=512, intermediate_size=1536, moe_intermediate_size=384,
                      shared_expert_intermediate_size=768, num_attention_heads=8, num_key_value_heads=2,
                      num_experts=8, num_experts_per_tok=2),
    "qwen3_moe": dict(hidden_size=512, intermediate_size=1536, moe_intermediate_size=384, num_attention_heads=8,
                      num_key_value_heads=2, head_dim=64, num_experts=8, num_experts_per_tok=2),
    "deepseek_v3": dict(hidden_size=512, intermediate_size=1536, moe_intermediate_size=256, num_attention_heads=8,
                        num_key_value_heads=8, n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1,
                        first_k_dense_replace=0, q_lora_rank=192, kv_lora_rank=128, qk_nope_head_dim=64,
                        qk_rope_head_dim=32, v_head_dim=64, n_group=1, topk_group=1),
    "gpt_oss": dict(hidden_size=512, intermediate_size=512, num_attention_heads=8, num_key_value_heads=2,
                    head_dim=64, num_local_experts=8, num_experts_per_tok=2, sliding_window=4096),
    "olmo2": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=2),
    "smollm3": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=2,
                    pad_token_id=0),
    # expert width 384, not 256: at the 256-token sequence the script would count the 256-wide shared
    # expert's bf16 weight casts as activations (saved_bytes skips a bf16 weight cast only where its first dimension is not the sequence)
    "glm4_moe": dict(hidden_size=512, intermediate_size=1536, moe_intermediate_size=384, num_attention_heads=8,
                     num_key_value_heads=2, head_dim=64, n_routed_experts=8, num_experts_per_tok=2,
                     n_shared_experts=1, first_k_dense_replace=0, attention_bias=True, use_qk_norm=True,
                     partial_rotary_factor=0.5),
    # Mixtral's expert width: PEFT's merged down-projection gradient then outweighs the attention's
    # backward at 1,024 tokens, which measure_peft_experts.py's two-length fit needs
    "olmoe": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=2,
                  num_experts=8, num_experts_per_tok=2),
    # Granite 3.x MoE's multipliers as granite-3.1-3b-a800m-instruct's config.json gives them
    "granitemoe": dict(hidden_size=512, intermediate_size=256, num_attention_heads=8, num_key_value_heads=2,
                       num_local_experts=8, num_experts_per_tok=2, embedding_multiplier=12.0,
                       attention_multiplier=0.015625, residual_multiplier=0.22, logits_scaling=6.0),
    "granitemoeshared": dict(hidden_size=512, intermediate_size=256, shared_intermediate_size=512,
                             num_attention_heads=8, num_key_value_heads=2, num_local_experts=8,
                             num_experts_per_tok=2, embedding_multiplier=12.0, attention_multiplier=0.015625,
                             residual_multiplier=0.22, logits_scaling=6.0),
    # dots.llm1's layer: GLM-4.5's MoE (one shared expert, sigmoid router) under Qwen3's per-head
    # q/k norms, with its own norm_topk_prob default (false); experts 384 wide, not 256: a shared
    # expert of SEQ's width has weights of SEQ rows, whose fp32-weight casts the skip below keeps
    "dots1": dict(hidden_size=512, intermediate_size=1536, moe_intermediate_size=384, num_attention_heads=8,
                  num_key_value_heads=2, head_dim=64, n_routed_experts=8, num_experts_per_tok=2,
                  n_shared_experts=1, first_k_dense_replace=0),
    # OLMo 3: OLMo 2's layer (post-norms, whole-projection q/k norms) on a sliding-window layer
    # (layer 0 of its default pattern), whose rotary embedding is built per layer type
    "olmo3": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=2),
    # EXAONE 4.0: OLMo 2's post-norms with Qwen3's per-head q/k norms and Llama's RMSNorm; layer 0
    # of its default pattern slides, with RoPE (its full layers have none)
    "exaone4": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=2,
                    head_dim=64),
    # Seed-OSS: Llama with q/k/v biases (and an o_proj bias here, attention_out_bias), its dropouts
    # off: SeedOssConfig's 0.1 defaults add their masks, measured apart (measure_dropout_layers.py)
    "seed_oss": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=2,
                     head_dim=64, attention_out_bias=True, attention_dropout=0.0, residual_dropout=0.0),
    # ERNIE 4.5 MoE: layer 0 made a MoE layer (moe_layer_start_index 0; the checkpoints' first is
    # dense), one shared expert beside 8 routed of 384, the fp32 router with its correction bias
    # (kept fp32 as from_pretrained keeps it: KEEP_FP32), interleaved fp32 RoPE
    "ernie4_5_moe": dict(hidden_size=512, intermediate_size=1536, moe_intermediate_size=384, num_attention_heads=8,
                         num_key_value_heads=2, moe_num_experts=8, moe_k=2, moe_num_shared_experts=1,
                         moe_layer_start_index=0),
    # Ministral 3: Mistral's layer with the query scaled by position (llama_4_scaling_beta 0.1 of
    # Ministral3Config's default rope_parameters)
    "ministral3": dict(hidden_size=512, intermediate_size=1792, num_attention_heads=8, num_key_value_heads=2,
                       head_dim=64),
    # Llama 4 Scout's pattern (every layer MoE, top 1 of 16 with a shared expert; layer 0 a RoPE
    # layer with the L2 q/k norms) at 8 experts: transformers runs every token through each
    "llama4_text": dict(hidden_size=512, intermediate_size=1792, intermediate_size_mlp=3584, num_attention_heads=8,
                        num_key_value_heads=2, head_dim=64, num_local_experts=8, num_experts_per_tok=1),
}


def layer_saved_bytes(model, decoder, dtype: torch.dtype, hidden: int, skip=lambda t: False) -> float:
    """Bytes per token that one forward of decoder.layers[0] (SEQ tokens, bf16 autocast) saves
    for backward: every saved tensor once per storage, the model's parameters and what ``skip``
    names (weight casts) left out. measure_saved_tensors.py counts its LoRA layers with it."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params and not skip(t):
            seen[st.data_ptr()] = max(seen.get(st.data_ptr(), 0), st.nbytes())
        return t

    # the layer's input as a model hands it over: the output of the layer before, not a leaf
    # (autocast caches its cast of a leaf that needs a gradient, as of a weight, so a leaf input
    # read by several linears -- OLMo 2's q, k and v, with fp32 weights -- would be cast once)
    x = torch.randn(1, SEQ, hidden, dtype=dtype, requires_grad=True) * 1.0
    pos = torch.arange(SEQ)[None]
    # OLMo 3 builds its cos and sin per layer type (Olmo3RotaryEmbedding.forward's layer_type)
    types = getattr(decoder.config, "layer_types", None)
    rope = decoder.rotary_emb(x, pos, types[0]) if type(decoder).__name__ == "Olmo3Model" else decoder.rotary_emb(x, pos)
    kw = dict(attention_mask=None, position_ids=pos, position_embeddings=rope)
    with torch.autocast("cpu", torch.bfloat16), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        decoder.layers[0](x, **kw)
    return sum(seen.values()) / SEQ


def weight_shaped(model, only_2d: bool = False):
    """A test for tensors shaped like one of the model's weights (or its transpose): autocast's
    casts of them, which the estimate counts apart (compute copies), not as activations."""
    shapes = {tuple(p.shape) for p in model.parameters() if p.dim() == 2 or not only_2d}
    return lambda t: tuple(t.shape) in shapes or tuple(t.shape[::-1]) in shapes


def saved_bytes(model_type: str, shape: dict, weights: torch.dtype) -> tuple[float, dict]:
    torch.manual_seed(0)
    cfg = AutoConfig.for_model(model_type, num_hidden_layers=1, vocab_size=1024, **shape)
    cfg._attn_implementation = "eager" if model_type in EAGER else "sdpa"
    model = AutoModelForCausalLM.from_config(cfg).to(weights)
    if model_type in KEEP_FP32:
        keep = model._keep_in_fp32_modules_strict or []
        for name, p in model.named_parameters():
            if any(k in name for k in keep):
                p.data = p.data.float()
    model.train()
    skip = lambda t: False  # noqa: E731
    if weights == torch.float32:
        # autocast's bf16 casts of the fp32 weights (a weight's shape, never SEQ rows)
        # (and of Llama 4's 3-D experts, which its torch.bmm casts where other families' stay fp32)
        cast = weight_shaped(model, only_2d=model_type not in CAST_EXPERTS)
        skip = lambda t: t.dtype == torch.bfloat16 and t.shape[0] != SEQ and cast(t)  # noqa: E731
    return layer_saved_bytes(model, model.model, weights, cfg.hidden_size, skip), cfg.to_dict()


if __name__ == "__main__":
    import sys
    import transformers
    weights = torch.float32 if "--fp32-weights" in sys.argv else torch.bfloat16
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    for mt, shape in FAMILIES.items():
        if only and mt not in only:
            continue
        b, cfg = saved_bytes(mt, shape, weights)
        print(json.dumps(dict(model_type=mt, attention="eager" if mt in EAGER else "sdpa", seq=SEQ,
                              weights="fp32" if weights == torch.float32 else "bf16",
                              saved_bytes_per_token=b, torch=torch.__version__,
                              transformers=transformers.__version__, config=cfg), default=str), flush=True)
