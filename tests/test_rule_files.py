"""Rule files are data: malformed or hostile ones are refused with file:line before anything
runs, loops are stopped naming the rules, and the process stays healthy."""
import pytest

from shardwise.kb.build import build_job
from shardwise.kb.errors import InputError
from shardwise.rules import expr
from shardwise.rules.engine import RuleLoopError
from shardwise.rules.facts import SCHEMA
from shardwise.rules.loader import read_rule_file
from shardwise.rules.recommend import recommend

GOOD = """rules:
  - id: house.small
    priority: 500
    when: "layout.tp < 2"
    then:
      - warn: "tp is {layout.tp}"
    because: "a test"
"""


def write(tmp_path, text, name="house.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


BAD = [
    ("rules:\n  - id: x\n    priority: 5\n    when: \"layout.tp <\n", ":4", "YAML"),
    (GOOD.replace("priority: 500", "priority: 5000"), ":2", "0 to 1000"),
    (GOOD.replace("layout.tp < 2", "layout.tpp < 2"), ":2", "unknown fact 'layout.tpp'"),
    (GOOD.replace("layout.tp < 2", "layout.recompute < 2"), ":2", "cannot compare"),
    (GOOD.replace("layout.tp < 2", "__import__('os')"), ":2", "unexpected"),
    (GOOD.replace("layout.tp < 2", "layout.tp.__class__ == 1"), ":2", "unexpected character '.'"),
    (GOOD.replace("layout.tp < 2", "(lambda: 1)() == 1"), ":2", "unexpected character ':'"),
    (GOOD.replace("layout.tp < 2", "open('x') == 1"), ":2", "unknown function 'open'"),
    (GOOD.replace("layout.tp < 2", "layout.tp[0] == 1"), ":2", "unexpected"),
    (GOOD.replace("layout.tp < 2", "2 ** 99999 > 1"), ":2", "unexpected"),
    (GOOD.replace("layout.tp < 2", "1e999 > 1"), ":2", "out of range"),
    (GOOD.replace('"a test"', '"{layout.tp.__class__}"'), ":2", "placeholder"),
    (GOOD.replace('"a test"', '"{layout.tpx}"'), ":2", "unknown fact 'layout.tpx'"),
    (GOOD.replace('"a test"', '"{0.__class__}"'), ":2", "placeholder"),
    (GOOD.replace('"a test"', '"{layout.tp!r}"'), ":2", "placeholder"),
    (GOOD.replace("- warn: \"tp is {layout.tp}\"", "- exec: \"rm -rf /\""), ":6", "unknown action 'exec'"),
    (GOOD.replace("- warn: \"tp is {layout.tp}\"", "- set: {dp: 4}"), ":6", "cannot set 'dp'"),
    (GOOD.replace("- warn: \"tp is {layout.tp}\"", "- set: {tp: \"layout.recompute\"}"), ":6", "must be a number"),
    (GOOD.replace("id: house.small", "id: House Small"), ":2", "lower-case"),
    (GOOD.replace("    because: \"a test\"\n", ""), ":2", "missing 'because'"),
    (GOOD + "    colour: red\n", ":2", "unknown key"),
    ("- just a string\n", ":1", "mapping"),
    ("rules:\n" + "  - id: deep\n    priority: 1\n    when: \"" + "(" * 60 + "true" + ")" * 60 + "\"\n"
     "    then: [{note: x}]\n    because: x\n", ":2", "nests"),
]


@pytest.mark.parametrize("text,where,needle", BAD)
def test_bad_rule_files_are_refused_with_file_and_line(tmp_path, text, where, needle):
    p = write(tmp_path, text)
    with pytest.raises(InputError) as e:
        read_rule_file(p)
    msg = str(e.value)
    assert f"{p}{where}" in msg and needle.lower() in msg.lower() and "\n" not in msg


def test_huge_rule_file_is_refused(tmp_path):
    p = write(tmp_path, "# x\n" * 400_000)
    with pytest.raises(InputError, match="larger than"):
        read_rule_file(p)


def test_a_looping_rule_set_is_stopped_naming_the_rules(tmp_path):
    p = write(tmp_path, """rules:
  - id: loop.up
    priority: 990
    when: "layout.zero == 1"
    then: [{set: {zero: 2}}]
    because: up
  - id: loop.down
    priority: 990
    when: "layout.zero == 2"
    then: [{set: {zero: 1}}]
    because: down
""")
    job = build_job(model="llama-3-8b", gpus=8)
    with pytest.raises(RuleLoopError, match="loop.up -> loop.down"):
        recommend(job, [str(p)])
    ok = recommend(job)                          # the process stays healthy for the next job
    assert ok["memory"]["fits"]


def test_malformed_rules_on_the_command_line_exit_2(run_cli, tmp_path):
    p = write(tmp_path, GOOD.replace("layout.tp < 2", "layout.tp <<< 2"))
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "8", "--rules", str(p))
    assert code == 2 and out == "" and f"{p}:2" in err and len(err.strip().splitlines()) == 1


def test_override_and_disable(tmp_path):
    dup = write(tmp_path, GOOD.replace("house.small", "tp.fit-in-node"))
    with pytest.raises(InputError, match="already used at rules/tp.yaml"):
        recommend(build_job(model="llama-3-8b", gpus=8), [str(dup)])
    off = write(tmp_path, "disable: [zero.stage1-is-free]\nrules: []\n", "off.yaml")
    r = recommend(build_job(model="llama-3-8b", gpus=8), [str(off)])
    assert "zero.stage1-is-free" not in [t["rule"] for t in r["trace"]]


def test_expressions_evaluate_with_our_semantics():
    facts = {"layout.tp": 4, "layout.pp": 2, "memory.fits": False, "layout.recompute": "none"}.__getitem__
    schema = {"layout.tp": "num", "layout.pp": "num", "memory.fits": "bool", "layout.recompute": "str"}

    def ev(text):
        node = expr.parse(text)
        expr.typecheck(node, schema)
        return expr.evaluate(node, facts)
    assert ev("min(8, layout.tp * 2) == 8") is True
    assert ev("not memory.fits and layout.pp < 4") is True
    assert ev("layout.recompute in ['none', 'selective']") is True
    assert ev("layout.tp // 3 + layout.tp % 3") == 2
    assert ev("pow2ceil(5) + log2(8)") == 11
    with pytest.raises(expr.ExprError, match="division by zero"):
        ev("layout.tp / (layout.pp - 2) > 1")
    assert expr.render("{layout.tp} and {layout.tp:.2f} {memory.fits}", facts) == "4 and 4.00 false"


def test_lint_finds_rules_that_cannot_fire_and_conflicts(run_cli, tmp_path):
    p = write(tmp_path, """rules:
  - id: never
    priority: 500
    when: "layout.tp > 8 and layout.tp < 2"
    then: [{set: {pp: 2}}]
    because: x
  - id: twin
    priority: 500
    when: "true"
    then: [{set: {pp: 4}}]
    because: y
""")
    code, out, _ = run_cli("rules", "lint", str(p))
    assert code == 1 and "never can never fire" in out and "sets pp at priority 500" in out
    code, out, _ = run_cli("rules", "lint", "rules/policies")
    assert code == 0 and "0 problems" in out


def test_policy_test_cases(run_cli, tmp_path):
    spec = tmp_path / "cases.yaml"
    spec.write_text(f"""rules: [{(tmp_path / 'p.yaml').name}]
cases:
  - name: pcie boxes get no TP
    job: {{model: llama-3-8b, gpus: 8, gpu: h100-pcie}}
    expect: {{tp: 1, fits: true}}
  - name: wrong on purpose
    job: {{model: llama-3-8b, gpus: 8, gpu: h100-pcie}}
    expect: {{tp: 2}}
""")
    (tmp_path / "p.yaml").write_text(open("rules/policies/tp-never-crosses-pcie.yaml").read())
    code, out, _ = run_cli("rules", "test", str(spec))
    assert code == 1 and "ok   pcie boxes get no TP" in out and "FAIL wrong on purpose: tp expected 2 got 1" in out


def test_every_fact_in_the_schema_is_documented_by_the_facts_command(run_cli):
    code, out, _ = run_cli("rules", "facts")
    assert code == 0 and all(p in out for p in SCHEMA)
