"""The file a --hf-config path names and its JSON: a model folder's config.json, and what
json.loads would take silently or fail on (a key given twice, nesting past Python's parser,
an integer past its digit limit), each refused in one line.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import InputError, too_long_number
from .adapter import ADAPTER_FILE
from .fields import _show


class _Twice(dict):
    """A JSON object in which a key was given twice: ``twice`` holds the key and its first two
    values (json.loads keeps the last silently, as transformers' json.load does)."""
    twice: tuple = ()


def _pairs(seen: list):
    """json.loads' object_pairs_hook: each object as json.loads builds it, marked where a key is
    given twice (and ``seen`` told, so that _first_twice walks only a file that has one)."""
    def hook(pairs: list) -> dict:
        out: dict = {}
        for k, v in pairs:
            if k in out and not isinstance(out, _Twice):
                out = _Twice(out)
                out.twice = (k, out[k], v)
                seen.append(True)
            out[k] = v
        return out
    return hook


def _first_twice(cfg) -> tuple:
    """(dotted place, first value, second value) of the first key given twice, in the order the
    objects are read from the top (a nested object's as 'rope_scaling.factor'). Iterative: a file
    nested as deep as json.loads reads would overflow a recursive walk."""
    todo = [("", cfg)]
    while todo:
        place, v = todo.pop()
        if isinstance(v, _Twice):
            k, first, second = v.twice
            return (f"{place}.{k}" if place else k), first, second
        if isinstance(v, dict):
            todo += reversed([(f"{place}.{k}" if place else k, x) for k, x in v.items() if isinstance(x, (dict, list))])
        elif isinstance(v, list):
            todo += reversed([(f"{place}[{i}]", x) for i, x in enumerate(v) if isinstance(x, (dict, list))])
    raise AssertionError("a key given twice that the walk did not find")


def _parse_json(text: str, path: str) -> dict:
    twice: list = []
    try:
        cfg = json.loads(text, object_pairs_hook=_pairs(twice))
    except json.JSONDecodeError as e:
        raise InputError(f"--hf-config: '{path}' is not valid JSON (line {e.lineno}: {e.msg})")
    except ValueError:          # json.loads' only other ValueError: an integer past Python's digit limit
        raise too_long_number(f"--hf-config: '{path}'")
    except RecursionError:      # arrays or objects nested past Python's recursion limit (about 1000 deep)
        raise InputError(f"--hf-config: '{path}' nests too deeply (JSON arrays or objects inside each other "
                         f"past what Python's parser takes); a config.json nests a few levels")
    if not isinstance(cfg, dict):
        raise InputError(f"--hf-config: '{path}' must hold a JSON object")
    if twice:
        # transformers reads the last of the two; which one the writer meant, nothing says
        key, first, second = _first_twice(cfg)
        raise InputError(f"{path}: key {_show(key)} given twice ({_show(first)}, {_show(second)}); each key "
                         "may appear once in a JSON object")
    return cfg


def _locate(path: str) -> Path:
    """The config.json a --hf-config path names: the file, or a model folder's config.json."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(f"--hf-config: '{path}' does not exist; give the path of a model's config.json or of "
                         "the folder holding it")
    except ValueError:          # a NUL in a path from a job file
        raise InputError(f"--hf-config: {_show(path)} is not a valid path; give the path of a model's config.json "
                         "or of the folder holding it")
    except OSError:             # read_input_file says why it cannot be read
        pass
    p = Path(path)
    if p.is_dir():
        # a model folder (a snapshot, a checkpoint) holds its config.json
        if not (p / "config.json").is_file():
            if (p / ADAPTER_FILE).is_file():
                return p / ADAPTER_FILE     # a LoRA output folder: read_hf_config says what it is
            raise InputError(f"--hf-config: '{path}' is a folder without a config.json; give the config.json's path")
        p = p / "config.json"
    return p
