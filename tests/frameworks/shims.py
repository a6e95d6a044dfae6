"""Import shims for validating configs on a CPU machine without triton (~1 GB) or Python 3.12.

Per docs/reference/framework-configs.md: replace only the modules of a package whose source
imports triton at top level with empty stubs (a global fake triton breaks torch._inductor), and
give Python 3.11 the typing.override that megatron-core 0.19 uses.
"""
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import types
import typing
from unittest.mock import MagicMock

_TRITON = re.compile(r"^(import triton|from triton)", re.M)


class _Stub(importlib.abc.Loader):
    def create_module(self, spec):
        return types.ModuleType(spec.name)

    def exec_module(self, module):
        # names imported from a stubbed module exist but do nothing (they are only reached
        # when a kernel runs, never while arguments are parsed)
        module.__path__ = []
        module.__getattr__ = lambda name: MagicMock(name=f"{module.__name__}.{name}")


class NoTriton(importlib.abc.MetaPathFinder):
    def __init__(self, prefixes):
        self.prefixes = tuple(prefixes)

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(self.prefixes):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return None
        with open(spec.origin, encoding="utf-8") as f:
            if not _TRITON.search(f.read()):
                return None
        return importlib.util.spec_from_loader(name, _Stub())


def install(prefixes):
    if not hasattr(typing, "override"):
        typing.override = lambda f: f
    if importlib.util.find_spec("triton") is None:
        sys.meta_path.insert(0, NoTriton(prefixes))
