"""The values each job setting may take: one list each, read by the schema (kb/schema.py) and by
the command line's flags (cli/options.py) without importing pydantic (the CLI's --help stays light)."""
from __future__ import annotations

from typing import Literal

# Activation recomputation modes of a layout. "modules": Megatron-Core's per-module selective
# recompute, --recompute-granularity selective --recompute-modules core_attn layernorm moe_act,
# and mla_up_proj on an MLA model (Megatron-Bridge docs, MoE-specific recomputation:
# recompute_modules=["moe_act", "layernorm"]; its DeepSeek-V3 recipes: ["mla_up_proj", ...];
# kb/memory/activations/).
RECOMPUTE = ("none", "selective", "full", "modules")
# The same modes from the least recomputed to the most: per-module recomputation reruns the
# attention core, the norms and the expert activation, full the whole layer.
RECOMPUTE_BY_COST = ("none", "selective", "modules", "full")
# Each mode of RECOMPUTE's place in RECOMPUTE_BY_COST (index arrays of modes map through it).
RECOMPUTE_COST_RANK = tuple(RECOMPUTE_BY_COST.index(r) for r in RECOMPUTE)

Precision = Literal["bf16", "pure-bf16", "fp8"]
Framework = Literal["megatron", "deepspeed", "fsdp", "hf"]
TrainingType = Literal["pretrain", "finetune", "lora", "qlora", "rlhf"]
# What --training rlhf trains, and so which models share the GPUs (kb/schema.TrainingSpec.rlhf_trained):
# "ppo" policy and value trained, reference and reward frozen (TRL PPOTrainer, OpenRLHF, verl);
# "grpo" the policy trained beside a frozen reference, the reward a function (TRL GRPOTrainer with
# beta > 0, verl's use_kl_loss); "dpo" the policy beside a frozen reference, each preference pair
# two sequences, chosen and rejected, in one forward (TRL DPOTrainer).
RlAlgorithm = Literal["ppo", "grpo", "dpo"]
# Attention kernels: "flash" a fused kernel of the FlashAttention-3 / cuDNN class (Transformer
# Engine's fused attention, flash-attn 3, PyTorch SDPA where it picks cuDNN: torch >= 2.11 on
# Hopper and Blackwell); "sdpa" PyTorch's SDPA, timed as flash except where transformers hands
# it a dense mask on sliding-window or chunked layers (kb/memory/activations.dense_local_mask);
# "flash2" FlashAttention-2 (the flash-attn 2 package, transformers'
# attn_implementation="flash_attention_2", PyTorch SDPA's flash backend, its default before
# cuDNN); "eager" the unfused matmul-softmax-matmul.
Attention = Literal["flash", "sdpa", "flash2", "eager"]
# CUDA graphs: "none", or Megatron-Core's capture of the whole training iteration in one graph
# (--cuda-graph-impl full_iteration), which NVIDIA's MoE recipes run from the NeMo 26.06 stack on
# (kb/perf/step.moe_layer_overhead says what it removes, kb/memory/activations what it adds).
CudaGraphs = Literal["none", "full-iteration"]
# What optimizer.zero_grad does between steps in a PyTorch loop (hf, fsdp): "set-to-none" frees
# the gradients (set_to_none=True, PyTorch's default since 2.0, the Trainer's and torchtitan's),
# "zeros" fills them with zeros and keeps them for the whole run (set_to_none=False).
ZeroGrad = Literal["set-to-none", "zeros"]
# PyTorch's CUDA memory allocator as the run configures it (PYTORCH_CUDA_ALLOC_CONF): "caching",
# its default, whose segments are fixed cudaMalloc blocks that smaller tensors split; "expandable"
# (expandable_segments:True), whose segments grow and give back free pages; "default" is the
# framework's own (kb/memory/overheads.allocator: torchtitan's run_train.sh sets expandable).
Allocator = Literal["default", "caching", "expandable"]
# The optimizer and its implementation (kb/memory/optimizers.py models each one's states and
# step temporaries). "adamw" is the framework profile's own AdamW (optimizers.FRAMEWORK_ADAMW:
# fused in all four profiles); the others name one implementation whatever the framework.
Optimizer = Literal["adamw", "adamw-fused", "adamw-foreach", "adamw-single", "adamw-8bit", "adafactor", "sgd"]
# --recompute: "auto" lets the advisor choose among the layout's modes (kb/layout.RECOMPUTE)
RECOMPUTE_CHOICES = ("auto",) + RECOMPUTE
# The largest micro-batch the search tries (every divisor of the global batch up to it,
# search/space.micro_batches): micro-batches above 64 sequences appear in none of the published
# runs (benchmarks/calibration/published_runs.yaml)
MBS_MAX = 64
# The micro-batches a token batch's sequence count is chosen to split well (kb/batch.py): powers
# of two, which a count of sequences near a power of two divides most often
MBS_CHOICES = tuple(2 ** i for i in range(MBS_MAX.bit_length()) if 2 ** i <= MBS_MAX)
