"""The model's name, as every output and export header writes it: the Hugging Face cache
folder's ORG/NAME, config.json's _name_or_path, or what the file's own path says; where
nothing names it, its model_type and size.
"""
from __future__ import annotations

import os
import re
from pathlib import Path


# A folder or file name that says nothing about the model: a revision (a 40-hex commit, a
# 64-hex blob), the Hugging Face cache's own folders, the Trainer's checkpoint-<step> and the
# like, or a word any config could sit under
HASH = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
STEP = re.compile(r"(checkpoint|ckpt|step|global_step|iter|epoch)[-_]?\d+", re.IGNORECASE)
GENERIC_NAMES = frozenset({
    "", ".", "..", "config", "configs", "cfg", "cfgs", "conf", "hf", "hf_config", "hub", "huggingface", "cache",
    "snapshots", "blobs", "refs", "main", "model", "models", "checkpoint", "checkpoints", "ckpt", "ckpts",
    "weights", "final", "latest", "best", "output", "outputs", "out", "tmp", "temp", "data", "download",
    "downloads", "files", "src", "json",
})
# a model's name in a header, a title or a run name: Hugging Face ids run to a few dozen
# characters (ORG/NAME, each at most 96 on the Hub); longer is a path or junk, cut here
NAME_MAX = 100


def _printable(raw: str) -> str:
    """raw with every character Python does not print replaced by a space -- control characters
    and Unicode line and paragraph separators, which would end an exported script's comment line
    (and start a command) or a YAML value (and start a key) -- spaces collapsed, at most NAME_MAX
    characters."""
    return " ".join("".join(c if c.isprintable() else " " for c in raw).split())[:NAME_MAX].strip()


def _generic(name: str, parent: str = "") -> bool:
    return (name.lower() in GENERIC_NAMES or bool(HASH.fullmatch(name)) or bool(STEP.fullmatch(name))
            or parent == "snapshots")         # the cache's snapshots/<revision>, whatever the revision's form


def cache_repo(p: Path) -> str:
    """ORG/NAME where p lies in the Hugging Face cache's models--ORG--NAME folder (huggingface_hub
    writes a repo id's '/' as '--', which a repo id itself may not hold), else ''. The path is
    made absolute, not resolved: the cache links snapshots/<revision>/config.json into blobs/
    of the same folder."""
    return _repo_in(Path(os.path.abspath(p)).parts[:-1])


def _repo_in(folders) -> str:
    """ORG/NAME of the innermost models--ORG--NAME folder among ``folders``, else ''."""
    for d in reversed(folders):
        if d.startswith("models--"):
            repo = d[len("models--"):].split("--")
            return "/".join(repo) if len(repo) <= 2 and all(repo) else ""
    return ""


def config_name(p: Path) -> str:
    """The model's name from where its config.json lies, or '' where the path says nothing:
    the cache folder's ORG/NAME (cache_repo); the folder of a file called config.json (a
    downloaded or saved model's folder), unless that folder is a revision or a generic one
    (GENERIC_NAMES); else a file's own name, unless it is 'config' or generic. The same however
    the path is written (./config.json, an absolute path), and no other folder of the machine's
    layout is read."""
    repo = cache_repo(p)
    if repo:
        return _printable(repo)
    if p.stem.lower() == "config":
        folder = Path(os.path.abspath(p)).parent
        return "" if _generic(folder.name, folder.parent.name) else _printable(folder.name)
    return "" if _generic(p.stem) else _printable(p.stem)


def _name(cfg: dict, p: Path) -> str:
    """The model's name, as every output and export header writes it, or '' where neither the
    path nor the file names it (read_hf_config then writes model_type and size): the cache
    folder's ORG/NAME; else config.json's _name_or_path (often the Hugging Face id the model was
    loaded from), where it is a string with something printable in it; else what config_name
    reads from the path. Printable characters only (_printable)."""
    repo = cache_repo(p)
    if repo:
        return _printable(repo)
    given = cfg.get("_name_or_path")
    if isinstance(given, str) and _printable(given):
        return _name_from_id_or_path(given) or config_name(p)
    return config_name(p)


def _name_from_id_or_path(given: str) -> str:
    """A _name_or_path as a name: a Hugging Face id (ORG/NAME or NAME) as it is; a local path
    (the folder a model was saved to or loaded from, '/home/u/runs/out/checkpoint-1000', a cache
    snapshot) read like --hf-config's own path -- the cache folder's ORG/NAME, else its last
    folder that is not a revision or generic -- or '' where it names nothing."""
    text = given.strip()
    looks_local = text.startswith(("/", ".", "~")) or "\\" in text or text.count("/") > 1
    if not looks_local:
        return _printable(text)
    parts = [x for x in re.split(r"[\\/]+", text) if x]
    repo = _repo_in(parts)
    if repo:
        return _printable(repo)
    for i in range(len(parts) - 1, -1, -1):
        parent = parts[i - 1] if i else ""
        if not _generic(parts[i], parent):
            return _printable(parts[i])
    return ""


def _size_name(model_type: str, params: int) -> str:
    """model_type and parameter count, as kb/infer.py names a shape it infers: qwen2-7.62b."""
    b = params / 1e9
    size = f"{b / 1000:.3g}t" if b >= 1000 else f"{b:.3g}b" if b >= 1 else f"{b * 1000:.3g}m"
    return _printable(f"{model_type}-{size}")
