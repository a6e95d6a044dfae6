"""Run random rulebooks through durable_rules and through the plain-Python agenda; print a
JSON summary. Run as a subprocess by tests/test_differential.py so that a crash of the C
engine is a test failure, not a dead test session."""
import json
import random
import sys
import tempfile
from pathlib import Path

from shardwise.kb.build import build_job
from shardwise.kb.errors import InputError
from shardwise.rules import recommend as rec

NUM = ["layout.tp", "layout.pp", "layout.dp", "layout.zero", "layout.mbs", "layout.cp", "layout.ga",
       "memory.used_pct", "memory.peak_gib", "metrics.mfu_pct", "metrics.bubble_pct", "model.layers",
       "cluster.nodes", "next.tp", "next.pp", "train.seq_len"]
BOOL = ["memory.fits", "layout.sp", "whatif.full_fits", "whatif.selective_fits", "model.is_moe"]
STR = [("layout.recompute", ["none", "selective", "full"]), ("cluster.intra_kind", ["nvlink", "pcie"]),
       ("train.framework", ["megatron", "hf"])]
SETS = [("tp", ["next.tp", "layout.tp * 2", "max(1, layout.tp // 2)", "2", "8"]),
        ("pp", ["next.pp", "layout.pp * 2", "1", "2"]), ("zero", ["layout.zero + 1", "1", "3", "0"]),
        ("mbs", ["layout.mbs * 2", "next.mbs_down", "1"]), ("recompute", ["full", "selective", "none"]),
        ("sp", ["true", "false"])]
JOBS = [dict(model="llama-3-8b", gpus=8), dict(model="llama-3-70b", gpus=32, seq_len=8192),
        dict(model="llama-3-70b", gpus=64, gpu="h100-sxm"), dict(model="mixtral-8x7b", gpus=16),
        dict(model="qwen2.5-7b", gpus=16, gpu="a100-80gb", framework="hf"),
        dict(model="llama-3-8b", gpus=8, gpu="h100-pcie")]


def atom(r: random.Random) -> str:
    kind = r.random()
    if kind < 0.5:
        p = r.choice(NUM)
        return f"{p} {r.choice(['<', '<=', '>', '>=', '==', '!='])} {r.choice([1, 2, 4, 8, 16, 50, 80, 95])}"
    if kind < 0.65:
        return f"{'not ' if r.random() < 0.5 else ''}{r.choice(BOOL)}"
    if kind < 0.8:
        p, vals = r.choice(STR)
        return f"{p} {r.choice(['==', '!='])} '{r.choice(vals)}'"
    if kind < 0.9:                      # compound atoms evaluated on the Python side
        return f"{r.choice(NUM)} * 2 > {r.choice(NUM)}"
    return f"({atom(r)} or {atom(r)})"


def rulebook(r: random.Random) -> str:
    lines = ["rules:"]
    for i in range(r.randint(2, 9)):
        cond = " and ".join(atom(r) for _ in range(r.randint(1, 3)))
        setting, values = r.choice(SETS)
        action = r.random()
        if action < 0.7:
            val = r.choice(values)
            then = f"      - set: {{{setting}: \"{val}\"}}"
        elif action < 0.8:
            then = f"      - require: \"layout.tp <= {r.choice([1, 2, 4, 8])}\""
        else:
            then = "      - warn: \"tp {layout.tp} pp {layout.pp}\""
        lines += [f"  - id: r{i}", f"    priority: {r.choice([100, 200, 200, 500, 900])}", f"    when: \"{cond}\"",
                  "    then:", then, f"    because: \"rule {i} at tp={{layout.tp}}\""]
    return "\n".join(lines) + "\n"


def summary(res):
    return {"trace": [(t["rule"], t["state"], t["outcome"], t["set"]) for t in res["trace"]],
            "layout": res["layout"], "warnings": res["warnings"]}


def main(seed: int, count: int) -> None:
    r = random.Random(seed)
    rec.PLAYBOOK[:] = []                     # random rules only, no playbook
    out = {"runs": 0, "mismatches": [], "errors": 0}
    with tempfile.TemporaryDirectory() as d:
        for k in range(count):
            f = Path(d) / f"book{k}.yaml"
            f.write_text(rulebook(r))
            job = build_job(**r.choice(JOBS))
            results = []
            for engine in ("durable", "reference"):
                try:
                    results.append(summary(rec.recommend(job, [str(f)], engine=engine)))
                except InputError as e:             # loops and refusals must agree too
                    results.append({"error": str(e)})
            out["runs"] += 1
            out["errors"] += "error" in results[0]
            if results[0] != results[1]:
                out["mismatches"].append({"book": f.read_text(), "durable": results[0], "reference": results[1]})
    print(json.dumps(out))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
