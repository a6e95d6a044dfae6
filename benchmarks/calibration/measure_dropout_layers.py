"""What a config.json's dropout adds to what one transformers decoder layer keeps for backward:
the same layer (measure_family_layers.py's shapes and counter: saved-tensor hooks, once per
storage, parameters and weight casts left out, 256 tokens, bf16 autocast, bf16 or fp32 weights)
with the config's dropout at 0 and at 0.1, in training mode.

- attention_dropout under eager attention (every supported family applies it to the
  probabilities in its eager_attention_forward: nn.functional.dropout(attn_weights, p=dropout,
  training=module.training)): Llama (fp32 softmax), Gemma 2 (soft-capped), gpt-oss (bf16
  softmax with its sink column), Seed-OSS;
- residual dropout on the attention's and the MLP's outputs: Phi-3's resid_pdrop
  (Phi3DecoderLayer's resid_attn_dropout and resid_mlp_dropout) and Seed-OSS's residual_dropout
  (SeedOssAttention and SeedOssMLP).

Every dropout runs through torch.native_dropout, the fused kernel a GPU runs, which keeps a
bool mask (measure_saved_tensors.fused_dropout: a CPU tensor would take _dropout_impl, which
keeps a noise tensor of the input's dtype). Attention dropout is measured under eager only: the
CPU's SDPA refuses its flash kernel with dropout (sdp_utils_cpp.cpp check_for_dropout) and runs
the math path, which keeps the score matrices, where a GPU's flash, efficient and cuDNN kernels
keep only their RNG seed and offset (derivatives.yaml).

Run from this folder: python measure_dropout_layers.py > cpu_dropout_saved_tensors.jsonl
(taken with torch 2.14.1, transformers 5.24.0)
"""
import json

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

from measure_family_layers import FAMILIES, SEQ, layer_saved_bytes, weight_shaped
from measure_saved_tensors import fused_dropout

P = 0.1
# model_type, attention, the config's dropout fields (each measured at 0 and at P)
CASES = (("llama", "eager", ("attention_dropout",)),
         ("gemma2", "eager", ("attention_dropout",)),
         ("gpt_oss", "eager", ("attention_dropout",)),
         ("phi3", "sdpa", ("resid_pdrop",)),
         ("seed_oss", "sdpa", ("residual_dropout",)),
         ("seed_oss", "eager", ("attention_dropout", "residual_dropout")))
# every dropout field the cases set, 0 unless the case measures it
FIELDS = {"seed_oss": ("attention_dropout", "residual_dropout")}


def saved(model_type: str, attention: str, weights: torch.dtype, drop: dict) -> tuple[float, dict]:
    torch.manual_seed(0)
    shape = {k: v for k, v in FAMILIES[model_type].items() if "dropout" not in k}
    cfg = AutoConfig.for_model(model_type, num_hidden_layers=1, vocab_size=1024, **shape, **drop)
    cfg._attn_implementation = attention
    model = AutoModelForCausalLM.from_config(cfg).to(weights)
    model.train()
    skip = lambda t: False  # noqa: E731
    if weights == torch.float32:
        cast = weight_shaped(model, only_2d=True)
        skip = lambda t: t.dtype == torch.bfloat16 and t.shape[0] != SEQ and cast(t)  # noqa: E731
    return layer_saved_bytes(model, model.model, weights, cfg.hidden_size, skip), cfg.to_dict()


if __name__ == "__main__":
    torch.nn.functional.dropout = fused_dropout      # nn.Dropout calls F.dropout at each forward
    for weights in (torch.bfloat16, torch.float32):
        for mt, attention, fields in CASES:
            for p in (0.0, P):
                drop = {k: (p if k in fields else 0.0) for k in FIELDS.get(mt, fields)}
                b, cfg = saved(mt, attention, weights, drop)
                print(json.dumps(dict(model_type=mt, attention=attention, seq=SEQ,
                                      weights="fp32" if weights == torch.float32 else "bf16", dropout=drop,
                                      saved_bytes_per_token=b, torch=torch.__version__,
                                      transformers=transformers.__version__, config=cfg), default=str), flush=True)
