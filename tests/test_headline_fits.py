"""The headline always fits, whatever house policies say: generated policies (hard and soft,
on settings, memory and speed) either leave a layout within the memory margin, or the answer
says plainly that none is allowed and names what is in the way. Never a layout that does not
fit with time and cost beside it."""
from hypothesis import HealthCheck, example, given, settings, strategies as st

from shardwise.decision.result import as_dict
from shardwise.decision.run import decide
from shardwise.kb.build import build_job
from shardwise.kb.errors import InputError

from conftest import fuzz

JOBS = [dict(model="llama-3-70b", gpus=32, seq_len=8192), dict(model="llama-3-8b", gpus=8),
        dict(model="llama-3-70b", gpus=8, gpu="a100-80gb", training="lora", framework="hf"),
        dict(model="mixtral-8x7b", gpus=16)]
PREDICATES = ["layout.tp <= {n}", "layout.tp >= {n}", "layout.pp <= {n}", "layout.pp >= {n}", "layout.zero >= {z}",
              "layout.zero <= {z}", "layout.cp == 1", "layout.mbs <= {n}", "layout.recompute == 'none'",
              "layout.recompute != 'full'", "memory.used_pct <= {pct}", "memory.used_pct >= {pct}",
              "metrics.mfu_pct >= {pct}", "layout.dp >= {n}", "not layout.sp"]


@st.composite
def policy(draw) -> str:
    lines = ["rules:"]
    for k in range(draw(st.integers(1, 4))):
        pred = draw(st.sampled_from(PREDICATES)).format(n=draw(st.sampled_from([1, 2, 4, 8, 16])),
                                                        z=draw(st.integers(0, 3)),
                                                        pct=draw(st.sampled_from([20, 50, 70, 85, 99])))
        kind = draw(st.sampled_from(["require", "forbid", "prefer", "avoid"]))
        worth = f"\n        worth: {draw(st.sampled_from([1, 5, 20, 60]))}" if kind in ("prefer", "avoid") else ""
        lines += [f"  - id: house.r{k}", f"    priority: {draw(st.integers(0, 1000))}", "    then:",
                  f"      - {kind}: \"{pred}\"{worth}", "    because: a generated house policy"]
    return "\n".join(lines) + "\n"


# preferences every allowed layout breaks past 100% together: refused, naming the rule (CI drew it)
PAST_100 = "rules:\n" + "".join(
    f"  - id: house.r{k}\n    priority: 0\n    then:\n      - {a}: \"layout.tp <= 1\"{w}\n    because: a generated house policy\n"
    for k, (a, w) in enumerate([("require", ""), ("avoid", "\n        worth: 60"), ("avoid", "\n        worth: 60")]))


@settings(max_examples=fuzz(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(JOBS), policy())
@example(dict(model="llama-3-70b", gpus=32, seq_len=8192), PAST_100)
def test_no_headline_that_does_not_fit_under_any_policy(tmp_path_factory, kw, text):
    path = tmp_path_factory.mktemp("policy") / "house.yaml"
    path.write_text(text)
    try:
        d = decide(build_job(**kw), [str(path)])
    except InputError as e:
        # worths no allowed layout keeps under 100% together leave speed nothing to choose by:
        # the policy is refused, one line naming its rule (decision/run._refuse_worths_past_100)
        assert "house.r" in str(e) and "worth 100% or more together" in str(e), e
        return
    r = as_dict(d)
    if r["layout"] is None:
        s = r["search"]
        assert s["nothing_allowed"] and r["metrics"] is None and r["memory"] is None
        assert s["nothing_allowed"] in r["warnings"]
        if "fit in memory, but the rules allow none" in s["nothing_allowed"]:
            assert "house.r" in s["nothing_allowed"] and s["sizing"] is None   # the policy, not memory
        return
    mem = r["memory"]
    assert mem["fits"] and mem["peak_gib"] <= 0.95 * mem["capacity_gib"] + 1e-9
