"""The values each job setting may take: one list each, read by the schema (kb/schema.py) and by
the command line's flags (cli/options.py) without importing pydantic (the CLI's --help stays light)."""
from __future__ import annotations

from typing import Literal

# Activation recomputation modes of a layout. "modules": Megatron-Core's per-module selective
# recompute, --recompute-granularity selective --recompute-modules core_attn layernorm moe_act
# (Megatron-Bridge docs, MoE-specific recomputation: recompute_modules=["moe_act", "layernorm"];
# kb/memory/activations.py).
RECOMPUTE = ("none", "selective", "full", "modules")

Precision = Literal["bf16", "pure-bf16", "fp8"]
Framework = Literal["megatron", "deepspeed", "fsdp", "hf"]
TrainingType = Literal["pretrain", "finetune", "lora", "qlora", "rlhf"]
Attention = Literal["flash", "sdpa", "eager"]
# The optimizer and its implementation (kb/memory/optimizers.py models each one's states and
# step temporaries). "adamw" is the framework profile's own AdamW (optimizers.FRAMEWORK_ADAMW:
# fused in all four profiles); the others name one implementation whatever the framework.
Optimizer = Literal["adamw", "adamw-fused", "adamw-foreach", "adamw-single", "adamw-8bit", "adafactor", "sgd"]
# --recompute: "auto" lets the advisor choose among the layout's modes (kb/layout.RECOMPUTE)
RECOMPUTE_CHOICES = ("auto",) + RECOMPUTE
