"""Which rule files a run reads, and their compiled strata.

The shipped playbook (one file per concern in this folder) is shown as ``shardwise:rules/tp.yaml``
so it is never confused with a user's own ``rules/`` folder. ``--playbook DIR`` runs an edited
copy (``shardwise rules init DIR``) instead of the shipped one; ``--rules PATH`` adds house
policies on top of either. Files are compiled once per distinct set (and content) of files.
"""
from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from shardwise.kb.errors import InputError, refuse_empty_path

from .compiler import compile_rules
from .loader import Rule, expand, load_rulebook

PLAYBOOK = ["memory.yaml", "tp.yaml", "sp.yaml", "pp.yaml", "dp.yaml", "zero.yaml", "recompute.yaml",
            "cp.yaml", "ep.yaml", "offload.yaml", "warnings.yaml"]
ORIGIN = "shardwise:rules"
STRATA = (1, 2, 3)
_BOOKS: dict = {}


# The file named by the hard constraint the decision adds itself (decision/run.FITS_THE_GPU)
BUILT_IN = "shardwise:decision/run.py"


@dataclass(frozen=True)
class Rulebook:
    rules: list[Rule]
    strata: dict                 # stratum -> CompiledRulebook of its rules
    files: list[tuple[Path, str]]   # (path, shown name) of every file read
    playbook: frozenset = frozenset()   # shown names of the playbook's own files (the rest: house policies)
    changes: tuple = ()          # overrides and disables of earlier rules, for the trace

    def is_policy(self, rule: Rule) -> bool:
        """A house policy: a rule from a file the user added, not the playbook's nor the
        decision's own (decision/run.FITS_THE_GPU, whose file is BUILT_IN)."""
        return rule.file not in self.playbook and rule.file != BUILT_IN


def shipped_dir() -> Path:
    return Path(str(resources.files("shardwise.rules")))


def rule_files(extra: list[str], playbook: str | None = None, flag: str = "--playbook",
               shown: str | None = None) -> list[tuple[Path, str]]:
    """(path, shown name) of the playbook's files, then each --rules path, in order; a refusal of
    the playbook folder names ``flag`` and ``shown`` (_playbook_files)."""
    return _playbook_files(playbook, flag, shown) + _extra_files(extra)


def _playbook_files(playbook: str | None, flag: str = "--playbook", shown: str | None = None) -> list[tuple[Path, str]]:
    """(path, shown name) of the playbook's files; a refusal names ``flag`` and the folder as
    ``shown`` (a policy test file's own `playbook:` entry, as written there)."""
    if playbook is not None:
        refuse_empty_path(playbook, flag, "a folder of rule files (make one with `shardwise rules init DIR`)")
        base, shown = Path(playbook), shown or playbook
        if not base.is_dir():
            raise InputError(f"{flag}: '{shown}' is not a folder (make one with `shardwise rules init DIR`)")
        files = [(f, str(f)) for f in sorted(base.glob("*.yaml"))]
        if not files:
            raise InputError(f"{flag}: '{shown}' holds no .yaml rule files")
    else:
        files = [(shipped_dir() / f, f"{ORIGIN}/{f}") for f in PLAYBOOK]
    return files


def _extra_files(extra: list[str]) -> list[tuple[Path, str]]:
    return [f for e in extra for f in expand(e)]


def _stamp(p: Path):
    try:
        st = p.stat()
        return (st.st_mtime_ns, st.st_size)
    except OSError:
        return None


def load(extra: list[str] | None = None, playbook: str | None = None) -> Rulebook:
    files = rule_files(list(extra or []), playbook)
    key = tuple((str(p), s, _stamp(p)) for p, s in files)
    if key not in _BOOKS:
        changes: list = []
        rules = load_rulebook([p for p, _ in files], [s for _, s in files], changes)
        strata = {n: compile_rules([r for r in rules if r.stratum == n]) for n in STRATA}
        _BOOKS[key] = Rulebook(rules, strata, files, frozenset(s for _, s in _playbook_files(playbook)),
                               tuple(changes))
    return _BOOKS[key]


def file_hashes(book: Rulebook) -> list[dict]:
    return [{"file": s, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for p, s in book.files]


README = """# An editable copy of the shardwise playbook

Written by `shardwise rules init`. Edit any file here, then run it instead of the shipped one:

    shardwise recommend ... --playbook {dir}
    shardwise rules lint {dir}
    shardwise rules test cases.yaml        # cases.yaml may say `playbook: {dir}`

How rules work (the full format: the project README, "Rules: the playbook as data"):
- A rule whose `when` reads only job facts (model.*, cluster.*, train.*) may add hard
  constraints: `require` / `forbid` an expression over a layout's facts, or `pin` a setting.
- A rule may add soft preferences: `prefer` / `avoid` an expression, with a `worth` -- the
  percent of predicted throughput worth giving up to honour it. Its `when` may read the
  search's feasibility facts (fit.*, best.*); its expression may read neighbour facts (same.*).
- The headline is the valid layout that maximises tokens/s x (1 - the worths it breaks).
- A rule whose `when` reads the answer (layout.*, memory.*, metrics.*) may only warn or note.
- `shardwise rules facts` lists every fact with its type.
"""


def init(target: str) -> list[str]:
    """Copy the shipped playbook into ``target`` (which must not exist or be empty)."""
    refuse_empty_path(target, "rules init", "a new or empty folder to copy the playbook into")
    dest = Path(target)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InputError(f"rules init: '{target}' exists and is not an empty folder; choose a new folder")
    try:
        dest.mkdir(parents=True, exist_ok=True)
        written = []
        for f in PLAYBOOK:
            shutil.copyfile(shipped_dir() / f, dest / f)
            written.append(str(dest / f))
        (dest / "README.md").write_text(README.format(dir=target))
    except OSError as e:
        raise InputError(f"rules init: cannot write to '{target}' ({e.strerror})")
    return written + [str(dest / "README.md")]
