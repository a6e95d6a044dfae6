"""Feasibility facts: aggregates of the one scored table under the hard constraints.

``allowed`` marks the layouts that meet every hard constraint (validity, the memory margin,
house policies). Each fit.* / best.* fact is computed on its first read, with its witness: the
fastest allowed layout that shows it (kb/fact_schema.DESCRIPTIONS says what each means). The
neighbour facts (same.*) are columns: for each layout, what the same layout with one setting
changed would be allowed to do -- a preference is judged against a layout's own neighbours,
not against a global fact that is true almost everywhere (docs/reference/decision-prototype.md).
"""
from __future__ import annotations

import numpy as np

from shardwise.kb.choices import RECOMPUTE_BY_COST, RECOMPUTE_COST_RANK

from .table import Table

# the settings that make "the same layout": all but the one a neighbour fact varies
_KEY = ("tp", "pp", "vp", "cp", "ep", "zero", "shard", "sp", "mbs", "rc", "offload")
# above every degree: "no such layout" for a group minimum
_NONE = 1 << 40


class Feasibility:
    def __init__(self, table: Table, allowed: np.ndarray):
        self.table, self.allowed = table, allowed
        self._facts: dict = {}
        self._witness: dict = {}
        self._columns: dict = {}

    # --- fit.* / best.* -------------------------------------------------------------------
    def _fastest(self, mask: np.ndarray):
        idx = np.flatnonzero(mask)
        if not len(idx):
            return None
        return int(idx[np.argmax(self.table.tokens_per_s[idx])])

    def fact(self, path: str):
        if path not in self._facts:
            self._facts[path], self._witness[path] = self._compute(path)
        return self._facts[path]

    def witness(self, path: str):
        self.fact(path)
        return self._witness[path]

    def _compute(self, path: str):
        t, ok = self.table, self.allowed
        a = t.space.arrays
        gpn = t.job.cluster.gpus_per_node
        subsets = {
            "fit.any": ok, "fit.without_pp": ok & (a["pp"] == 1), "fit.without_cp": ok & (a["cp"] == 1),
            "fit.without_recompute": ok & (a["rc"] == 0),
            "fit.in_one_node": ok & (a["tp"] * a["pp"] * a["cp"] <= gpn),
        }
        if path in subsets:
            w = self._fastest(subsets[path])
            return w is not None, w
        if path == "fit.count":
            return int(np.count_nonzero(ok)), self._fastest(ok)
        if path.startswith("fit.min_"):
            col = a[path.removeprefix("fit.min_")]
            if not ok.any():
                return (-1 if path == "fit.min_zero" else 0), None
            low = int(col[ok].min())
            return low, self._fastest(ok & (col == low))
        best = {"best.tokens_per_s": ok, "best.pp1.tokens_per_s": ok & (a["pp"] == 1),
                "best.cp1.tokens_per_s": ok & (a["cp"] == 1)}[path]
        w = self._fastest(best)
        return (float(t.tokens_per_s[w]) if w is not None else 0.0), w

    # --- same.* (one value per layout) ----------------------------------------------------
    def column(self, path: str) -> np.ndarray:
        if path not in self._columns:
            self._columns[path] = {"same.min_zero": self._min_zero, "same.min_recompute": self._min_recompute,
                                   "same.pp1_fits": self._pp1_fits, "same.pp1_dp": self._pp1_dp,
                                   "same.pp1_batch_divides": self._pp1_batch_divides,
                                   "same.min_offload": self._min_offload}[path]()
        return self._columns[path]

    def _groups(self, fields) -> np.ndarray:
        """A group number per layout: layouts equal in ``fields`` share one. Each field's values
        are small non-negative integers, so a dense code per field (counting, not sorting) and a
        mixed-radix key give the groups; the key is compacted only when its range is large.
        Kept on the space, keyed by the fields: nothing else enters."""
        space = self.table.space
        fields = tuple(fields)
        if fields not in space.groups_by:
            space.groups_by[fields] = self._group_numbers(space.arrays, fields)
        return space.groups_by[fields]

    def _group_numbers(self, a: dict, fields: tuple) -> np.ndarray:
        key = np.zeros(len(self.table), dtype=np.int64)
        size = 1
        for f in fields:
            col = a[f]
            if not len(col):
                continue
            present = np.bincount(col) > 0
            code = np.cumsum(present) - 1             # dense code of each value present
            width = int(present.sum())
            key = key * width + code[col]
            size *= width
        if size <= 1 << 24:
            return key
        return np.unique(key, return_inverse=True)[1].ravel()

    def _group_min(self, fields, values: np.ndarray, missing) -> np.ndarray:
        g = self._groups(fields)
        low = np.full(int(g.max()) + 1 if len(g) else 0, missing, dtype=np.int64)
        np.minimum.at(low, g[self.allowed], values[self.allowed])
        return low[g]

    def _min_zero(self) -> np.ndarray:
        """The lowest ZeRO stage at which the same layout (HSDP aside) is allowed (its own if none)."""
        a = self.table.space.arrays
        low = self._group_min([f for f in _KEY if f not in ("zero", "shard")], a["zero"], 99)
        return np.where(low == 99, a["zero"], low)

    def _min_recompute(self) -> np.ndarray:
        """The least recomputation (RECOMPUTE_BY_COST: full is more than modules) at which the
        same layout is allowed (its own if none)."""
        a = self.table.space.arrays
        cost = np.array(RECOMPUTE_COST_RANK)[a["rc"]]
        low = self._group_min([f for f in _KEY if f != "rc"], cost, 99)
        return np.array(RECOMPUTE_BY_COST)[np.where(low == 99, cost, low)]

    def _min_offload(self) -> np.ndarray:
        """The fewest offloaded layers with which the same layout, at any micro-batch, is allowed
        (its own if none). Any micro-batch: a larger one always "needs" more offloading, and
        judged at its own micro-batch every layout would need what it offloads."""
        a = self.table.space.arrays
        low = self._group_min([f for f in _KEY if f not in ("offload", "mbs")], a["offload"], _NONE)
        return np.where(low == _NONE, a["offload"], low)

    def _pp1_fits(self) -> np.ndarray:
        """Whether a PP = 1 layout with the same TP and CP is allowed whose expert all-to-all
        reaches no farther than this layout's: EP inside the job's block of an NVLink domain
        (ClusterSpec.domain_block), or no wider than this layout's own EP (the search's EP group
        spans EP GPUs, ETP being 1). A pipeline that
        keeps EP inside the node where PP = 1 fits only with EP across nodes is the order
        Megatron-Core's MoE guide gives: "Ensure the EPxTP communication within the NVLink
        domain ... If the model is too large and requires scaling across multiple nodes,
        consider PP before TP and EP" (Megatron-LM megatron/core/transformer/moe/README.md,
        "Tuning Guide of Parallel Mappings", items 2-3). Dense models have EP 1 throughout."""
        a = self.table.space.arrays
        # the narrowest EP of an allowed PP = 1 layout with this layout's TP and CP (none: _NONE)
        narrowest = self._group_min(("tp", "cp"), np.where(a["pp"] == 1, a["ep"], _NONE), _NONE)
        return narrowest <= np.maximum(a["ep"], self.table.job.cluster.domain_block)

    def _pp1_dp(self) -> np.ndarray:
        """The DP degree of a PP = 1 layout with the same TP and CP: the pipeline's GPUs go to DP."""
        a = self.table.space.arrays
        return a["dp"] * a["pp"]

    def _pp1_batch_divides(self) -> np.ndarray:
        """Whether the global batch splits over that DP at micro-batch 1 (batch-divides)."""
        a = self.table.space.arrays
        return (a["mbs"] * a["grad_accum"] * a["dp"]) % self.column("same.pp1_dp") == 0
