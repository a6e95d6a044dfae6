"""Build a Job from what a user typed (flags or a job file): names resolved in the catalogs,
counts parsed, every bad value refused with one line naming it and what is allowed."""
from __future__ import annotations

from typing import Any, Optional

from pydantic import ValidationError

from . import catalog
from .errors import InputError
from .hf_config import read_hf_config
from .infer import infer_model, parse_count
from .job import Job
from .schema import ClusterSpec, ModelSpec, TrainingSpec

INTERCONNECTS = ("nvlink", "infiniband", "roce", "ethernet", "pcie")


def _first_error(e: ValidationError, prefix: str) -> InputError:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()) if x != "__root__")
    msg = err.get("msg", str(e)).removeprefix("Value error, ")
    return InputError(f"{prefix}{'--' + loc.replace('_', '-') + ': ' if loc else ''}{msg}")


def resolve_model(model: Optional[str], hf_config: Optional[str], params: Optional[str]) -> ModelSpec:
    given = [x for x in (model, hf_config, params) if x]
    if len(given) != 1:
        raise InputError("give exactly one of --model NAME, --hf-config PATH or --params COUNT "
                         f"(got {len(given)}); e.g. --model llama-3-70b")
    if model:
        return catalog.model(model)
    if hf_config:
        return read_hf_config(hf_config)
    return infer_model(parse_count(params, "--params"))


def resolve_links(gpu_intra: str, interconnect: Optional[str]) -> tuple:
    """--interconnect names the fabric: a word (nvlink|infiniband|roce|ethernet|pcie) or a
    catalog link (e.g. infiniband-hdr). nvlink/pcie set how GPUs inside a node talk (inter-node
    then defaults to InfiniBand NDR); infiniband/roce/ethernet set the inter-node fabric."""
    intra_name, inter_name = gpu_intra, "infiniband"
    if interconnect is None:                 # the GPU's own intra-node link, InfiniBand between nodes
        return catalog.link(intra_name), catalog.link(inter_name)
    word = interconnect.strip().lower()
    if word == "nvlink":
        if gpu_intra.startswith("pcie"):
            raise InputError("--interconnect nvlink: this GPU has no NVLink between all GPUs of a node; "
                             "use --interconnect pcie")
    elif word == "pcie":
        intra_name = gpu_intra if gpu_intra.startswith("pcie") else "pcie5"
    elif word in catalog.raw("links").get("aliases", {}) or word in catalog.link_names():
        ln = catalog.link(word)
        if ln.kind == "intra":
            intra_name = ln.name
        else:
            inter_name = ln.name
    else:
        raise InputError(f"--interconnect: unknown '{interconnect}'; allowed: {', '.join(INTERCONNECTS)} "
                         f"or a link of `shardwise kb links`")
    return catalog.link(intra_name), catalog.link(inter_name)


def build_job(*, model=None, hf_config=None, params=None, gpu="h100-sxm", gpu_memory=None, gpus=8,
              gpus_per_node=None, interconnect=None, price_per_gpu_hour=None, **training: Any) -> Job:
    m = resolve_model(model, hf_config, params)
    g = catalog.gpu(gpu or "h100-sxm")
    if gpu_memory is not None:
        if not (isinstance(gpu_memory, (int, float)) and 8 <= gpu_memory <= 320):
            raise InputError(f"--gpu-memory: {gpu_memory} GB is outside 8-320")
        g = g.model_copy(update={"memory_gib": float(gpu_memory), "name": f"{g.name} ({gpu_memory} GB)"})
    if gpus is None or isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= 16384:
        raise InputError(f"--gpus: {gpus!r} must be an integer from 1 to 16384")
    gpn = gpus_per_node or g.gpus_per_node
    if isinstance(gpn, bool) or not isinstance(gpn, int) or not 1 <= gpn <= 72:
        raise InputError(f"--gpus-per-node: {gpn!r} must be an integer from 1 to 72")
    gpn = min(gpn, gpus)
    intra, inter = resolve_links(g.intra_link, interconnect)
    try:
        cluster = ClusterSpec(gpu=g, gpus=gpus, gpus_per_node=gpn, intra=intra, inter=inter,
                              price_per_gpu_hour=price_per_gpu_hour)
    except ValidationError as e:
        raise _first_error(e, "")
    tb = training.pop("token_budget", None)
    if isinstance(tb, str):
        tb = parse_count(tb, "--token-budget")
    gbt = training.pop("global_batch_tokens", None)
    clean = {k: v for k, v in training.items() if v is not None}
    if gbt is not None:
        tokens = parse_count(gbt, "--global-batch-tokens") if isinstance(gbt, str) else float(gbt)
        if "global_batch" in clean:
            raise InputError("give --global-batch (sequences) or --global-batch-tokens, not both")
        seq = clean.get("seq_len", TrainingSpec.model_fields["seq_len"].default)
        clean["global_batch"] = max(1, round(tokens / seq))
    try:
        tspec = TrainingSpec(token_budget=tb, **clean)
    except ValidationError as e:
        raise _first_error(e, "")
    if tspec.precision == "fp8" and not g.tflops_fp8:
        raise InputError(f"--precision fp8: {g.name} has no FP8 tensor cores; allowed here: bf16, pure-bf16")
    if tspec.training == "qlora" and tspec.framework == "megatron":
        tspec = tspec.model_copy(update={"framework": "hf"})
    return Job(model=m, cluster=cluster, training=tspec)
