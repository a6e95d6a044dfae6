"""Framework exports: one module per framework, each `export(Target) -> Export`."""
from __future__ import annotations

from . import accelerate, deepspeed, fsdp, megatron, nanotron, torchtitan
from .target import Export, Target

FRAMEWORKS = {"deepspeed": deepspeed, "megatron": megatron, "nanotron": nanotron, "torchtitan": torchtitan,
              "fsdp": fsdp, "accelerate": accelerate}


def export(framework: str, target: Target) -> Export:
    return FRAMEWORKS[framework].export(target)


def export_all(target: Target) -> dict:
    """Every framework's export (as dicts); a framework that refuses the job gives its reason."""
    from shardwise.kb.errors import InputError
    out = {}
    for name, mod in FRAMEWORKS.items():
        try:
            out[name] = mod.export(target).as_dict()
        except InputError as e:
            out[name] = {"framework": name, "files": {}, "caveats": [], "refused": str(e)}
    return out
