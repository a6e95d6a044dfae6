"""The one module that imports durable_rules (durable-rules 2.0.28).

Inside the safe subset measured in docs/reference/durable-rules.md:
* a Host whose polling threads are switched off, so every run is synchronous (P1);
* actions are one-parameter closures looked up by name (P2), that catch every exception
  themselves (durable swallows them, P3) and stop the run by turning later actions into no-ops;
* a fresh state id (sid) and one batch assert per run, nothing ever retracted or deleted
  (P7, P8, P17); a ruleset is retired and re-registered under a new name after 500 runs,
  below the 1,024-sid limit (P18);
* floats are rounded to 4 decimals (durable rejects or crashes on exponent notation: P15),
  non-finite numbers refused;
* one global lock around every run: the C engine has no locking (P20);
* on Python 3.12 ``engine._unix_now`` calls the deprecated datetime.utcfromtimestamp on every
  action; it is replaced by time.time (P19).
"""
from __future__ import annotations

import copy
import math
import threading
import time
from typing import Callable

from durable import engine as _engine

_engine._unix_now = time.time

_LOCK = threading.RLock()
RUNS_PER_RULESET = 500


class _SyncHost(_engine.Host):
    def __init__(self):
        self._actions: dict[str, Callable] = {}
        super().__init__()

    def _run(self):          # the base class starts two polling daemon threads here
        pass

    def get_action(self, name):
        return self._actions[name]


_HOST: _SyncHost | None = None
_COUNTER = [0]


def _host() -> _SyncHost:
    global _HOST
    if _HOST is None:
        _HOST = _SyncHost()
    return _HOST


def clean(value):
    """A value durable can read: floats rounded to 4 decimals, no exponent notation."""
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("non-finite number in a fact")
        r = round(value, 4)
        if abs(r) < 1e-4:
            return 0.0
        if abs(r) >= 1e15:
            return int(r)
        return r
    return value


class Ruleset:
    """A compiled ruleset registered with durable, run once per call of ``run``."""

    def __init__(self, rules: dict, digest: str):
        self.rules = rules
        self.digest = digest
        self.name = None
        self.runs = 0
        self._dispatch: Callable | None = None
        self._failure: BaseException | None = None
        self._stopped = False

    def _register(self):
        _COUNTER[0] += 1
        self.name = f"shardwise-{self.digest}-g{_COUNTER[0]}"
        host = _host()
        spec = {}
        for rname, rule in self.rules.items():
            action = f"{self.name}:{rname}"
            host._actions[action] = self._closure(rname)
            spec[rname] = dict(copy.deepcopy(rule), run=action)   # durable deletes 'run' (P6)
        host.register_rulesets({self.name: spec})
        self.runs = 0

    def _closure(self, rname: str):
        def action(c):                       # exactly one parameter: synchronous (P2)
            if self._stopped:
                return
            try:
                fact = dict(c._m["s"])
                new = self._dispatch(rname, fact)
                for f in new:
                    c.assert_fact(clean(dict(f, sid=fact["sid"])))
            except BaseException as e:       # durable would swallow it (P3)
                self._failure = e
                self._stopped = True
        return action

    def run(self, facts: list[dict], on_fire: Callable[[str, dict], list[dict]]) -> None:
        """Assert ``facts`` in one batch under a fresh sid; ``on_fire(rule name, fact)`` returns
        facts to assert next. Re-raises what an action raised."""
        with _LOCK:
            if self.name is None or self.runs >= RUNS_PER_RULESET:
                self._register()
            self.runs += 1
            _COUNTER[0] += 1
            sid = f"run{_COUNTER[0]}"
            self._dispatch, self._failure, self._stopped = on_fire, None, False
            try:
                _host().assert_facts(self.name, [clean(dict(f, sid=sid)) for f in facts])
            finally:
                self._dispatch = None
            if self._failure is not None:
                raise self._failure
