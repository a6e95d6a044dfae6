"""rules graph: which facts each rule reads and which settings it bears on, rules that can never
fire or bear on no setting, and the rules behind one setting -- on the playbook and on house
policies."""
import json

import networkx as nx

from shardwise.explain import rule_graph
from shardwise.rules import playbook


def _book(*extra):
    return playbook.load([str(e) for e in extra]).rules


def test_the_playbook_graph_is_acyclic_every_rule_can_fire_and_every_constraint_bears_on_a_setting():
    book = _book()
    r = rule_graph.analyse(book)
    assert r["acyclic"] and r["never_fires"] == {} and r["no_setting"] == {}
    assert r["strata"] == {str(s): sum(x.stratum == s for x in book) for s in (1, 2, 3)}
    assert set(r["info"]) == {x.id for x in book if x.kind == "info"}
    assert "tp.inside-nvlink-domain" in r["settings"]["tp"] and "cp.long-sequences" in r["settings"]["cp"]
    assert "zero.lowest-that-fits" in r["settings"]["zero"] and "sp.with-tp" in r["settings"]["sp"]


def test_edges_follow_what_each_rule_reads_and_adds(tmp_path):
    f = tmp_path / "house.yaml"
    f.write_text("""rules:
  - id: house.pin-mbs
    priority: 500
    when: "train.seq_len > 65536"
    then: [{pin: {mbs: 1}}]
    because: x
  - id: house.deep-pp
    priority: 500
    when: "not fit.without_pp"
    then: [{avoid: "layout.pp > cluster.nodes", worth: 4}]
    because: x
""")
    g = rule_graph.build(_book(f))
    assert nx.is_directed_acyclic_graph(g)
    assert g.has_edge("fact:train.seq_len", "rule:house.pin-mbs") and g.has_edge("rule:house.pin-mbs", "setting:mbs")
    assert g.edges["rule:house.pin-mbs", "setting:mbs"]["how"] == "pin mbs = 1"
    assert g.has_edge("group:feasibility", "fact:fit.without_pp")
    assert g.edges["fact:fit.without_pp", "rule:house.deep-pp"]["read"] == "when"
    assert g.edges["fact:cluster.nodes", "rule:house.deep-pp"]["read"] == "expression"
    assert g.has_edge("rule:house.deep-pp", "setting:pp") and not g.has_edge("rule:house.deep-pp", "setting:tp")
    assert g.nodes["rule:house.deep-pp"]["stratum"] == 2 and g.nodes["rule:house.pin-mbs"]["stratum"] == 1
    # a memory constraint bears on every setting through the estimates, not directly
    assert g.has_edge("rule:memory.fit-margin", rule_graph.ESTIMATES)
    assert not any(g.has_edge("rule:memory.fit-margin", f"setting:{s}") for s in rule_graph.SETTINGS)


def test_rules_that_never_fire_or_bear_on_no_setting_are_reported(tmp_path):
    f = tmp_path / "house.yaml"
    f.write_text("""
disable: [cp.long-sequences]
rules:
  - id: house.contradiction
    priority: 500
    when: "cluster.gpus > 8 and cluster.gpus < 4"
    then: [{require: "layout.tp <= 2"}]
    because: "never"
  - id: house.flat
    priority: 500
    then: [{require: "cluster.gpus >= 1"}]
    because: "reads no layout"
  - id: house.note
    priority: 100
    when: "layout.cp >= 2"
    then: [{note: "ring attention"}]
    because: "CP is on"
""")
    r = rule_graph.analyse(_book(f))
    assert list(r["never_fires"]) == ["house.contradiction"]
    assert "cluster.gpus above 8 and below 4" in r["never_fires"]["house.contradiction"]
    assert list(r["no_setting"]) == ["house.flat"] and r["no_setting"]["house.flat"] == f"{f}:9"
    assert "house.note" in r["info"] and "cp.long-sequences" not in r["settings"]["cp"]


def test_rules_bearing_on_zero_list_direct_ones_first_then_those_through_the_estimates(run_cli):
    code, out, err = run_cli("rules", "graph", "--setting", "zero", "--format", "json")
    assert code == 0, err
    rows = json.loads(out)["influences"]["zero"]
    direct = [d["rule"] for d in rows if d["direct"]]
    assert direct == ["dp.zero3-at-scale", "zero.lowest-that-fits"] and rows[0]["direct"]
    lowest = next(d for d in rows if d["rule"] == "zero.lowest-that-fits")
    assert lowest["how"] == "avoid 'layout.zero > max(1, same.min_zero)' (worth 3%)" and lowest["stratum"] == 2
    rest = {d["rule"]: d for d in rows if not d["direct"]}
    assert "memory.fit-margin" in rest and rest["memory.fit-margin"]["kind"] == "hard"
    # rules that only warn or note bear on no setting; a TP-only rule does not bear on zero
    assert all(d["kind"] != "info" for d in rows) and "tp.inside-nvlink-domain" not in rest


def test_a_house_pin_bears_directly_on_its_setting(run_cli, tmp_path):
    code, out, err = run_cli("rules", "graph", "--rules", "rules/policies/full-recompute-above-64k.yaml",
                             "--setting", "recompute")
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("policy.full-recompute-long-context"))
    assert "directly" in row and "pin recompute = 'full'" in row


def test_rules_graph_draws_dot_left_to_right_with_strata(run_cli, tmp_path):
    code, out, err = run_cli("rules", "graph", "--graph", str(tmp_path / "g.dot"))
    assert code == 0, err
    src = (tmp_path / "g.dot").read_text()
    assert src.startswith("digraph rule_graph") and "rankdir=LR" in src
    assert "tp.inside-nvlink-domain" in src and "memory.used_pct" in src and "shape=diamond" in src
    assert "cluster_s1" in src and "cluster_s2" in src and "cluster_s3" in src
    assert "every rule can fire" in out and "no cycles" in out
    # --setting keeps only what bears on it
    code, out, err = run_cli("rules", "graph", "--setting", "cp", "--graph", str(tmp_path / "cp.dot"))
    src = (tmp_path / "cp.dot").read_text()
    assert code == 0 and "cp.long-sequences" in src and "tp.inside-nvlink-domain" not in src
    assert 'label=cp ' in src and 'label=tp ' not in src


def test_rules_graph_renders_svg(run_cli, tmp_path):
    code, out, err = run_cli("rules", "graph", "--setting", "pp", "--graph", str(tmp_path / "g.svg"))
    assert code == 0, err
    svg = (tmp_path / "g.svg").read_text()
    assert "<svg" in svg and "pp.only&#45;when&#45;needed" in svg      # SVG escapes '-' in text
    # DESIGN.md's spelling, `rules graph -o FILE`, draws the same
    code, out, err = run_cli("rules", "graph", "--setting", "pp", "-o", str(tmp_path / "o.svg"))
    assert code == 0, err
    assert (tmp_path / "o.svg").read_text() == svg


def test_rules_graph_refuses_an_unknown_drawing_format_before_printing_anything(run_cli, tmp_path):
    code, out, err = run_cli("rules", "graph", "--graph", str(tmp_path / "g.bmp"))
    assert code == 2 and out == "" and not (tmp_path / "g.dot").exists()
    assert err.strip().endswith("allowed endings .gv, .dot, .svg, .png") and len(err.strip().splitlines()) == 1


def test_a_graph_that_cannot_be_written_fails_before_anything_is_printed(run_cli, tmp_path):
    (tmp_path / "taken.svg").mkdir()
    code, out, err = run_cli("rules", "graph", "--graph", str(tmp_path / "taken.svg"))
    assert code == 2 and out == "" and f"--graph {tmp_path / 'taken.svg'}: cannot write" in err
