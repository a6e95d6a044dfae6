"""Collective communication time over the link a process group actually spans.

Ring collectives, alpha-beta model (Thakur et al. 2005; NCCL's bus-bandwidth convention,
nccl-tests PERFORMANCE.md): with S the bytes each rank ends up with (all-gather), contributes
(reduce-scatter, all-reduce) or sends in total (all-to-all) and n ranks,
    all-reduce      2 (n-1)/n x S / bw + latency
    all-gather      (n-1)/n x S / bw + latency          (reduce-scatter the same)
    all-to-all      (n-1)/n x S / bw + latency
    point-to-point  S / bw + latency
bw is the link's per-GPU one-direction bandwidth times the efficiency NCCL reaches on it
(kb/data/links.yaml). Latency per all-reduce is alpha x min(n - 1, 2 log2 n): rings for small
groups, NCCL's trees beyond; all-gather and reduce-scatter have no tree in NCCL (its Tree
algorithm is all-reduce only, NCCL docs NCCL_ALGO), so their ring pays alpha on each of its
n - 1 steps -- what makes a per-layer ZeRO-3 gather over a thousand ranks latency-bound.

Which link: Megatron-Core orders ranks tp-cp-ep-dp-pp (parallel_state.py), so a group of size
n whose members are ``stride`` ranks apart spans n x stride consecutive ranks; if that exceeds
the job's block of an NVLink domain (a node, or its share of an NVL72 rack: ClusterSpec.
domain_block), or does not divide it, the group crosses nodes. Point-to-point sends and
all-to-all then run at one NIC's bandwidth (group_link): every member pushes its own bytes out
through its own NIC. A ring collective is different (collective_link): NCCL runs one ring
channel per NIC, each ring leaving the domain through a different member, so the inter-node
hops of k members in a domain share k NICs and the bus bandwidth is k x one NIC's, up to the
NVLink's (nccl-tests PERFORMANCE.md: busbw is what each hop of the ring carries; NVIDIA/
nccl-tests#283: ~350 GB/s all_reduce busbw over 248 nodes of 8 H200 with 8 x 400 Gb/s NICs,
seven times one NIC's ~48 GB/s of NVIDIA/nccl-tests#290). A data-parallel group under TP 8 has
one member per node and gets one NIC; under TP 1 it has eight and gets the node's eight.

Inside a node without a switch (LinkSpec.peer_gbps: the MI300X's Infinity Fabric, each GPU
wired to each of its seven peers by one 64 GB/s link) a transfer runs on the direct links to the
members it reaches (intra_bw): a point-to-point send (PP, the CP ring) on one link, a ring
collective or all-to-all over n members on n - 1 of them, the whole link only for all eight.
A PCIe node whose GPUs are bridged in pairs (GPUSpec.pair_link: the H100 NVL's NVLink bridge,
600 GB/s between the two) runs a group of two adjacent ranks on the bridge, larger groups on PCIe.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from .. import catalog
from ..layout import Layout
from ..schema import ClusterSpec
from ..vec import ceil_log2, maximum, minimum, where


class Link(NamedTuple):
    """What a group's transfers run at: bytes/s per GPU and seconds of latency per hop
    (numbers, or arrays when the search asks for many groups at once)."""
    bw: object
    latency_s: object


def intra_bw(c: ClusterSpec, peers):
    """Bytes/s per GPU inside the NVLink domain for a transfer spread over ``peers`` other members:
    behind a switch the link's bus bandwidth whatever the count; on a full mesh
    (LinkSpec.peer_gbps) one direct link per peer at the link's efficiency, at most the whole
    link -- min(gbps, peers x peer_gbps) x efficiency (AMD ROCm blog on MI300X xGMI: 64 GB/s a
    point-to-point link; kb/data/links.yaml)."""
    full = c.intra.bus_gbps * 1e9
    if c.intra.peer_gbps is None:
        return full
    return minimum(full, maximum(peers, 1) * c.intra.peer_gbps * c.intra.efficiency * 1e9)


@lru_cache(maxsize=None)
def _pair_bus(name: str) -> float:
    """Bytes/s of a bridge link (kb/data/links.yaml gbps x efficiency, LinkSpec.bus_gbps)."""
    return catalog.link(name).bus_gbps * 1e9


def on_pair(c: ClusterSpec, size, stride):
    """Whether a group is the two GPUs of a bridged pair (GPUSpec.pair_link, the H100 NVL's NVLink
    bridge): two adjacent ranks inside a node -- ranks 2k and 2k + 1, the pair a node's local
    ranks map onto."""
    if c.gpu.pair_link is None:
        return False
    return (size == 2) & (stride == 1) & (c.nvlink_domain >= 2)


def bridged(c: ClusterSpec, size, stride, bw):
    """``bw``, or the bridge's own bus bandwidth where the group is a bridged pair (on_pair)."""
    if c.gpu.pair_link is None:
        return bw
    return where(on_pair(c, size, stride), _pair_bus(c.gpu.pair_link), bw)


def _gcd(a: int, b):
    return np.gcd(a, b.astype(np.int64)) if isinstance(b, np.ndarray) else math.gcd(a, int(b))


def group_link(c: ClusterSpec, size, stride, peers=None) -> Link:
    """The link a group's all-to-all transfers run at: NVLink inside the domain (over the
    size - 1 peers each member sends to, or ``peers``; a bridged pair's own link, on_pair), one
    NIC per GPU once the group crosses it -- or the GPU's share of its node's one NIC
    (ClusterSpec.inter_bus_gbps)."""
    intra = (size <= 1) | c.inside_block(size, stride)
    bw = where(intra, intra_bw(c, size - 1 if peers is None else peers), c.inter_bus_gbps * 1e9)
    return Link(bridged(c, size, stride, bw), where(intra, c.intra.latency_us * 1e-6, c.inter.latency_us * 1e-6))


def p2p_link(c: ClusterSpec, size, stride) -> Link:
    """The link a group's point-to-point sends run at (PP's activations, the CP ring's K/V): as
    group_link, each send to one neighbour, so over one direct link of a mesh."""
    return group_link(c, size, stride, peers=1)


def collective_link(c: ClusterSpec, size, stride) -> Link:
    """The link a group's ring collectives (all-reduce, all-gather, reduce-scatter) run at: as
    group_link, but across domains the bus bandwidth of the k members inside one domain, k NICs
    (one ring channel each), at most what the k members reach among themselves (intra_bw over
    k - 1 peers; a lone member, the whole link to its NIC)."""
    link = group_link(c, size, stride)
    per_domain = maximum(1, minimum(size, _gcd(c.domain_block, size * stride) // stride))
    cap = bridged(c, size, stride, where(per_domain > 1, intra_bw(c, per_domain - 1), c.intra.bus_gbps * 1e9))
    # inside the domain link.bw is that cap already, and the minimum leaves it there
    return Link(minimum(cap, per_domain * link.bw), link.latency_s)


def _alpha(link: Link, n, ring_steps):
    """Latency of a collective over ``n`` ranks: alpha x min(ring_steps, 2 ceil(log2 n)), a ring's
    steps for small groups, a binary tree's up and down beyond (NCCL's Tree algorithm, NCCL docs
    NCCL_ALGO). A ring all-reduce is a reduce-scatter then an all-gather, 2 (n - 1) steps
    (Thakur et al. 2005); an all-to-all issues its n - 1 sends at once."""
    return link.latency_s * minimum(ring_steps, 2 * ceil_log2(n))


def all_reduce(link: Link, n, nbytes):
    """Ring all-reduce of ``nbytes`` per rank: 2 (n-1)/n x S / bw + _alpha over 2 (n - 1) ring
    steps (Thakur et al. 2005; nccl-tests PERFORMANCE.md: busbw = algbw x 2 (n-1)/n); 0 for one
    rank."""
    return where(n <= 1, 0.0, 2 * (n - 1) / n * nbytes / link.bw + _alpha(link, n, 2 * (n - 1)))


def all_gather(link: Link, n, nbytes):
    """Ring all-gather (reduce-scatter the same): (n-1)/n x S / bw, and alpha on each of the ring's
    n - 1 steps (NCCL runs these collectives on rings only)."""
    return where(n <= 1, 0.0, (n - 1) / n * nbytes / link.bw + link.latency_s * (n - 1))


def all_to_all(link: Link, n, nbytes):
    """All-to-all: (n-1)/n x S / bw, the sends to every peer issued at once (_alpha over n - 1)."""
    return where(n <= 1, 0.0, (n - 1) / n * nbytes / link.bw + _alpha(link, n, n - 1))


reduce_scatter = all_gather


def p2p(link: Link, nbytes):
    """Point-to-point send of ``nbytes``: S / bw + one latency (the alpha-beta model)."""
    return nbytes / link.bw + link.latency_s


def strides(lay: Layout) -> dict:
    """Rank distance between members of each group, in Megatron's tp-cp-ep-dp-pp order."""
    return {"tp": 1, "cp": lay.tp, "ep": lay.etp, "dp": lay.tp * lay.cp, "pp": lay.tp * lay.cp * lay.dp}
