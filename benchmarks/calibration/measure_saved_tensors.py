"""What one transformers decoder layer keeps for backward, with and without PEFT's LoRA: the
bytes of every tensor autograd saves (torch.autograd.graph.saved_tensors_hooks), counted once
per storage, parameters and their casts left out. Runs on a CPU (bf16 autocast, SDPA), in a
minute; the deltas between modes are what kb/memory/activations.adapter_saved_bytes models.

Llama shapes, and Qwen3 (q/k norms) and Gemma (fp32-scaled norms, GeGLU) for their frozen
norms; a DeepSeek-V3 dense layer (first_k_dense_replace=1: MLA, and an MLP PEFT leaves without
adapters, as it maps those names onto the fused experts). Modes: full (bf16 weights, every weight trained), lora (bf16 base, PEFT's default fp32
adapters, as the Trainer runs them without ZeRO), lora-bf16 (adapters kept in bf16,
autocast_adapter_dtype=False, as DeepSpeed's, FSDP2's and Megatron's bf16 engines hold them).
All-linear targets. Writes one JSON line per geometry and mode to stdout.

Modes lora-dropout and lora-bf16-dropout are lora and lora-bf16 with LoraConfig(lora_dropout=0.1):
each adapter's nn.Dropout runs on its own input, which autograd then keeps per adapter. They
are taken through torch.native_dropout, the fused kernel a GPU runs (aten/src/ATen/native/
Dropout.cpp: dropout() calls native_dropout where is_fused_kernel_acceptable, a CUDA/XPU
tensor), which keeps a bool mask; a CPU tensor takes _dropout_impl instead, which keeps a noise
tensor of the input's dtype (2-4 bytes an element, not 1).

Run from this folder (it takes its counter from measure_family_layers.py):
     python measure_saved_tensors.py > cpu_lora_saved_tensors.jsonl
     python measure_saved_tensors.py lora-dropout lora-bf16-dropout >> cpu_lora_saved_tensors.jsonl
(taken with torch 2.14.1, transformers 5.24.0, peft 0.21.2)
"""
import json
import sys

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoConfig, AutoModelForCausalLM

from measure_family_layers import SEQ, layer_saved_bytes, weight_shaped  # this folder: run from it

GEOMETRIES = [  # model type, hidden, ffn, heads, kv heads, LoRA rank
    ("llama", 512, 1792, 8, 2, 16),      # Llama 3 8B's proportions (F = 3.5 h, GQA 4:1)
    ("llama", 512, 1792, 8, 2, 64),
    ("llama", 384, 1024, 6, 6, 16),      # MHA, F = 2.67 h
    ("llama", 512, 2816, 8, 1, 16),      # Qwen2.5-0.5B-like: F = 5.5 h, one KV head
    ("qwen3", 512, 1536, 8, 2, 16),      # q/k norms (frozen under LoRA)
    ("gemma", 512, 2048, 8, 1, 16),      # fp32-scaled norms, GeGLU
    ("deepseek_v3", 512, 1536, 8, 8, 16),  # dense layer: MLA (MLA below), MLP without adapters
]
# DeepSeek-V3's attention shapes, scaled as measure_family_layers.py scales them; the one layer is
# a dense one (first_k_dense_replace=1)
MLA = dict(q_lora_rank=192, kv_lora_rank=128, qk_nope_head_dim=64, qk_rope_head_dim=32, v_head_dim=64,
           first_k_dense_replace=1, n_routed_experts=8, num_experts_per_tok=2, n_group=1, topk_group=1)


DROPOUT = 0.1
MODES = ("full", "lora", "lora-bf16")


def fused_dropout(input, p=0.5, training=True, inplace=False):
    """F.dropout as a GPU runs it: torch.native_dropout, which keeps a bool mask for backward."""
    return torch.native_dropout(input, p, training)[0] if training and 0 < p < 1 else input


def saved_bytes(model_type, h, ffn, heads, kv, rank, mode):
    torch.manual_seed(0)
    extra = MLA if model_type == "deepseek_v3" else {"head_dim": h // heads} if model_type != "llama" else {}
    cfg = AutoConfig.for_model(model_type, hidden_size=h, intermediate_size=ffn, num_attention_heads=heads,
                               num_key_value_heads=kv, num_hidden_layers=1, vocab_size=1024, **extra)
    cfg._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(cfg).to(torch.bfloat16)
    if mode != "full":
        dropout = DROPOUT if mode.endswith("-dropout") else 0.0
        model = get_peft_model(model, LoraConfig(r=rank, lora_alpha=2 * rank, target_modules="all-linear",
                                                 task_type="CAUSAL_LM", lora_dropout=dropout),
                               autocast_adapter_dtype=not mode.startswith("lora-bf16"))
        base = model.base_model.model.model
    else:
        base = model.model
    model.train()
    # autocast's bf16 casts of the fp32 adapter weights (a weight's shape) are left out
    return layer_saved_bytes(model, base, torch.bfloat16, h, skip=weight_shaped(model))


if __name__ == "__main__":
    import peft
    import transformers
    torch.nn.functional.dropout = fused_dropout      # nn.Dropout calls F.dropout at each forward
    for model_type, h, ffn, heads, kv, rank in GEOMETRIES:
        for mode in sys.argv[1:] or MODES:
            extra = {"lora_dropout": DROPOUT} if mode.endswith("-dropout") else {}
            print(json.dumps(dict(model_type=model_type, hidden=h, ffn=ffn, heads=heads, kv_heads=kv, lora_rank=rank,
                                  mode=mode, seq=SEQ, **extra,
                                  saved_bytes_per_token=saved_bytes(model_type, h, ffn, heads, kv, rank, mode),
                                  torch=torch.__version__, transformers=transformers.__version__,
                                  peft=peft.__version__)), flush=True)
