"""Whole training steps in a plain PyTorch loop on one GPU, at and around the out-of-memory
boundary: peak memory per phase and step time, for each optimizer implementation, with
zero_grad(set_to_none=True) and False, SDPA and eager attention, full fine-tuning, LoRA and
QLoRA. Writes $OUT/loops.jsonl, one row per (configuration, sequence length).

    python3 measure_loops.py [deadline_s] [first_config last_config]

Each configuration builds its model once (transformers, random weights, use_cache=False) and
its optimizer, then runs sequence lengths upward, doubling, until one runs out of memory, and
bisects between the last that fit and the first that did not (BISECT steps), so that rows
land on both sides of the boundary. Per sequence length: a step with the peak read per phase
(forward with loss; backward; optimizer.step and zero_grad), then two timed steps whose
overall peak is `peak_allocated_bytes` (torch.cuda.max_memory_allocated). The first length
of a configuration runs one step more first, so optimizer states exist. Peaks read by the
caching allocator on the host need no synchronisation; the timed steps are synchronised.

The step is the one the Hugging Face Trainer runs, without the Trainer:
    with autocast(bf16, enabled=weights are fp32): loss = model(input_ids, labels=input_ids).loss
    loss.backward(); optimizer.step(); optimizer.zero_grad(set_to_none=...)
"""
import gc
import json
import os
import sys
import time

import torch

OUT = os.environ.get("OUT", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
BISECT = 4
SEQ_MAX = 32768
SEQ_STEP = 256            # bisection works in multiples of this

# The Trainer steps' architectures (measure_trainer.py), with the released Llama 3.2 1B and 3B's
# tied embeddings, and Qwen2.5 0.5B
from measure_trainer import MODELS as TRAINER_MODELS  # noqa: E402  (this folder is on sys.path)


def _tied(name):
    arch, kw = TRAINER_MODELS[name]
    return arch, dict(kw, tie_word_embeddings=True)


MODELS = dict(TRAINER_MODELS, **{
    "qwen2.5-0.5b": ("qwen2", dict(hidden_size=896, intermediate_size=4864, num_attention_heads=14, num_key_value_heads=2,
                                   num_hidden_layers=24, vocab_size=151936, tie_word_embeddings=True)),
    "llama3.2-1b": _tied("llama3.2-1b"),
    "llama3.2-3b": _tied("llama3.2-3b"),
})
# id, model, mode (full | lora16 | qlora16), weights (fp32 = fp32 weights under bf16 autocast |
# bf16 = pure bf16), optimizer, set_to_none, ckpt, attention, mbs, first seq
CONFIGS = [
    ("L01", "qwen2.5-0.5b", "full", "fp32", "adamw-fused", True, False, "sdpa", 4, 2048),
    ("L02", "llama3.2-1b", "full", "fp32", "adamw-foreach", False, False, "sdpa", 2, 2048),
    ("L03", "llama3.2-1b", "full", "bf16", "adamw-single", True, False, "eager", 1, 2048),
    ("L04", "llama3-8b", "full", "bf16", "adamw-fused", True, True, "sdpa", 1, 1024),
    ("L05", "llama3.2-3b", "full", "fp32", "adamw-fused", False, True, "sdpa", 1, 4096),
    ("L06", "llama3.2-3b", "full", "bf16", "adamw-foreach", True, False, "sdpa", 1, 2048),
    ("L07", "llama3-8b", "full", "bf16", "adamw-8bit", True, True, "sdpa", 1, 4096),
    ("L08", "llama3.2-3b", "qlora16", "bf16", "adamw-fused", True, True, "sdpa", 1, 8192),
    ("L09", "qwen2.5-1.5b", "full", "fp32", "adamw-single", True, True, "eager", 1, 2048),
    ("L10", "llama3-8b", "lora16", "bf16", "adamw-fused", True, True, "sdpa", 1, 8192),
    ("L11", "llama3.2-1b", "full", "fp32", "sgd", False, False, "sdpa", 4, 1024),
    ("L12", "llama3.2-3b", "full", "fp32", "adafactor", True, True, "sdpa", 2, 4096),
    ("L13", "qwen2.5-0.5b", "full", "bf16", "adamw-fused", False, True, "sdpa", 8, 2048),
    ("L14", "llama3-8b", "full", "bf16", "adamw-foreach", True, True, "sdpa", 1, 512),
]


def build(name, dtype, attn):
    import transformers as T
    arch, kw = MODELS[name]
    cfg = T.AutoConfig.for_model(arch, use_cache=False, max_position_embeddings=SEQ_MAX, **kw)
    cfg._attn_implementation = attn
    with torch.device("cuda"):
        m = T.AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=attn)
    return m, cfg


def quantised(m, cfg, attn):
    """QLoRA's base: the random bf16 model saved and reloaded through bitsandbytes NF4 with
    double quantisation and bf16 storage (what FSDP + QLoRA asks for), as users load one."""
    import transformers as T
    path = "/tmp/qlora_base"
    m.save_pretrained(path)
    del m
    gc.collect(); torch.cuda.empty_cache()
    q = T.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                             bnb_4bit_compute_dtype=torch.bfloat16, bnb_4bit_quant_storage=torch.bfloat16)
    return T.AutoModelForCausalLM.from_pretrained(path, quantization_config=q, dtype=torch.bfloat16,
                                                  attn_implementation=attn, device_map={"": 0})


def optimizer(kind, params):
    if kind == "adamw-fused":
        return torch.optim.AdamW(params, lr=1e-5, fused=True)
    if kind == "adamw-foreach":
        return torch.optim.AdamW(params, lr=1e-5, foreach=True)
    if kind == "adamw-single":
        return torch.optim.AdamW(params, lr=1e-5, foreach=False, fused=False)
    if kind == "adamw-8bit":
        import bitsandbytes as bnb
        return bnb.optim.AdamW8bit(params, lr=1e-5)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=1e-5, momentum=0.9)
    if kind == "adafactor":
        from transformers.optimization import Adafactor      # as the Trainer's optim="adafactor"
        return Adafactor(params, lr=1e-5, scale_parameter=False, relative_step=False)
    raise ValueError(kind)


class Run:
    def __init__(self, cfg_row):
        cid, name, mode, wdt, opt, stn, ckpt, attn, mbs, _ = cfg_row
        self.row = dict(config=cid, model=name, mode=mode, weights=wdt, optimizer=opt, set_to_none=stn, ckpt=ckpt,
                        attn=attn, mbs=mbs)
        self.stn, self.mbs, self.autocast = stn, mbs, wdt == "fp32"
        m, cfg = build(name, torch.float32 if wdt == "fp32" else torch.bfloat16, attn)
        self.row["params"] = sum(p.numel() for p in m.parameters())
        if mode == "qlora16":
            m = quantised(m, cfg, attn)
        if ckpt:
            m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if mode != "full":
            from peft import LoraConfig, get_peft_model
            m = get_peft_model(m, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))
        m.train()
        self.row["trainable"] = sum(p.numel() for p in m.parameters() if p.requires_grad)
        self.m, self.vocab = m, cfg.vocab_size
        self.opt = optimizer(opt, [p for p in m.parameters() if p.requires_grad])
        self.warm = False

    def step(self, x, phases=None):
        def mark(name):
            if phases is not None:
                phases[name] = torch.cuda.max_memory_allocated()
                torch.cuda.reset_peak_memory_stats()
        if phases is not None:
            phases["start_allocated"] = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        with torch.autocast("cuda", torch.bfloat16, enabled=self.autocast):
            loss = self.m(input_ids=x, labels=x).loss
        mark("forward")
        loss.backward()
        del loss
        mark("backward")
        self.opt.step()
        self.opt.zero_grad(set_to_none=self.stn)
        mark("optimizer")

    def point(self, seq):
        row = dict(self.row, seq=seq)
        x = torch.randint(0, self.vocab, (self.mbs, seq), device="cuda", generator=None)
        where = "warm-up"
        try:
            if not self.warm:
                self.step(x)
                self.warm = True
            phases = {}
            where = "phase step"
            self.step(x, phases)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            where = "timed steps"
            t0 = time.perf_counter()
            for _ in range(2):
                self.step(x)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            row.update(peak_allocated_bytes=max(torch.cuda.max_memory_allocated(), phases["forward"], phases["backward"],
                                                phases["optimizer"]),
                       peak_reserved_bytes=torch.cuda.max_memory_reserved(),
                       phase_peak_bytes={k: phases[k] for k in ("forward", "backward", "optimizer")},
                       start_allocated_bytes=phases["start_allocated"],
                       step_s=round((t1 - t0) / 2, 4))
            row["tokens_per_s"] = round(seq * self.mbs / row["step_s"], 1)
        except torch.OutOfMemoryError as e:
            row["error"] = f"OutOfMemoryError in {where}: " + str(e).split(". GPU")[0][:120]
        del x
        if "error" in row:
            self.opt.zero_grad(set_to_none=self.stn)
        gc.collect(); torch.cuda.empty_cache()
        return row


def emit(row):
    with open(os.path.join(OUT, "loops.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


def sweep(cfg_row, deadline):
    run = Run(cfg_row)
    lo, hi, seq = None, None, cfg_row[-1]
    while seq <= SEQ_MAX and time.time() < deadline:
        r = run.point(seq)
        emit(r)
        if "error" in r:
            hi = seq
            break
        lo, seq = seq, seq * 2
    while lo is None and hi is not None and hi // 2 >= 512 and time.time() < deadline:
        r = run.point(hi // 2)       # the first length ran out: halve down to one that fits
        emit(r)
        lo, hi = (None, hi // 2) if "error" in r else (hi // 2, hi)
    for _ in range(BISECT if lo and hi else 0):
        mid = (lo + hi) // 2 // SEQ_STEP * SEQ_STEP
        if mid in (lo, hi) or time.time() > deadline:
            break
        r = run.point(mid)
        emit(r)
        lo, hi = (lo, mid) if "error" in r else (mid, hi)
    del run
    gc.collect(); torch.cuda.empty_cache()


if __name__ == "__main__":
    t_start = time.time()
    deadline = t_start + (float(sys.argv[1]) if len(sys.argv) > 1 else 1e9)
    first, last = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else ("L00", "L99")
    import transformers, peft
    free, total = torch.cuda.mem_get_info()
    emit(dict(device=torch.cuda.get_device_name(0), total_bytes=total, free_bytes=free, torch=torch.__version__,
              transformers=transformers.__version__, peft=peft.__version__))
    for c in CONFIGS:
        if not first <= c[0] <= last or time.time() > deadline:
            continue
        try:
            sweep(c, deadline)
        except Exception as e:          # one configuration failing must not lose the others
            emit(dict(config=c[0], failed=repr(e)[:300]))
            gc.collect(); torch.cuda.empty_cache()
    emit(dict(done=True, seconds=round(time.time() - t_start, 1)))
