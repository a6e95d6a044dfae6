"""`shardwise kb gpus|models|links`: list the catalogs with the numbers the estimators use."""
from __future__ import annotations

import click

from .main import Group
from .output import emit, format_option, table


def _emit(rows, headers, fmt, data):
    emit(data, fmt, lambda markdown: table(rows, headers, markdown=markdown))


@click.group(cls=Group)
def kb():
    """List the built-in catalogs."""




@kb.command()
@format_option
def gpus(fmt):
    """GPUs: memory, dense TFLOP/s, HBM bandwidth, link, GPUs per node."""
    from shardwise.kb import catalog
    data = {n: catalog.gpu(n).model_dump() for n in catalog.gpu_names()}
    rows = [[n, f"{g['memory_gib']:.1f}", g["tflops_bf16"], g["tflops_fp8"] or "-", g["hbm_gbps"], g["intra_link"],
             g["gpus_per_node"]] for n, g in data.items()]
    _emit(rows, ["gpu", "GiB", "bf16 TF", "fp8 TF", "HBM GB/s", "intra link", "per node"], fmt, data)


@kb.command()
@format_option
def models(fmt):
    """Models: shape and parameter counts (computed from the architecture)."""
    from shardwise.kb import catalog
    from shardwise.kb.params import active_params, total_params
    data = {}
    rows = []
    for n in catalog.model_names():
        m = catalog.model(n)
        d = m.model_dump(exclude_defaults=True)
        d["total_params"], d["active_params"] = total_params(m), active_params(m)
        data[n] = d
        moe = f"{m.experts}x top-{m.top_k}" if m.is_moe else "-"
        rows.append([n, f"{d['total_params'] / 1e9:.2f}B", f"{d['active_params'] / 1e9:.2f}B", m.layers, m.hidden,
                     m.ffn, f"{m.heads}/{m.kv_heads}", m.vocab, moe])
    _emit(rows, ["model", "params", "active", "layers", "hidden", "ffn", "heads/kv", "vocab", "experts"], fmt, data)


@kb.command()
@format_option
def links(fmt):
    """Interconnects: one-direction bandwidth per GPU (or per node, where a node's GPUs share one
    NIC), latency, collective efficiency."""
    from shardwise.kb import catalog
    data = {n: catalog.link(n).model_dump() for n in catalog.link_names()}
    rows = [[n, d["kind"], d["gbps"], "node" if d["shared_by_node"] else "GPU", d["latency_us"], d["efficiency"]]
            for n, d in data.items()]
    _emit(rows, ["link", "kind", "GB/s", "per", "latency us", "efficiency"], fmt, data)
