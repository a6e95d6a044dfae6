"""Framework exports: one module per framework, each `export(Target) -> Export`.

The modules load when an export is built, not when the package is imported (`shardwise
export --help` and `recommend` print without them; issue 16)."""
from __future__ import annotations

from importlib import import_module

# framework name -> its module in this package
FRAMEWORKS = {"deepspeed": "deepspeed", "megatron": "megatron", "nanotron": "nanotron", "torchtitan": "torchtitan",
              "fsdp": "fsdp", "accelerate": "accelerate"}


def __getattr__(name: str):
    if name in ("Export", "Target"):
        from . import target
        return getattr(target, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def module(framework: str):
    return import_module(f"{__name__}.{FRAMEWORKS[framework]}")


def recompute_modules(model) -> tuple[str, ...]:
    """Megatron-Core's per-module recomputation (kb/choices.RECOMPUTE "modules"; only Megatron has
    it): core attention and the norms, and the experts' activation in an MoE model -- which
    TransformerConfig accepts only with grouped GEMM ("moe_act in recompute_modules is only
    supported with moe_grouped_gemm"), as the MoE exports run."""
    return ("core_attn", "layernorm") + (("moe_act",) if model.is_moe else ())


def export(framework: str, target):
    """The framework's export; a layout with per-module recomputation goes to the others as
    selective recomputation, their nearest, and says so; so does a job timed on Megatron's
    full-iteration CUDA graphs, which the others cannot run."""
    if framework == "megatron":
        return module(framework).export(target)
    carried, lay = [], target.layout
    if target.job.training.cuda_graphs != "none":
        carried.append("--cuda-graphs full-iteration is Megatron-Core's whole-step CUDA graph; this runs without "
                       "it" + (", so the MoE layers' host-side time, which the estimate left out, is back"
                               if target.job.model.is_moe else ""))
    if lay.recompute == "modules":
        lay = lay.with_(recompute="selective")
        carried.append(f"per-module recomputation ({' '.join(recompute_modules(target.job.model))}) is "
                       "Megatron-Core's --recompute-modules; exported as selective recomputation, the nearest")
    ex = module(framework).export(type(target)(target.job, lay, tuple(carried)))
    ex.caveats[:0] = carried
    return ex


def export_all(target) -> dict:
    """Every framework's export (as dicts); a framework that refuses the job gives its reason."""
    from shardwise.kb.errors import InputError
    out = {}
    for name in FRAMEWORKS:
        try:
            out[name] = export(name, target).as_dict()
        except InputError as e:
            out[name] = {"framework": name, "files": {}, "caveats": [], "refused": str(e)}
    return out
