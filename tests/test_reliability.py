"""Reliability by the thousand: generated jobs over the whole input range never raise anything
but a one-line refusal, and every answer keeps its own arithmetic (the headline always fits);
more memory never makes the fastest allowed layout slower, more GPUs never make a feasible job
infeasible; the same input gives the same bytes.

Example counts: SHARDWISE_FUZZ_SCALE multiplies them (default 1: 1,500 jobs through the whole
decision -- rules, the search of every valid layout, the choice -- and a few hundred through the
command line). Each decision searches the whole space, so the counts are smaller than when a
job was a walk of a few layouts.
"""
import json
import os
import subprocess
import sys

from hypothesis import HealthCheck, assume, given, settings, strategies as st

from jobs import job_settings
from shardwise.kb.build import build_job
from shardwise.kb.errors import InputError
from shardwise.decision.result import as_dict
from shardwise.decision.run import decide

SCALE = float(os.environ.get("SHARDWISE_FUZZ_SCALE", "1"))


def examples(n: int) -> settings:
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


def one_line(e: Exception) -> str:
    msg = str(e)
    assert msg and "\n" not in msg and "Traceback" not in msg, msg
    return msg


# Every job now runs the whole decision (a search of every valid layout), not a walk of a few
# layouts: GPU counts are capped so that one example stays well under a second.
MAX_GPUS = 512


def outcome(s: dict):
    """(job, its decision) or None for a refusal, which must be one line."""
    try:
        job = build_job(**dict(s, gpus=min(s["gpus"], MAX_GPUS)))
        d = decide(job)
    except InputError as e:
        one_line(e)
        return None
    return job, d


def check_invariants(job, d):
    if d.layout is None:                       # no layout: said plainly, with what is in the way
        assert d.nothing_allowed and not d.allowed.any()
        return
    lay, mem = d.layout, d.memory
    m, c = job.model, job.cluster
    assert lay.tp * lay.pp * lay.cp * lay.dp == c.gpus
    assert lay.tp <= c.nvlink_domain and m.heads % lay.tp == 0
    if m.is_moe:
        assert m.experts % lay.ep == 0 and (lay.dp * lay.cp * lay.tp) % (lay.ep * lay.etp) == 0
    else:
        assert lay.ep == 1
    assert lay.mbs * lay.grad_accum * lay.dp == d.global_batch
    assert mem.fits and mem.peak_gib <= 0.95 * mem.capacity_gib + 1e-9     # the headline always fits
    assert mem.peak_gib > 0 and d.step.step_time_s > 0
    parts = mem.breakdown_gib
    assert min(parts.values()) >= 0 and abs(sum(parts.values()) - mem.peak_gib) <= 1e-6 * mem.peak_gib, parts
    assert 1 <= lay.vp and (lay.pp > 1 or lay.vp == 1)
    assert abs(float(d.table.peak_gib[d.index]) - mem.peak_gib) <= 1e-6 * mem.peak_gib   # table == scalar


@examples(1_500)
@given(job_settings())
def test_generated_jobs_keep_their_arithmetic_or_are_refused_in_one_line(s):
    out = outcome(s)
    if out:
        check_invariants(*out)


@examples(200)
@given(st.data())
def test_generated_hf_configs_too(tmp_path_factory, data):
    s = data.draw(job_settings(tmp_path_factory.mktemp("hf")))
    out = outcome(s)
    if out:
        check_invariants(*out)


@examples(300)
@given(job_settings(), st.sampled_from([1.25, 1.5, 2.0, 3.0]))
def test_more_memory_per_gpu_never_makes_a_fitting_job_slower_or_unfit(s, factor):
    low = outcome(s)
    if not low or low[1].layout is None:
        return
    job = low[0]
    more = min(320, job.cluster.gpu.memory_gib * factor)
    high = outcome(dict(s, gpu_memory=round(more)))
    assert high and high[1].layout is not None, "a job that fits was refused with more memory"
    best = low[1].feasibility.fact("best.tokens_per_s")
    assert high[1].feasibility.fact("best.tokens_per_s") >= 0.999 * best, (s, more)


@examples(300)
@given(job_settings())
def test_more_gpus_never_make_a_feasible_job_infeasible(s):
    # the same batch, one that divides over both GPU counts: the default batch no longer grows
    # with the GPU count (kb/batch.py), and a batch too small for twice the GPUs is a real limit
    gpus = min(s["gpus"], MAX_GPUS // 2)
    s = dict(s, gpus=gpus, global_batch=2 * gpus * (s.get("mbs") or 1))
    small = outcome(s)
    if not small or small[1].layout is None:
        return
    node = small[0].cluster.gpu.gpus_per_node if "gpus_per_node" not in s else s["gpus_per_node"]
    assume(s["gpus"] * 2 <= node or s["gpus"] * 2 % node == 0)      # twice the GPUs, in whole nodes
    big = outcome(dict(s, gpus=s["gpus"] * 2))
    assert big and big[1].layout is not None, s


# --- the command line: whatever the flags, exit 0 or one line on stderr with status 2 --------

FLAGS = {"model": "--model", "params": "--params", "gpu": "--gpu", "gpu_memory": "--gpu-memory", "gpus": "--gpus",
         "gpus_per_node": "--gpus-per-node", "interconnect": "--interconnect", "seq_len": "--seq-len",
         "training": "--training", "precision": "--precision", "framework": "--framework",
         "recompute": "--recompute", "attention": "--attention", "mbs": "--mbs", "global_batch": "--global-batch"}
JUNK = st.one_of(st.text(max_size=12), st.sampled_from(["-1", "0", "1e400", "nan", "inf", "70B", "8x", "", " ",
                                                          "llama-3-70c", "h100", "99999999999999999999", "\u00e9\u00e8"]))


def argv(s: dict) -> list:
    out = []
    for k, v in s.items():
        if v is not None:
            out += [FLAGS[k], str(v)]
    return out


def _cli(run_cli, args):
    code, out, err = run_cli(*args)
    assert "Traceback" not in err
    if code != 0:
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (args, code, err)
    return code, out


@examples(400)
@given(job_settings(), st.data())
def test_memory_command_with_a_corrupted_flag(run_cli, s, data):
    args = argv(s)
    if data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(args) // 2 - 1)) * 2 + 1
        args[i] = data.draw(JUNK)
    layout = data.draw(st.sampled_from(["tp=1", "tp=8,pp=4", "tp=2,dp=4,zero=3", "tp=8,pp=2,vp=2,cp=2,mbs=2",
                                        "tp=0", "pp=-1", "zero=4", "tp=8,recompute=sometimes", "", "tp"]))
    _cli(run_cli, ["memory", *args, "--layout", layout, "--format", "json"])


@examples(150)
@given(job_settings())
def test_recommend_command_answers_or_refuses_in_one_line(run_cli, s):
    s = dict(s, gpus=min(s["gpus"], 1024))           # the search's cost grows with the GPU count
    code, out = _cli(run_cli, ["recommend", *argv(s), "--format", "json"])
    if code == 0:
        r = json.loads(out)
        lay, mem = r["layout"], r["memory"]
        if lay is None:
            assert r["search"]["nothing_allowed"]
            return
        assert lay["tp"] * lay["pp"] * lay["cp"] * lay["dp"] == r["job"]["gpus"]
        assert lay["mbs"] * lay["grad_accum"] * lay["dp"] == lay["global_batch"]
        assert mem["fits"] and mem["peak_gib"] <= mem["capacity_gib"]
        for a in r["alternatives"]:
            assert a["layout"]["tp"] * a["layout"]["pp"] * a["layout"]["cp"] * a["layout"]["dp"] == r["job"]["gpus"]


# --- determinism ------------------------------------------------------------------------------

JOBS = [dict(model="llama-3-70b", gpus=32, seq_len=8192), dict(model="mixtral-8x7b", gpus=16),
        dict(params="13B", gpus=64, seq_len=32768, precision="fp8")]


def _json(kw: dict) -> str:
    return json.dumps(as_dict(decide(build_job(**kw)), exports=True), sort_keys=False)


def test_two_jobs_in_one_process_do_not_influence_each_other():
    first = [_json(j) for j in JOBS]
    again = [_json(j) for j in reversed(JOBS)][::-1]
    assert first == again


def test_same_job_same_bytes_across_processes_in_any_order():
    code = ("import json, sys; from shardwise.kb.build import build_job; from shardwise.decision.run import decide; "
            "from shardwise.decision.result import as_dict; jobs = json.loads(sys.argv[1]); "
            "print('\\x00'.join(json.dumps(as_dict(decide(build_job(**j)), exports=True)) for j in jobs))")
    runs = []
    for order in (JOBS, JOBS[::-1]):
        out = subprocess.run([sys.executable, "-c", code, json.dumps(order)], capture_output=True, text=True,
                             check=True, env=dict(os.environ, PYTHONHASHSEED="random")).stdout.rstrip("\n")
        runs.append(dict(zip([json.dumps(j) for j in order], out.split("\x00"))))
    assert runs[0] == runs[1]
    assert runs[0][json.dumps(JOBS[0])] == _json(JOBS[0])
