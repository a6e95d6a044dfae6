"""The headline against the fastest valid layout, over a grid of jobs like the ones users run.

For each job of GRID (dense 1B-405B, MoE, LoRA/QLoRA, 1-16,384 GPUs, 2K-128K tokens) the
decision runs once (decision/run.py) under the shipped playbook. Printed per job: the headline,
the fastest layout that meets every hard rule, the gap, and -- where the gap is over 5% -- the
preferences that caused it (the output must name them). Then the share of jobs within 5%.

    python benchmarks/decision.py [-v]
"""
from __future__ import annotations

import statistics
import sys
import time

GRID = [
    # dense pre-training, one node to whole clusters
    dict(model="llama-3.2-1b", gpus=1, seq_len=2048), dict(model="llama-3.2-1b", gpus=8, seq_len=4096),
    dict(model="llama-3.2-3b", gpus=8, seq_len=8192), dict(model="llama-3-8b", gpus=1, seq_len=2048),
    dict(model="llama-3-8b", gpus=8, seq_len=4096), dict(model="llama-3-8b", gpus=8, seq_len=8192),
    dict(model="llama-3-8b", gpus=64, seq_len=8192), dict(model="llama-3-8b", gpus=128, seq_len=32768),
    dict(model="llama-3.1-8b", gpus=16, seq_len=131072), dict(model="llama-2-7b", gpus=64, seq_len=131072,
                                                               global_batch_tokens="4M"),
    dict(model="llama-2-7b", gpus=8, gpu="a100-80gb", seq_len=4096), dict(model="llama-2-13b", gpus=16, seq_len=4096),
    dict(model="qwen2.5-7b", gpus=16, seq_len=8192), dict(model="gemma-2-9b", gpus=32, seq_len=8192),
    dict(model="mistral-7b", gpus=8, seq_len=8192), dict(model="qwen3-32b", gpus=32, seq_len=8192),
    dict(model="llama-3-70b", gpus=32, seq_len=8192, mbs=4), dict(model="llama-3-70b", gpus=32, seq_len=8192),
    dict(model="llama-3-70b", gpus=64, seq_len=8192), dict(model="llama-3-70b", gpus=64, seq_len=8192, global_batch=128),
    dict(model="llama-3-70b", gpus=256, seq_len=8192), dict(model="llama-3-70b", gpus=128, seq_len=32768),
    dict(model="llama-3-70b", gpus=64, seq_len=131072), dict(model="llama-3-70b", gpus=1024, seq_len=4096),
    dict(model="llama-3-70b", gpus=64, gpu="a100-80gb", seq_len=4096), dict(model="llama-3-70b", gpus=32, gpu="h200",
                                                                            seq_len=8192),
    dict(model="qwen2.5-72b", gpus=128, seq_len=8192), dict(model="llama-3.1-405b", gpus=256, seq_len=8192),
    dict(model="llama-3.1-405b", gpus=1024, seq_len=8192), dict(model="llama-3.1-405b", gpus=2048, seq_len=8192),
    dict(model="llama-3.1-405b", gpus=16384, seq_len=8192, global_batch_tokens="16M"),
    dict(model="llama-3.1-405b", gpus=512, seq_len=32768), dict(model="gpt-3-175b", gpus=1024, seq_len=2048),
    dict(model="llama-3-8b", gpus=16, seq_len=4096, precision="fp8"), dict(model="llama-3-70b", gpus=64, seq_len=8192,
                                                                           precision="fp8"),
    dict(model="llama-3-8b", gpus=8, seq_len=4096, framework="fsdp"), dict(model="llama-3-70b", gpus=64, seq_len=4096,
                                                                           framework="fsdp"),
    dict(model="llama-3-8b", gpus=8, seq_len=4096, framework="deepspeed"),
    dict(model="llama-3-70b", gpus=32, seq_len=4096, framework="deepspeed"),
    dict(model="llama-3-8b", gpus=8, gpu="h100-pcie", seq_len=4096), dict(model="llama-3-8b", gpus=16, seq_len=4096,
                                                                         interconnect="ethernet"),
    dict(model="llama-3-8b", gpus=8, gpu="l40s", seq_len=4096), dict(model="llama-3-70b", gpus=16, gpu="b200",
                                                                    seq_len=8192),
    # fine-tuning, adapters
    dict(model="llama-3-8b", gpus=1, training="lora", framework="hf", seq_len=2048),
    dict(model="llama-3-8b", gpus=1, training="qlora", framework="hf", seq_len=4096),
    dict(model="llama-3-70b", gpus=8, gpu="a100-80gb", training="lora", framework="hf", seq_len=4096, global_batch=64),
    dict(model="llama-3-70b", gpus=8, training="finetune", framework="fsdp", seq_len=4096, global_batch=64),
    dict(model="llama-3-8b", gpus=8, training="finetune", framework="hf", seq_len=4096, global_batch=64),
    dict(model="qwen2.5-7b", gpus=4, training="lora", framework="hf", seq_len=8192, global_batch=32),
    dict(model="llama-3-70b", gpus=16, training="rlhf", framework="deepspeed", seq_len=2048, global_batch=256),
    # mixture of experts
    dict(model="mixtral-8x7b", gpus=16, seq_len=4096), dict(model="mixtral-8x7b", gpus=64, seq_len=4096,
                                                            global_batch=1024),
    dict(model="mixtral-8x22b", gpus=128, seq_len=4096), dict(model="qwen3-30b-a3b", gpus=8, seq_len=4096),
    dict(model="qwen3-235b-a22b", gpus=256, seq_len=4096), dict(model="deepseek-v3", gpus=1024, seq_len=4096),
    dict(model="mixtral-8x7b", gpus=8, training="lora", framework="hf", seq_len=4096, global_batch=64),
    # parameter counts only
    dict(params="3B", gpus=8, seq_len=4096), dict(params="20B", gpus=32, seq_len=4096),
    dict(params="130B", gpus=256, seq_len=8192), dict(params="1T", gpus=4096, seq_len=8192),
    dict(model="llama-3-8b", gpus=512, seq_len=8192), dict(model="llama-3-8b", gpus=4, seq_len=65536),
    dict(model="llama-3-70b", gpus=512, seq_len=65536), dict(model="llama-3.2-3b", gpus=2, seq_len=16384),
]


def run(job_kw: dict) -> dict:
    from shardwise.kb.build import build_job
    from shardwise.decision.reasons import departures
    from shardwise.decision.run import decide
    t0 = time.perf_counter()
    try:
        d = decide(build_job(**job_kw))
    except Exception as e:                              # a refusal is a result too
        return {"job": job_kw, "error": f"{type(e).__name__}: {e}", "s": time.perf_counter() - t0}
    s = time.perf_counter() - t0
    if d.layout is None:
        return {"job": job_kw, "none": d.nothing_allowed, "s": s}
    t, c = d.table, d.choice
    gap = 100 * (1 - float(t.tokens_per_s[c.index]) / float(t.tokens_per_s[c.fastest]))
    return {"job": job_kw, "s": s, "headline": d.layout.describe(), "fastest": t.layout(c.fastest).describe(),
            "gap": gap, "departures": [x["rule"] for x in departures(d)], "layouts": len(t)}


def main(verbose: bool) -> None:
    rows = [run(j) for j in GRID]
    answered = [r for r in rows if "gap" in r]
    within = [r for r in answered if r["gap"] <= 5.0]
    explained = [r for r in answered if r["gap"] > 5.0 and r["departures"]]
    for r in rows:
        name = " ".join(f"{k}={v}" for k, v in r["job"].items())
        if "gap" not in r:
            print(f"{name}\n    {r.get('error') or 'no layout: ' + r['none']}")
            continue
        if verbose or r["gap"] > 5.0:
            print(f"{name}\n    headline {r['headline']}\n    fastest  {r['fastest']}\n"
                  f"    gap {r['gap']:.1f}%  departures: {', '.join(r['departures']) or '-'}  ({r['s']:.2f} s)")
    gaps = [r["gap"] for r in answered]
    print(f"\n{len(rows)} jobs, {len(answered)} answered, {len(rows) - len(answered)} without a layout or refused")
    print(f"headline within 5% of the fastest allowed layout: {len(within)}/{len(answered)} "
          f"({100 * len(within) / max(1, len(answered)):.0f}%); larger gaps explained by a named preference: "
          f"{len(explained)}/{len(answered) - len(within)}")
    print(f"gap median {statistics.median(gaps):.1f}%, max {max(gaps):.1f}%; "
          f"decision time median {statistics.median(r['s'] for r in rows):.2f} s, max {max(r['s'] for r in rows):.2f} s")


if __name__ == "__main__":
    main("-v" in sys.argv)
