"""explain --why: the firing chain, the alternatives from the search, the what-ifs, the trace graph."""
import json

from shardwise.explain.trace_graph import trace_graph
from shardwise.kb.build import build_job
from shardwise.rules.recommend import run_rules


def test_why_tp_names_the_rules_the_facts_and_what_would_change_it(run_cli):
    # Llama 3 8B needs ~81 GiB at TP 1 on an 80 GB H100: TP 2; with 1.5x the memory TP 1 would do
    code, out, err = run_cli("explain", "--model", "llama-3-8b", "--gpus", "8", "--why", "tp", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    assert r["value"] == 2
    setters = [s for s in r["chain"] if "tp" in s["set"]]
    assert setters and setters[-1]["rule"] == "tp.fit-in-node" and setters[-1]["where"] == "rules/tp.yaml:3"
    assert setters[-1]["read"]["memory.capacity_gib"].endswith(" GiB")
    assert {a["value"] for a in r["alternatives"]} >= {1, 4}
    assert all(a["why_not"] for a in r["alternatives"])
    assert any(w.startswith("TP would be 1 instead of 2 if memory per GPU were") for w in r["would_change"])


def test_why_dp_says_it_is_what_remains(run_cli):
    code, out, err = run_cli("explain", "--model", "llama-3-70b", "--gpus", "64", "--why", "dp")
    assert code == 0, err
    assert "DP is what remains" in out


def test_graph_writes_dot_and_says_when_dot_is_missing(run_cli, tmp_path, monkeypatch):
    import shutil
    monkeypatch.setattr(shutil, "which", lambda name: None)
    code, out, err = run_cli("explain", "--model", "llama-3-8b", "--gpus", "8", "--why", "tp",
                             "--graph", str(tmp_path / "trace.svg"))
    assert code == 0, err
    dot = (tmp_path / "trace.dot").read_text()
    assert dot.startswith("digraph decision_trace") and "tp.fit-in-node" in dot and "tp = 2" in dot
    assert "dot` program is not installed" in out and not (tmp_path / "trace.svg").exists()


def test_graph_has_facts_rules_and_settings_in_firing_order():
    res, _, _ = run_rules(build_job(model="llama-3-70b", gpus=32, seq_len=8192), [])
    src = trace_graph(res.trace).source
    positions = [src.index(f'r{t["seq"]} [label="#{t["seq"]} ') for t in res.trace]
    assert positions == sorted(positions)
    assert "memory.used_pct" in src and "shape=diamond" in src


def test_graph_refuses_an_unknown_format(run_cli, tmp_path):
    code, out, err = run_cli("explain", "--model", "llama-3-8b", "--why", "tp", "--graph", str(tmp_path / "t.pdf"))
    assert code == 2 and ".dot, .svg, .png" in err
