"""The data files shipped with shardwise (kb/data/*.yaml), parsed once each.

The package's own data is trusted: libyaml's C parser reads it (about 5x faster than the pure
Python one, which start-up pays on every command: benchmarks/speed.py). User YAML keeps the
Python loader that refuses aliases (kb/user_yaml.py)."""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=None)
def package_yaml(name: str) -> dict:
    text = resources.files("shardwise.kb").joinpath("data", f"{name}.yaml").read_text()
    return yaml.load(text, Loader=_LOADER)
