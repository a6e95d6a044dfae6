"""Collective communication time over the link a process group actually spans.

Ring collectives, alpha-beta model (Thakur et al. 2005; NCCL's bus-bandwidth convention,
nccl-tests PERFORMANCE.md): with S the bytes each rank ends up with (all-gather), contributes
(reduce-scatter, all-reduce) or sends in total (all-to-all) and n ranks,
    all-reduce      2 (n-1)/n x S / bw + latency
    all-gather      (n-1)/n x S / bw + latency          (reduce-scatter the same)
    all-to-all      (n-1)/n x S / bw + latency
    point-to-point  S / bw + latency
bw is the link's per-GPU one-direction bandwidth times the efficiency NCCL reaches on it
(kb/data/links.yaml). Latency per collective is alpha x min(n - 1, 2 log2 n): rings for
small groups, NCCL's trees beyond.

Which link: Megatron-Core orders ranks tp-cp-ep-dp-pp (parallel_state.py), so a group of size
n whose members are ``stride`` ranks apart spans n x stride consecutive ranks; if that exceeds
the NVLink domain (a node, or an NVL72 rack) the group crosses nodes and every transfer runs
at the inter-node link's per-GPU bandwidth (one NIC per GPU).
"""
from __future__ import annotations

import math

from ..layout import Layout
from ..schema import ClusterSpec, LinkSpec


def group_link(c: ClusterSpec, size: int, stride: int) -> LinkSpec:
    if size <= 1 or size * stride <= c.nvlink_domain:
        return c.intra
    return c.inter


def _alpha(link: LinkSpec, n: int) -> float:
    return link.latency_us * 1e-6 * min(n - 1, 2 * math.ceil(math.log2(n)))


def _bw(link: LinkSpec) -> float:
    return link.bus_gbps * 1e9


def all_reduce(link: LinkSpec, n: int, nbytes: float) -> float:
    return 0.0 if n <= 1 else 2 * (n - 1) / n * nbytes / _bw(link) + _alpha(link, n)


def all_gather(link: LinkSpec, n: int, nbytes: float) -> float:
    return 0.0 if n <= 1 else (n - 1) / n * nbytes / _bw(link) + _alpha(link, n)


reduce_scatter = all_gather
all_to_all = all_gather


def p2p(link: LinkSpec, nbytes: float) -> float:
    return nbytes / _bw(link) + link.latency_us * 1e-6


def strides(lay: Layout) -> dict:
    """Rank distance between members of each group, in Megatron's tp-cp-ep-dp-pp order."""
    return {"tp": 1, "cp": lay.tp, "ep": lay.etp, "dp": lay.tp * lay.cp, "pp": lay.tp * lay.cp * lay.dp}
