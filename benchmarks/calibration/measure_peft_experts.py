"""What PEFT's LoRA does to one transformers 5 MoE layer (kb/memory/peft_experts.py): for each
MoE family, one decoder layer at a small shape, bf16 weights under bf16 autocast, SDPA (eager
for gpt-oss), trained in full or with LoRA on all linear layers (fp32 adapters, PEFT's default,
or bf16), at two sequence lengths so that what grows with the tokens and what does not can be
told apart. Runs on a CPU in about a minute. Per row:

- saved_bytes: every tensor autograd saves for backward (saved-tensor hooks, once per storage,
  the model's parameters left out), as measure_family_layers.py counts them;
- forward_end_bytes, peak_bytes: the CPU allocator's live bytes at the end of the layer's forward
  and their maximum over forward and backward (torch.profiler with profile_memory: the sum of
  its [memory] events in time order), counted from the start of the forward;
- lora_params: trainable LoRA parameters by module (PEFT's own adapters);
- config: the config the layer was built from, read back by the estimate's config.json reader.

And one row per family (mode "qlora-storage") of what bitsandbytes' 4-bit loading quantises in
the layer, the way QLoRA loads a model: parameters left in bf16 and parameters stored 4-bit
(Params4bit, two to a byte), from a saved bf16 checkpoint of the same layer loaded with
BitsAndBytesConfig(load_in_4bit=True, nf4) on the CPU.

Modes lora-dropout and lora-bf16-dropout add LoraConfig(lora_dropout=0.1), through the fused
dropout kernel a GPU runs (measure_saved_tensors.fused_dropout), for the families whose routed
experts PEFT leaves alone: on merged ones PEFT refuses dropout (ParamWrapper: "does not work with
lora_dropout != 0").

Run from this folder: python measure_peft_experts.py > cpu_peft_experts.jsonl
     python measure_peft_experts.py olmoe granitemoe ... >> cpu_peft_experts.jsonl
(model types as arguments measure only those: the olmoe, granitemoe and granitemoeshared rows were
added so, with the same versions; modes as arguments, only those modes:)
     python measure_peft_experts.py qwen2_moe gpt_oss lora-dropout lora-bf16-dropout >> cpu_peft_experts.jsonl
(taken with torch 2.14.1, transformers 5.24.0, peft 0.21.2, bitsandbytes 0.50.2)
"""
import json
import sys

import torch
from peft import LoraConfig, get_peft_model
from torch.profiler import ProfilerActivity, profile
from transformers import AutoConfig, AutoModelForCausalLM

from measure_family_layers import EAGER, FAMILIES  # this folder: run from it
from measure_saved_tensors import DROPOUT, fused_dropout

MOE = ("mixtral", "qwen3_moe", "qwen2_moe", "deepseek_v3", "gpt_oss", "olmoe", "granitemoe", "granitemoeshared")
MODES = ("full", "lora", "lora-bf16", "lora-dropout", "lora-bf16-dropout")
RANK = 16
SEQS = (256, 1024)


def build(model_type: str, mode: str):
    torch.manual_seed(0)
    cfg = AutoConfig.for_model(model_type, num_hidden_layers=1, vocab_size=1024, **FAMILIES[model_type])
    cfg._attn_implementation = "eager" if model_type in EAGER else "sdpa"
    model = AutoModelForCausalLM.from_config(cfg).to(torch.bfloat16)
    if mode == "full":
        return model, model.model, cfg
    dropout = DROPOUT if mode.endswith("-dropout") else 0.0
    model = get_peft_model(model, LoraConfig(r=RANK, lora_alpha=2 * RANK, target_modules="all-linear",
                                             task_type="CAUSAL_LM", lora_dropout=dropout),
                           autocast_adapter_dtype=not mode.startswith("lora-bf16"))
    return model, model.base_model.model.model, cfg


def lora_params(model) -> dict:
    out = {}
    for name, p in model.named_parameters():
        if "lora_" in name:
            key = name.split("layers.0.")[1].split(".lora_")[0]
            out[key] = out.get(key, 0) + p.numel()
    return out


def measure(model, decoder, cfg, seq: int) -> dict:
    model.train()
    layer = decoder.layers[0]
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = max(seen.get(st.data_ptr(), 0), st.nbytes())
        return t

    x = torch.randn(1, seq, cfg.hidden_size, dtype=torch.bfloat16, requires_grad=True)
    pos = torch.arange(seq)[None]
    kw = dict(attention_mask=None, position_ids=pos, position_embeddings=decoder.rotary_emb(x, pos))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with torch.autocast("cpu", torch.bfloat16), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = layer(x, **kw)
        out = out[0] if isinstance(out, tuple) else out
        with torch.profiler.record_function("backward"):
            out.float().sum().backward()
        del out
    events = list(prof.profiler.kineto_results.events())
    backward_at = min(e.start_ns() for e in events if e.name() == "backward")
    live = peak = 0
    forward_end = None
    for e in sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns()):
        if forward_end is None and e.start_ns() >= backward_at:
            forward_end = live
        live += e.nbytes()
        peak = max(peak, live)
    return dict(saved_bytes=sum(seen.values()), forward_end_bytes=forward_end, peak_bytes=peak)


def qlora_storage(model_type: str) -> dict:
    import tempfile
    from transformers import BitsAndBytesConfig
    model, _, _ = build(model_type, "full")
    with tempfile.TemporaryDirectory() as d:
        model.save_pretrained(d)
        q = AutoModelForCausalLM.from_pretrained(d, device_map="cpu", dtype=torch.bfloat16, quantization_config=(
            BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16)))
        layer = q.model.layers[0]
        four = sum(2 * p.numel() for p in layer.parameters() if type(p).__name__ == "Params4bit")
        bf16 = sum(p.numel() for p in layer.parameters() if type(p).__name__ != "Params4bit")
    return dict(nf4_params=four, bf16_params=bf16)


if __name__ == "__main__":
    import peft
    import transformers
    only = [a for a in sys.argv[1:] if a in MOE]
    modes = [a for a in sys.argv[1:] if a in MODES]
    torch.nn.functional.dropout = fused_dropout      # nn.Dropout calls F.dropout at each forward
    for model_type in MOE:
        if only and model_type not in only:
            continue
        for mode in modes or MODES[:3]:
            for seq in SEQS:
                model, decoder, cfg = build(model_type, mode)
                extra = {"lora_dropout": DROPOUT} if mode.endswith("-dropout") else {}
                row = dict(model_type=model_type, mode=mode, lora_rank=RANK, seq=seq, **extra,
                           attention="eager" if model_type in EAGER else "sdpa", **measure(model, decoder, cfg, seq),
                           lora_params=lora_params(model), torch=torch.__version__,
                           transformers=transformers.__version__, peft=peft.__version__, config=cfg.to_dict())
                print(json.dumps(row, default=str), flush=True)
        if modes:
            continue
        import bitsandbytes
        _, _, cfg = build(model_type, "full")
        print(json.dumps(dict(model_type=model_type, mode="qlora-storage", **qlora_storage(model_type),
                              torch=torch.__version__, transformers=transformers.__version__,
                              bitsandbytes=bitsandbytes.__version__, config=cfg.to_dict()), default=str), flush=True)
