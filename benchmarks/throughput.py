"""Step-time model against the published runs of benchmarks/calibration/published_runs.yaml.

Run: python benchmarks/throughput.py [-v] [--ablation]. Compares tokens/s per GPU (model
TFLOP/s per GPU where a row gives only that), prints per-row error with -v, and median / 90th
percentile of |error| by GPU type and precision, and for H100 BF16, H100 FP8 and all rows.
Rows whose own text says they ran under conditions the model does not know (power-capped GPUs,
a performance regression the source names, a framework without a profile: Paxml on JAX) are
counted in every figure and also reported apart.

--ablation: the same figures with each step-time term taken out in turn (its former or
neutral form, named in _terms), so a change's effect is read off one table.
"""
from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

from shardwise.kb.track_record import percentile as pct

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibration  # noqa: E402


def summary(rows: list[dict]) -> dict:
    groups = defaultdict(list)
    for r in rows:
        groups[(r["gpu"], r["precision"])].append(abs(r["error"]))
        groups[("all", "all")].append(abs(r["error"]))
        if r["moe"]:
            groups[("moe", "all")].append(abs(r["error"]))
    return {k: (len(v), statistics.median(v), pct(v, 0.9)) for k, v in groups.items()}


@contextmanager
def _patched(obj, **values):
    """Set attributes (or dict keys) for the duration of a with block."""
    get = (lambda k: obj[k]) if isinstance(obj, dict) else (lambda k: getattr(obj, k))
    put = obj.__setitem__ if isinstance(obj, dict) else (lambda k, v: setattr(obj, k, v))
    old = {k: get(k) for k in values}
    for k, v in values.items():
        put(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            put(k, v)


def _terms():
    """(name, context manager factory) of each term the ablation takes out."""
    from shardwise.kb.frameworks import profile
    from shardwise.kb.perf import comm, compute, step, unfused
    mega = profile("megatron")
    dp_time = step._dp_time
    recompute = step.recompute_seconds
    from shardwise.kb import catalog
    catalog_gpu = catalog.gpu
    datasheet = lambda name: catalog_gpu(name).model_copy(update={"sustained_share": 1.0})  # noqa: E731
    return [
        ("Blackwell sustained share of the datasheet peak (-> 1.0: the datasheet)",
         lambda: _patched(catalog, gpu=datasheet)),
        ("full-iteration CUDA graphs of the NeMo 26.06+ MXFP8 MoE recipes (-> none)",
         lambda: _patched(calibration, _cuda_graphs=lambda r: "none")),
        ("MoE time per local expert (0.15 ms; the former single 3.5 ms per layer)",
         lambda: _patched(mega, moe_layer_overhead_ms=3.5, moe_expert_overhead_ms=0.0)),
        ("Megatron's eager ops where its fused kernels stop: YaRN RoPE, expert biases, clamped GLU (-> none)",
         lambda: _patched(unfused, UNFUSED_ROPE_EXTRA_BYTES=0.0, EXPERT_BIAS_BYTES=0.0, GLU_CLAMP_BYTES=0.0)),
        ("MoE fixed time (layer and per-expert parts, none)",
         lambda: _patched(mega, moe_layer_overhead_ms=0.0, moe_expert_overhead_ms=0.0)),
        ("EP all-to-all overlap (0.7 -> 0)",
         lambda: _patched(mega["overlap"], ep=0.0)),
        ("EP overlap only where Megatron-Core runs it (-> every EP layout, every micro-batch)",
         lambda: _patched(step, ep_hidden_share=lambda t, lay, ov: ov["ep"])),
        ("ring collectives across nodes on k NICs (-> one NIC per GPU)",
         lambda: _patched(comm, collective_link=comm.group_link)),
        ("expert DP collectives on the expert-DP group (-> the dense DP group)",
         lambda: _patched(step, _dp_time=lambda job, lay, dense, experts, mb, *layers: dp_time(
             job, lay, dense + experts, 0 * experts, mb, *layers))),
        ("torchtitan's per-op selective recompute (-> the attention core only)",
         lambda: _patched(step, recompute_seconds=lambda fw, rc, lt: recompute("megatron", rc, lt))),
        ("full recomputation as each part's own forward: attention 1/3.5 (-> a third of the layer's time)",
         lambda: _patched(step, recompute_seconds=lambda fw, rc, lt: lt.total / 3.0 if rc == "full"
                          else recompute(fw, rc, lt))),
        ("TP overlap (0.5 -> 0)",
         lambda: _patched(mega["overlap"], tp=0.0)),
        ("FP8 GEMMs at 0.82 of the FP8 peak (-> 1.0)",
         lambda: _patched(compute, FP8_EFFICIENCY=1.0)),
        ("FP8 elementwise traffic x1.5 (-> x1)",
         lambda: _patched(compute, FP8_ELEMENTWISE_FACTOR=1.0)),
        ("attention efficiency by flash blocks (-> 0.55 flat)",
         lambda: _patched(compute, attention_efficiency=lambda blocks: compute.E_ATTN)),
        ("torchtitan rows on FlashAttention-2 (-> the cuDNN-class kernel)",
         lambda: _patched(calibration, _attention_kernel=lambda r: "flash")),
        ("torchtitan's Grand Teton H100 entry (-> h100-sxm, 3.35 TB/s, 989 TF)",
         lambda: _patched(calibration, _row_gpu=lambda r: calibration._GPU[r["gpu_type"]])),
        ("torchtitan's micro-batches (-> 1 sequence each, accumulated)",
         lambda: _patched(calibration, torchtitan_batching=lambda r: (1, 1, r["vp"] or 1))),
        ("the torch-native loss's memory traffic, 44 B per logit (-> none)",
         lambda: _patched(compute, LOSS_BYTES_PER_LOGIT=0.0)),
    ]


def _line(name: str, rows: list[dict]) -> str:
    def stats(sub):
        e = [abs(r["error"]) for r in sub]
        return f"{100 * statistics.median(e):5.1f}% {100 * pct(e, 0.9):6.1f}%"
    dense = [r for r in rows if not r["moe"]]
    moe = [r for r in rows if r["moe"]]
    return f"{name:<74} {stats(rows)}  {stats(dense)}  {stats(moe)}"


def ablation() -> None:
    print(f"\n{'without':<74} {'all: med    p90':>15}  {'dense: med  p90':>15}  {'MoE: med    p90':>15}")
    print(_line("(nothing: the model as shipped)", calibration.throughput_rows()))
    for name, patch in _terms():
        with patch():
            print(_line(name, calibration.throughput_rows()))


def main() -> None:
    layer = calibration.layer_compute_rows()
    errs = sorted(abs(r["error"]) for r in layer)
    print(f"per-layer compute, h100_hf_layer_compute.jsonl: {len(layer)} rows, median |err| "
          f"{100 * statistics.median(errs):.1f}%, max {100 * errs[-1]:.1f}%")
    rows = calibration.throughput_rows()
    if "-v" in sys.argv:
        for r in sorted(rows, key=lambda r: r["id"]):
            print(f"{r['id']:<52} {r['layout']:<60} meas {r['measured']:9.1f} pred {r['predicted']:9.1f} "
                  f"{r['what']:<11} {100 * r['error']:+6.1f}%")
    print(f"\n{'group':<20} {'rows':>5} {'median |err|':>13} {'p90 |err|':>10}")
    for (g, p), (n, med, p90) in sorted(summary(rows).items()):
        print(f"{g + ' ' + p:<20} {n:>5} {100 * med:12.1f}% {100 * p90:9.1f}%")
    kept = [r for r in rows if not r["unmodelled"]]
    apart = sorted({r["unmodelled"] for r in rows} - {None})
    print(f"\nwithout the {len(rows) - len(kept)} rows that ran under conditions the model does not know "
          f"({'; '.join(apart)}):")
    for (g, p), (n, med, p90) in sorted(summary(kept).items()):
        if g in ("all", "moe"):
            print(f"{g + ' ' + p:<20} {n:>5} {100 * med:12.1f}% {100 * p90:9.1f}%")
    if "--ablation" in sys.argv:
        ablation()


if __name__ == "__main__":
    main()
