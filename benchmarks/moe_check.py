"""MoE step-time check on runs outside benchmarks/calibration/published_runs.yaml.

Run: python benchmarks/moe_check.py. The rows are NVIDIA's Megatron-MoE-ModelZoo
(github.com/yanring/Megatron-MoE-ModelZoo, best_practice/Qwen3/readme.md, "Performance
Results": Qwen3-235B-A22B, 256 H100 with 8x50 GB/s InfiniBand, BF16, seq 4096, global batch
2048, micro-batch 1, DeepEP dispatcher). The EP overlap and the fixed MoE layer time of
kb/data/frameworks.yaml were fitted on the published runs only; these rows check them.
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


def main() -> None:
    for what, lay, meas, pred in predictions():
        print(f"{what:<18} {lay.describe():<62} measured {meas:5.0f} predicted {pred:5.0f} TFLOP/s/GPU "
              f"{100 * (pred / meas - 1):+5.1f}%")


if __name__ == "__main__":
    main()
