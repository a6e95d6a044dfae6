"""MoE step-time check on runs outside benchmarks/calibration/published_runs.yaml.

Run: python benchmarks/moe_check.py [--grid]. The rows are NVIDIA's Megatron-MoE-ModelZoo
(github.com/yanring/Megatron-MoE-ModelZoo, best_practice/Qwen3/readme.md, "Performance
Results": Qwen3-235B-A22B, 256 H100 with 8x50 GB/s InfiniBand, BF16, seq 4096, global batch
2048, micro-batch 1, DeepEP dispatcher). The EP overlap and the fixed MoE layer time of
kb/data/frameworks.yaml were fitted on the published runs only; these rows check them.

--grid re-runs that fit: Megatron's fixed MoE time per layer (0-3.5 ms) and per local expert
(0-0.4 ms) on a grid, the median |error| over the MoE rows of published_runs.yaml at each point,
and the best points whose two checks here stay within 10%.
"""
from __future__ import annotations

from shardwise.kb.build import build_job
from shardwise.kb.layout import Layout
from shardwise.kb.perf import step_time

# (what, tp, pp, vp, ep, measured model TFLOP/s per GPU)
ROWS = [("cross-node EP 32", 2, 8, 4, 32, 245.0),
        ("EP 8, TP 4", 4, 8, 4, 8, 167.0)]


def predictions() -> list[tuple[str, Layout, float, float]]:
    """(what, layout, measured, predicted model TFLOP/s per GPU) for each row."""
    job = build_job(model="qwen3-235b-a22b", gpus=256, gpu="h100-sxm", seq_len=4096, global_batch=2048, mbs=1)
    out = []
    for what, tp, pp, vp, ep, meas in ROWS:
        dp = 256 // (tp * pp)
        lay = Layout(tp=tp, pp=pp, vp=vp, dp=dp, ep=ep, zero=1, sp=True, mbs=1, grad_accum=2048 // dp)
        out.append((what, lay, meas, step_time(job, lay).model_tflops_per_gpu))
    return out


def grid() -> None:
    import statistics
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import calibration
    from throughput import _patched
    from shardwise.kb.frameworks import profile
    mega = profile("megatron")
    points = []
    for layer in [0.5 * i for i in range(8)]:
        for expert in [round(0.05 * j, 2) for j in range(9)]:
            with _patched(mega, moe_layer_overhead_ms=layer, moe_expert_overhead_ms=expert):
                moe = [abs(r["error"]) for r in calibration.throughput_rows() if r["moe"]]
                checks = [pred / meas - 1 for _, _, meas, pred in predictions()]
            points.append((statistics.median(moe), layer, expert, checks))
    print(f"shipped: {mega['moe_layer_overhead_ms']} ms per layer + {mega['moe_expert_overhead_ms']} ms per local expert")
    print("best points whose checks stay within 10%:")
    for med, layer, expert, checks in sorted(p for p in points if max(abs(c) for c in p[3]) <= 0.10)[:5]:
        print(f"  {layer:.1f} ms + {expert:.2f} ms: MoE median |error| {100 * med:.1f}%, checks "
              + ", ".join(f"{100 * c:+.1f}%" for c in checks))


def main() -> None:
    if "--grid" in __import__("sys").argv:
        grid()
        return
    for what, lay, meas, pred in predictions():
        print(f"{what:<18} {lay.describe():<62} measured {meas:5.0f} predicted {pred:5.0f} TFLOP/s/GPU "
              f"{100 * (pred / meas - 1):+5.1f}%")


if __name__ == "__main__":
    main()
