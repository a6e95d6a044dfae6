"""Time that Megatron's activation offloading adds to a step.

Under Megatron-Core's ``cpu_offloading`` (Transformer Engine's get_cpu_offload_context), the
first ``offload`` layers of the rank copy their saved tensors to pinned host memory as the
forward saves them, and copy them back for each layer's backward. The copies run on their own
CUDA stream, beside the compute: "Transfers are asynchronous ... Offloading starts as soon as
tensors are saved for backward ... Reloading must complete by the time the tensor is needed for
the layer's backward pass" (Transformer Engine docs, features/other_optimizations/cpu_offloading).
So a copy costs time only where it outlasts the compute it runs beside, and with all but one
layer offloaded "compute and transfers cannot overlap".
"""
from __future__ import annotations

from .. import catalog
from ..vec import maximum, where

# The share of a host link's one-direction figure that a large pinned-memory copy reaches. An
# assumption, not a measurement cited here: PCIe's 128b/130b coding and packet headers leave
# about 85% of Gen5 x16's 64 GB/s, and links.yaml's own PCIe efficiency is 0.75; 0.8 between.
HOST_COPY_EFFICIENCY = 0.8
# a layer's forward is a third of its forward + backward compute: 2 of the 6 FLOPs per
# parameter and token (Narayanan et al. 2021, section 3.2; Kaplan et al. 2020)
FORWARD_SHARE = 1.0 / 3.0


def host_copy_gbps(gpu) -> float:
    """GB/s one direction of a copy between the GPU and host memory: the GPU's own host link
    (GPUSpec.host_link_gbps: NVLink-C2C on Grace-Blackwell) else its host PCIe generation
    (links.yaml: pcie5 64 GB/s, pcie4 32 GB/s), x HOST_COPY_EFFICIENCY."""
    gbps = gpu.host_link_gbps or catalog.link(gpu.host_pcie).gbps
    return gbps * HOST_COPY_EFFICIENCY


def offload_seconds(lay, layers: int, offloaded_bytes, compute_s, gpu):
    """Exposed seconds of one micro-batch's offload copies on a stage: each direction moves the
    offloaded layers' activations (kb/memory/activations.offloaded_bytes) in bytes / host_copy_gbps;
    the copy out hides behind the forward (FORWARD_SHARE of ``compute_s``), the copy back
    behind the backward (the rest), and what is longer than its window is exposed:
    max(0, copy - forward) + max(0, copy - backward). With offload = layers - 1 nothing
    overlaps (Transformer Engine: one set of activations on the GPU), so both copies are
    exposed whole. 0 without offloading."""
    copy = offloaded_bytes / (host_copy_gbps(gpu) * 1e9)
    overlapped = maximum(0.0, copy - FORWARD_SHARE * compute_s) + maximum(0.0, copy - (1 - FORWARD_SHARE) * compute_s)
    serial = where(lay.offload >= layers - 1, 2.0 * copy, overlapped)
    return where(lay.offload > 0, serial, 0.0)
