"""A GPU the catalog does not list, described as a catalog GPU with the user's own figures.

DESIGN.md's cluster input is "a catalog name or custom memory / dense TFLOP/s per precision / HBM
bandwidth". A custom GPU is built on the catalog entry nearest it (--gpu: its architecture,
vendor, links and node, which decide the kernels and the communication) with the figures the user
gives in place of the catalog's (--gpu-memory, --gpu-tflops, --gpu-fp8-tflops, --gpu-hbm-gbps):
an NVIDIA H20 is `--gpu h100-sxm --gpu-memory 96 --gpu-tflops 148 --gpu-fp8-tflops 296
--gpu-hbm-gbps 4000` (NVIDIA H20 datasheet). What the user does not give is the catalog's, and
what is derived from a given figure is stated in the answer (custom_gpu_figures below, one of the
answer's assumptions: kb/resolve.assumptions).
"""
from __future__ import annotations

from .errors import InputError
from .schema import SPEED_FIGURES, GPUSpec
from .track_record import catalog_gpu

# (low, high, integer, unit) of each figure, as kb/build._in_range takes them: memory from a small
# inference card to past any catalog GPU; dense BF16 from an old consumer card to well past a B300
# (2,500); FP8 twice that; HBM from GDDR to past the B300's 8,000 GB/s
RANGES = {"gpu_memory": (8, 320, False, "GiB"), "gpu_tflops": (10, 10000, False, "TFLOP/s"),
          "gpu_fp8_tflops": (10, 20000, False, "TFLOP/s"), "gpu_hbm_gbps": (100, 20000, False, "GB/s")}

# SPEED_FIGURES (kb/schema.py, beside GPUSpec.custom_speed): the figures that change how fast the
# GPU runs, not only what fits


def _number(value: float) -> str:
    return f"{value:g}"


def custom_gpu(g: GPUSpec, gpu_memory=None, gpu_tflops=None, gpu_fp8_tflops=None, gpu_hbm_gbps=None) -> GPUSpec:
    """``g`` with the figures given in place of its own; ``g`` itself where none is. The dense
    FP8 and plain FP32 peaks follow a given BF16 peak in the catalog GPU's ratio to it (tensor
    cores of one architecture keep those ratios: 2x for FP8 on Hopper and Blackwell), unless FP8
    is given too; an FP8 peak on a GPU the catalog gives none is refused, as its kernels (the
    architecture's) have none. The name carries every figure given, so that every answer, table
    row and export comment shows which GPU it is."""
    from .build import _in_range
    given = {k: v for k, v in dict(gpu_memory=gpu_memory, gpu_tflops=gpu_tflops, gpu_fp8_tflops=gpu_fp8_tflops,
                                   gpu_hbm_gbps=gpu_hbm_gbps).items() if v is not None}
    if not given:
        return g
    for key, value in given.items():
        _in_range(f"--{key.replace('_', '-')}", value, *RANGES[key])
    if gpu_fp8_tflops is not None and not g.tflops_fp8:
        raise InputError(f"--gpu-fp8-tflops: {g.name} has no FP8 tensor cores for the figure to describe; "
                         "build the GPU on a catalog GPU with them (shardwise kb gpus: an H100 or later)")
    update = {}
    if gpu_memory is not None:
        update["memory_gib"] = float(gpu_memory)
    if gpu_tflops is not None:
        ratio = gpu_tflops / g.tflops_bf16
        update.update(tflops_bf16=float(gpu_tflops), tflops_fp32=g.tflops_fp32 * ratio)
        if g.tflops_fp8 and gpu_fp8_tflops is None:
            update["tflops_fp8"] = g.tflops_fp8 * ratio
    if gpu_fp8_tflops is not None:
        update["tflops_fp8"] = float(gpu_fp8_tflops)
    if gpu_hbm_gbps is not None:
        update["hbm_gbps"] = float(gpu_hbm_gbps)
    if any(k in given for k in SPEED_FIGURES):
        update["speed_checked_on"] = ""
    update["custom"] = tuple(k for k in RANGES if k in given or k in g.custom)
    memory = f"{gpu_memory} GiB" if gpu_memory is not None else None
    return named(g.model_copy(update=update), catalog_gpu(g.name), memory)


def named(g: GPUSpec, base: str, memory: str | None = None) -> GPUSpec:
    """``g`` named '<catalog name> (<each figure the user gave>)', the catalog name first, which
    kb/track_record.catalog_gpu reads back: its memory as ``memory`` words it ('96 GiB', the value
    as --gpu-memory took it, as it has always been named), then the TFLOP/s and GB/s given; a GPU
    given none keeps its catalog name."""
    shown = {"gpu_memory": memory or f"{_number(g.memory_gib)} GiB", "gpu_tflops": f"{_number(g.tflops_bf16)} TFLOP/s",
             "gpu_fp8_tflops": f"FP8 {_number(g.tflops_fp8 or 0)} TFLOP/s", "gpu_hbm_gbps": f"{_number(g.hbm_gbps)} GB/s"}
    parts = [shown[k] for k in RANGES if k in g.custom]
    return g.model_copy(update={"name": f"{base} ({', '.join(parts)})" if parts else base})


def custom_gpu_figures(g: GPUSpec) -> list[str]:
    """What the answer says of a custom GPU: which figures are the user's and which follow from
    them or stay those of the catalog GPU it is built on. Empty for a catalog GPU, or one given
    only its memory (the name says it, and its speed is the catalog's)."""
    if not g.custom_speed:
        return []
    from . import catalog
    base = catalog.gpu(catalog_gpu(g.name))
    parts = [f"dense BF16 {_number(g.tflops_bf16)} TFLOP/s" + ("" if "gpu_tflops" in g.custom else " (the catalog's)")]
    if g.tflops_fp8:
        fp8 = f"FP8 {_number(round(g.tflops_fp8, 1))} TFLOP/s"
        if "gpu_fp8_tflops" not in g.custom:
            fp8 += (f" ({round(base.tflops_fp8 / base.tflops_bf16, 2):g}x BF16, the catalog {base.name}'s ratio)"
                    if "gpu_tflops" in g.custom else " (the catalog's)")
        parts.append(fp8)
    parts.append(f"HBM {_number(g.hbm_gbps)} GB/s" + ("" if "gpu_hbm_gbps" in g.custom else " (the catalog's)"))
    return [f"custom GPU on {base.name}: {', '.join(parts)}; its architecture ({base.arch}), links and node are "
            f"{base.name}'s, its clock under load too, and its speed is checked against no published run"]
