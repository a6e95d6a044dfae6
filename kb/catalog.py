"""The YAML catalogs (kb/data/*.yaml): GPUs, links and models, looked up by the names users type."""
from __future__ import annotations

import difflib
import re

from .errors import InputError
from .package_data import package_yaml
from .schema import GPUSpec, LinkSpec, ModelSpec


_load = package_yaml


def _bare(name: str) -> str:
    """A name without the separators people drop or swap ('-', '_', '.'): gemma3-12b, gemma_3_12b
    and gemma-3-12b are one name to the suggestions."""
    return name.translate(str.maketrans("", "", "-_."))


def _same_lead(typed: str, table: dict) -> list[str]:
    """The names that share the most leading words with the typed one (at least its first),
    most alike first: '--gpu a100-sxm' begins no name, and string similarity offered h100-sxm
    and a10 before any A100; its first word names the A100s."""
    words = re.split(r"[-_.]", typed)
    def lead(name):
        n = 0
        for a, b in zip(words, re.split(r"[-_.]", name)):
            if a != b:
                break
            n += 1
        return n
    most = max((lead(n) for n in table), default=0)
    if not most:
        return []
    return sorted((n for n in table if lead(n) == most),
                  key=lambda n: (-difflib.SequenceMatcher(None, _bare(typed), _bare(n)).ratio(), n))


def _lookup(table: dict, key: str, what: str, flag: str):
    k = key.strip().lower()
    if k in table:
        return k, table[k]
    # the names the typed one begins (--gpu h100: h100-sxm, h100-pcie, h100-nvl) first: string
    # similarity alone offered h800 and h200 before h100-sxm and left out the PCIe and NVL cards.
    # Both sides without separators: "llama4" begins "llama-4-maverick" as much as "llama-4-scout"
    bare = {_bare(n): n for n in table}
    starts = sorted(n for b, n in bare.items() if _bare(k) and b.startswith(_bare(k)))
    close = difflib.get_close_matches(_bare(k), list(bare), n=3, cutoff=0.5)
    near = list(dict.fromkeys(starts + _same_lead(k, table) + [bare[b] for b in close]))[:5]
    hint = f"did you mean {', '.join(near)}?" if near else f"known: {', '.join(sorted(table))}"
    raise InputError(f"{flag}: unknown {what} '{key}'; {hint} (list them with `shardwise kb {what}s`)")


def gpu_names() -> list[str]:
    return sorted(_load("gpus")["gpus"])


def model_names() -> list[str]:
    return sorted(_load("models")["models"])


def link_names() -> list[str]:
    return sorted(_load("links")["links"])


def gpu(name: str, flag: str = "--gpu") -> GPUSpec:
    key, d = _lookup(_load("gpus")["gpus"], name, "gpu", flag)
    t = d["tflops"]
    return GPUSpec(name=key, vendor=d["vendor"], arch=d["arch"], memory_gib=d["memory_gib"], tflops_bf16=t["bf16"], tflops_fp8=t.get("fp8"),
                   tflops_fp32=t["fp32"],
                   hbm_gbps=d["hbm_gbps"], intra_link=d["intra_link"], pair_link=d.get("pair_link"), gpus_per_node=d["gpus_per_node"],
                   host_pcie=d.get("host_pcie", d["intra_link"] if d["intra_link"].startswith("pcie") else "pcie5"),
                   host_link_gbps=d.get("host_link_gbps"), host_memory_gib=d.get("host_memory_gib"),
                   nvlink_domain=d.get("nvlink_domain", 0), cuda_context_gib=d["cuda_context_gib"],
                   sustained_share=d.get("sustained_share", 1.0), mxfp8=d.get("mxfp8", False),
                   speed_checked_on=d.get("speed_checked_on", ""), source=d["source"])


def link(name: str) -> LinkSpec:
    data = _load("links")
    key = data.get("aliases", {}).get(name.strip().lower(), name)
    k, d = _lookup(data["links"], key, "link", "--interconnect")
    return LinkSpec(name=k, **d)


def model(name: str) -> ModelSpec:
    key, d = _lookup(_load("models")["models"], name, "model", "--model")
    return ModelSpec(name=key, **d)


def raw(name: str) -> dict:
    """The catalog file as data (for `shardwise kb`)."""
    return _load(name)
