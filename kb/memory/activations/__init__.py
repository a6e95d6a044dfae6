"""Activation memory: bytes one rank keeps for backward, per layer and per micro-batch.

Counted tensor by tensor for each implementation profile, because implementations differ
(docs/reference/memory-models.md section 11.4, rule 2):

* ``hf``: transformers' modules (also what DeepSpeed users run). Per token, for a Llama layer
  with SDPA/flash attention: each RMSNorm keeps its fp32 input (4h), the bf16 normalised
  value (2h) and its output (2h, the next projection's input) = 8h; attention keeps q, k
  (after RoPE), v and the output: 2q + 2kv + 2kv + 2q = 4q + 4kv bytes, plus the fp32
  log-sum-exp (4 per head); the gated MLP keeps gate out, act out, up out and their product:
  8F. Total 16h + 4q + 4kv + 8F: 49.03 h for Llama 3 8B, 48.53 h for 70B, 20.07 h for one
  TP=8 shard of 70B, 58.07 h for the 1B-with-head-dim-128 variant -- the measured
  per_layer_over_sbh of benchmarks/calibration/h100_hf_activations.jsonl to 0.1%.
  Eager attention keeps the fp32 softmax and bf16 probabilities (6 bytes x heads x s per
  token) and the K/V expanded to all heads by repeat_kv (4 (q - kv)); the measured eager rows
  (100.0 / 148.0 / 244.0 h at s = 1k / 2k / 4k) follow.
* ``megatron``: Megatron-Core with Transformer Engine: fused LayerNorm-Linear keeps input and
  normalised output (4h per norm), flash attention 4q + 4kv + LSE, fused SwiGLU keeps fc1's
  output (4F) and fc2's input (2F) = 6F (memory-models.md section 10, Korthikanti et al.
  2022 Table 2 structure). FP8 recipes keep the GEMM inputs (ln outputs, fc2 input) in FP8.
* ``torch`` (fsdp profile: torchtitan's Llama): nn.RMSNorm keeps input and output (4h),
  flash attention as above, unfused SwiGLU 8F: 41.0 h for Llama 3 8B against the 41.5 h that
  memory-models.md section 10 measured.

Tensor parallelism divides the attention and MLP internals by TP; the norm/residual part is
divided too only with sequence parallelism (Megatron's --sequence-parallel, torchtitan's
enable_sequence_parallel) (Korthikanti Table 2: 10 + 24/t without SP,
34/t with). Context parallelism divides the tokens. Full recomputation keeps only each
layer's input (2h; measured 2.0 h in every checkpointed row; 4h where the residual stream is
fp32, with fp32 weights under autocast). Selective recomputation
(Megatron core_attn) only drops the s^2 attention terms, which flash attention never keeps
(Megatron-LM issue #464). torchtitan's per-op selective AC keeps the attention outputs and
every other matmul output. Per-module recomputation (``modules``: Megatron's --recompute-modules
core_attn layernorm moe_act, and mla_up_proj on an MLA model) also drops each norm's output, the
experts' activation output and MLA's up-projected q, k and v.

One module a concept, each importing only the ones before it: implementation.py (who runs the
job, in which dtypes), eager_scores.py (eager attention's bytes per score, the attention
dropout's), attention.py, norms.py (with the residual dropout), adapters.py (PEFT's LoRA),
mlp.py (dense and MoE), layer.py (layer_bytes_per_token) and stage.py (a stage's peak, the PPO
critic, the backward transient). This file re-exports what the rest of shardwise imports; a
monkeypatch of a name here does not reach the module that calls it: patch that module.
"""
from .implementation import (ALL_EXPERTS_FAMILIES, experts_cast_by_autocast,
                             fp32_weights_under_autocast, profile, routed_copies, torchtitan_runs)
from .eager_scores import (attention_dropout_applied, BF16_SOFTMAX_BACKWARD_PER_SCORE,
                           BF16_SOFTMAX_FAMILIES, BF16_SOFTMAX_SAVED_PER_SCORE,
                           EAGER_BACKWARD_PER_SCORE, EAGER_DROPOUT_COPY_PER_SCORE,
                           EAGER_DROPOUT_MASK_PER_SCORE, eager_dropout_per_score, eager_per_score,
                           EAGER_SAVED_PER_SCORE)
from .attention import (attention_saved_bytes, dense_local_mask, kernel_training,
                        LAYER_FP32_ROPE_FAMILIES, layer_rope_bytes, local_layers, local_mask_bytes,
                        local_widths, masked_gqa_bytes, query_scale_bytes, QUERY_SCALE_FAMILIES,
                        sdpa_gets_mask)
from .norms import (autocast_input_casts, fp32_residual_extra, FP32_SCALED_NORMS, FUSED_SHARED_MLP,
                    l2_qk_norm_bytes, POST_NORM_FAMILIES, qk_norm_bytes, residual_dropout_bytes,
                    RESIDUAL_DROPOUT_MASK_BYTES, RESIDUAL_DROPOUT_SITES, residual_norm_bytes)
from .adapters import adapter_input_cast, adapter_saved_bytes, adapters_in_fp32, own_input_copies
from .mlp import (CLAMPED_GLU_BYTES, dense_mlp_bytes, FP32_LINEAR_ROUTER_FAMILIES, fp32_router_copy,
                  FP32_ROUTER_FAMILIES, moe_mlp_bytes, PAGED_STASH_FACTOR, paged_stash_factor,
                  routed_dtype_factor, routed_token_bytes, router_score_bytes, shared_expert_bytes,
                  shared_gate_bytes)
from .layer import checkpointed_input_bytes, layer_bytes_per_token, torchtitan_selective_bytes
from .stage import (backward_transient, BACKWARD_TRANSIENT_H, forward_mask_bytes, mask_kinds,
                    offloaded_bytes, ppo_critic_activations, RECOMPUTE_EXTRA_H,
                    stage_activations, tokens_local)

# what other modules, tests and benchmarks import from shardwise.kb.memory.activations
__all__ = ["adapter_input_cast", "adapter_saved_bytes", "adapters_in_fp32", "ALL_EXPERTS_FAMILIES",
           "attention_dropout_applied", "attention_saved_bytes", "autocast_input_casts",
           "backward_transient", "BACKWARD_TRANSIENT_H", "BF16_SOFTMAX_BACKWARD_PER_SCORE",
           "BF16_SOFTMAX_FAMILIES", "BF16_SOFTMAX_SAVED_PER_SCORE", "checkpointed_input_bytes",
           "CLAMPED_GLU_BYTES", "dense_local_mask", "dense_mlp_bytes", "EAGER_BACKWARD_PER_SCORE",
           "EAGER_DROPOUT_COPY_PER_SCORE", "EAGER_DROPOUT_MASK_PER_SCORE",
           "eager_dropout_per_score", "eager_per_score", "EAGER_SAVED_PER_SCORE",
           "experts_cast_by_autocast", "forward_mask_bytes", "FP32_LINEAR_ROUTER_FAMILIES",
           "fp32_residual_extra", "fp32_router_copy", "FP32_ROUTER_FAMILIES", "FP32_SCALED_NORMS",
           "fp32_weights_under_autocast", "FUSED_SHARED_MLP", "kernel_training", "l2_qk_norm_bytes",
           "layer_bytes_per_token", "LAYER_FP32_ROPE_FAMILIES", "layer_rope_bytes", "local_layers",
           "local_mask_bytes", "local_widths", "mask_kinds", "masked_gqa_bytes",
           "moe_mlp_bytes", "offloaded_bytes",
           "own_input_copies", "PAGED_STASH_FACTOR", "paged_stash_factor", "POST_NORM_FAMILIES",
           "ppo_critic_activations", "profile", "qk_norm_bytes", "query_scale_bytes",
           "QUERY_SCALE_FAMILIES", "RECOMPUTE_EXTRA_H", "residual_dropout_bytes",
           "RESIDUAL_DROPOUT_MASK_BYTES", "RESIDUAL_DROPOUT_SITES", "residual_norm_bytes",
           "routed_copies", "routed_dtype_factor", "routed_token_bytes", "router_score_bytes",
           "sdpa_gets_mask", "shared_expert_bytes", "shared_gate_bytes", "stage_activations",
           "tokens_local", "torchtitan_runs", "torchtitan_selective_bytes"]
