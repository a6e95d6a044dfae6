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


def export(framework: str, target):
    return module(framework).export(target)


def export_all(target) -> dict:
    """Every framework's export (as dicts); a framework that refuses the job gives its reason."""
    from shardwise.kb.errors import InputError
    out = {}
    for name in FRAMEWORKS:
        try:
            out[name] = module(name).export(target).as_dict()
        except InputError as e:
            out[name] = {"framework": name, "files": {}, "caveats": [], "refused": str(e)}
    return out
