"""rules graph: what networkx tells about which rules feed which (cycles, unreachable rules,
influence on a setting), on the playbook and on hand-written house policies."""
import json

from shardwise.explain import rule_graph
from shardwise.rules.loader import load_rulebook
from shardwise.rules.recommend import rule_files


def _book(*extra):
    paths, shown = rule_files([str(e) for e in extra])
    return load_rulebook(paths, shown)


def test_playbook_rules_are_all_reachable_and_the_mbs_pair_is_named_as_a_possible_loop():
    r = rule_graph.analyse(_book())
    assert r["unreachable"] == {}
    contested = {k["setting"]: k for c in r["cycles"] for k in c["contested"]}
    assert set(contested["mbs"]["rules"]) == {"batch.grow-micro-batch", "batch.shrink-micro-batch"}
    loop = contested["mbs"]["example"].split(" -> ")
    assert loop[0] == loop[-1] and set(loop) == {"batch.grow-micro-batch", "batch.shrink-micro-batch"}


def test_a_rule_waiting_for_a_setting_nothing_moves_is_unreachable(tmp_path):
    f = tmp_path / "house.yaml"
    f.write_text("""
disable: [cp.long-sequence]
rules:
  - id: house.cp-needs-ring
    priority: 500
    when: "layout.cp >= 2"
    then: [{note: "ring attention"}]
    because: "CP is on"
  - id: house.contradiction
    priority: 500
    when: "layout.tp > 8 and layout.tp < 4"
    then: [{note: "never"}]
    because: "never"
""")
    dead = rule_graph.analyse(_book(f))["unreachable"]
    assert "cp away from its starting value (cp = 1)" in dead["house.cp-needs-ring"]
    assert "layout.tp above 8 and below 4" in dead["house.contradiction"]
    # with the playbook's CP rule back, the first one is reachable again
    f.write_text(f.read_text().replace("disable: [cp.long-sequence]\n", ""))
    assert list(rule_graph.analyse(_book(f))["unreachable"]) == ["house.contradiction"]


def test_two_house_rules_undoing_each_other_are_reported_as_a_loop(tmp_path):
    f = tmp_path / "fight.yaml"
    f.write_text("""
- id: house.tp-up
  priority: 500
  when: "memory.used_pct < 50"
  then: [{set: {tp: "next.tp"}}]
  because: "up"
- id: house.tp-down
  priority: 500
  when: "metrics.tp_comm_pct > 10"
  then: [{set: {tp: 1}}]
  because: "down"
""")
    tp = [k for c in rule_graph.analyse(_book(f))["cycles"] for k in c["contested"] if k["setting"] == "tp"]
    assert tp and {"house.tp-up", "house.tp-down"} <= set(tp[0]["rules"])


def test_influence_on_zero_lists_setters_first_then_rules_that_move_what_they_read(run_cli):
    code, out, err = run_cli("rules", "graph", "--setting", "zero", "--format", "json")
    assert code == 0, err
    rows = json.loads(out)["influences"]["zero"]
    direct = [d["rule"] for d in rows if d["direct"]]
    assert set(direct) == {"zero.stage1-is-free", "zero.escalate"} and rows[0]["direct"]
    tp = next(d for d in rows if d["rule"] == "tp.fit-in-node")
    assert not tp["direct"] and tp["path"].startswith("tp.fit-in-node -> tp -> ") and tp["path"].endswith(" -> zero")
    # a warning rule sets nothing and cannot influence any setting
    assert all(not d["rule"].startswith("warn") for d in rows)


def test_rules_graph_draws_dot_with_rules_facts_and_settings(run_cli, tmp_path):
    code, out, err = run_cli("rules", "graph", "--graph", str(tmp_path / "g.dot"))
    assert code == 0, err
    src = (tmp_path / "g.dot").read_text()
    assert src.startswith("digraph rule_graph") and "tp.fit-in-node" in src and "memory.used_pct" in src
    assert "shape=diamond" in src and "estimators" in src
    assert "every rule is reachable" in out and "could loop: mbs" in out


def test_rules_graph_refuses_an_unknown_drawing_format_before_printing_anything(run_cli, tmp_path):
    code, out, err = run_cli("rules", "graph", "--graph", str(tmp_path / "g.bmp"))
    assert code == 2 and out == "" and not (tmp_path / "g.dot").exists()
    assert err.strip().endswith("allowed endings .gv, .dot, .svg, .png") and len(err.strip().splitlines()) == 1
