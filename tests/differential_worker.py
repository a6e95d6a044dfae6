"""Run random rule files (the new actions: require/forbid/pin, prefer/avoid with a worth,
warn/note; all three strata) beside the playbook through the decision with durable_rules and
with the plain-Python agenda; print a JSON summary. Run as a subprocess by
tests/test_differential.py so that a crash of the C engine is a test failure, not a dead test
session."""
import json
import random
import sys
import tempfile
from pathlib import Path

from shardwise.decision.result import trace
from shardwise.decision.run import decide
from shardwise.kb.build import build_job
from shardwise.kb.errors import InputError

# Facts a condition may read, by stratum (kb/fact_schema.py). Floats included: the compiler
# keeps them away from durable (rules/compiler.py), which this checks too.
JOB_NUM = [("model.layers", [16, 32, 80]), ("model.heads", [32, 64]), ("cluster.gpus", [8, 16, 32]),
           ("cluster.nodes", [1, 2, 4]), ("cluster.gpus_per_node", [8]), ("cluster.nvlink_domain", [4, 8]),
           ("train.seq_len", [2048, 4096, 8192]), ("train.global_batch", [256, 512, 1024]),
           ("model.params_b", [7.5, 8.03, 46.7, 70.0]), ("cluster.gpu_memory_gib", [79.6, 80.0])]
JOB_BOOL = ["model.is_moe", "train.sequence_parallel", "train.mbs_given", "train.recompute_given", "model.inferred"]
JOB_STR = [("cluster.intra_kind", ["nvlink", "pcie"]), ("train.framework", ["megatron", "hf", "fsdp"]),
           ("train.training", ["pretrain", "lora"])]
FEAS_NUM = [("fit.count", [0, 100, 5000]), ("fit.min_tp", [1, 2, 4]), ("fit.min_pp", [1, 2]),
            ("fit.min_zero", [0, 1, 3]), ("best.tokens_per_s", [1e5, 3.5e5, 1234.5678])]
FEAS_BOOL = ["fit.any", "fit.without_pp", "fit.in_one_node", "fit.without_cp", "fit.without_recompute"]
ANSWER_NUM = [("layout.tp", [1, 2, 4, 8]), ("layout.pp", [1, 2, 4]), ("layout.zero", [0, 1, 2, 3]),
              ("layout.mbs", [1, 2, 4]), ("layout.cp", [1, 2]), ("layout.ga", [8, 64, 128]),
              ("memory.used_pct", [50, 80.5, 95]), ("memory.peak_gib", [40, 66.6]),
              ("metrics.mfu_pct", [30, 45.25]), ("metrics.bubble_pct", [0, 5]), ("same.min_zero", [0, 1, 3])]
ANSWER_BOOL = ["memory.fits", "layout.sp", "same.pp1_fits"]
ANSWER_STR = [("layout.recompute", ["none", "selective", "full"])]

# What the actions judge per layout
LAYOUT_EXPR = ["layout.tp <= 4", "layout.pp <= 2", "layout.zero != 3", "layout.cp == 1", "memory.used_pct <= 90",
               "layout.tp * layout.pp <= cluster.gpus_per_node", "layout.recompute != 'full'", "layout.sp",
               "layout.mbs >= 2", "layout.vp == 1 or model.layers / (layout.pp * layout.vp) >= 4",
               "metrics.mfu_pct > 40"]
PREF_EXPR = LAYOUT_EXPR + ["layout.zero > max(1, same.min_zero)", "layout.pp > 1 and same.pp1_fits",
                           "layout.recompute == same.min_recompute"]
PINS = [("mbs", ["1", "2"]), ("recompute", ["full", "selective", "none"]), ("zero", ["1", "2"]),
        ("tp", ["1", "2", "cluster.nvlink_domain // 4"]), ("sp", ["true", "false"])]
TEMPLATES = ["tp {layout.tp} pp {layout.pp} at {memory.used_pct:.1f}%", "fits: {memory.fits}",
             "{model.name} on {cluster.gpus} GPUs", "best {best.tokens_per_s:.0f} tok/s"]


def atom(r: random.Random, num, boolean, string) -> str:
    kind = r.random()
    if kind < 0.45:
        p, vals = r.choice(num)
        return f"{p} {r.choice(['<', '<=', '>', '>=', '==', '!='])} {r.choice(vals)}"
    if kind < 0.6:
        return f"{'not ' if r.random() < 0.5 else ''}{r.choice(boolean)}"
    if kind < 0.75:
        p, vals = r.choice(string)
        if r.random() < 0.3:
            return f"{p} in [{', '.join(repr(v) for v in r.sample(vals, min(2, len(vals))))}]"
        return f"{p} {r.choice(['==', '!='])} '{r.choice(vals)}'"
    if kind < 0.87:                      # compound atoms evaluated on the Python side
        (a, _), (b, _) = r.choice(num), r.choice(num)
        return f"{a} * 2 > {b}"
    return f"({atom(r, num, boolean, string)} or {atom(r, num, boolean, string)})"


def condition(r: random.Random, stratum: int) -> str:
    num, boolean, string = JOB_NUM, JOB_BOOL, JOB_STR
    if stratum >= 2:
        num, boolean = num + FEAS_NUM, boolean + FEAS_BOOL
    if stratum == 3:
        num, boolean, string = num + ANSWER_NUM, boolean + ANSWER_BOOL, string + ANSWER_STR
    if r.random() < 0.1:
        return "true"
    return " and ".join(atom(r, num, boolean, string) for _ in range(r.randint(1, 2 if stratum == 3 else 3)))


def actions(r: random.Random, stratum: int) -> list[str]:
    out = []
    for _ in range(r.randint(1, 2)):
        if stratum == 1:
            k = r.random()
            if k < 0.4:
                out.append(f"      - {r.choice(['require', 'forbid'])}: \"{r.choice(LAYOUT_EXPR)}\"")
            elif k < 0.7:
                s, vals = r.choice(PINS)
                out.append(f"      - pin: {{{s}: \"{r.choice(vals)}\"}}")
            else:
                out.append(f"      - note: \"{r.choice(TEMPLATES[2:3])}\"")
        elif stratum == 2:
            out.append(f"      - {r.choice(['prefer', 'avoid'])}: \"{r.choice(PREF_EXPR)}\"\n"
                       f"        worth: {r.choice([1, 2.5, 5, 10, 30])}")
        else:
            out.append(f"      - {r.choice(['warn', 'note'])}: \"{r.choice(TEMPLATES)}\"")
    return out


def rulebook(r: random.Random) -> str:
    lines = ["rules:"]
    for i in range(r.randint(2, 9)):
        stratum = r.choice([1, 1, 2, 2, 3])
        lines += [f"  - id: r{i}", f"    priority: {r.choice([100, 200, 200, 500, 900, 1000])}",
                  f"    when: \"{condition(r, stratum)}\"", "    then:", *actions(r, stratum),
                  f"    because: \"rule {i} for {{model.name}}\""]
    return "\n".join(lines) + "\n"


JOBS = [dict(model="llama-3-8b", gpus=8), dict(model="llama-3-70b", gpus=32, seq_len=8192),
        dict(model="mixtral-8x7b", gpus=16), dict(model="qwen2.5-7b", gpus=16, gpu="a100-80gb", framework="hf"),
        dict(model="llama-3-8b", gpus=8, gpu="h100-pcie"), dict(model="llama-3-8b", gpus=16, mbs=2, training="lora")]


def summary(d) -> dict:
    return {"trace": [(t["rule"], t["stratum"], t["facts"], t["added"]) for t in trace(d)],
            "layout": d.layout.describe() if d.layout else None, "warnings": d.warnings, "notes": d.notes}


def main(seed: int, count: int) -> None:
    r = random.Random(seed)
    out = {"runs": 0, "mismatches": [], "errors": 0, "fired": {1: 0, 2: 0, 3: 0}, "answered": 0}
    with tempfile.TemporaryDirectory() as d:
        for k in range(count):
            f = Path(d) / f"book{k}.yaml"
            f.write_text(rulebook(r))
            job = build_job(**r.choice(JOBS))
            results = []
            for engine in ("durable", "reference"):
                try:
                    results.append(summary(decide(job, [str(f)], engine=engine)))
                except InputError as e:             # conflicting pins and the like must agree too
                    results.append({"error": str(e)})
            out["runs"] += 1
            out["errors"] += "error" in results[0]
            if "trace" in results[0]:
                out["answered"] += results[0]["layout"] is not None
                for rule, stratum, _, _ in results[0]["trace"]:
                    if rule.startswith("r"):
                        out["fired"][stratum] += 1
            if results[0] != results[1]:
                out["mismatches"].append({"book": f.read_text(), "job": job.model.name,
                                          "durable": results[0], "reference": results[1]})
    print(json.dumps(out))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
