"""Pictures on every machine: SVG with or without Graphviz's `dot` (Graphviz compiled to
WebAssembly when it is missing), PNG only with `dot`, and a graph that cannot be written is one
line on stderr with status 2."""
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from shardwise.explain import render
from shardwise.explain.trace_graph import trace_graph
from shardwise.kb.build import build_job
from shardwise.kb.errors import InputError
from shardwise.decision.result import as_dict
from shardwise.decision.run import decide

SVG = "{http://www.w3.org/2000/svg}"
SMALL = 'digraph small { "a b" -> "c→d" [label="tp = 2"]; "c→d" -> e; }'
HAS_DOT = shutil.which("dot") is not None


@pytest.fixture
def no_dot(tmp_path, monkeypatch):
    """A PATH on which there is no `dot`, as on most laptops and CI images."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert shutil.which("dot") is None


@pytest.fixture(scope="module")
def trace_source():
    return trace_graph(as_dict(decide(build_job(model="llama-3-70b", gpus=32, seq_len=8192)))).source


def titles(svg: str, kind: str) -> list[str]:
    """The <title> of every node (or edge) group Graphviz drew: its name in the DOT source."""
    root = ET.fromstring(svg)
    return sorted(g.find(f"{SVG}title").text for g in root.iter(f"{SVG}g") if g.get("class") == kind)


def check_svg(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert any(g.get("class") == "graph" for g in root.iter(f"{SVG}g"))
    return root


def test_svg_is_written_without_dot(no_dot, tmp_path):
    out = tmp_path / "small.svg"
    assert render.write_graph(SMALL, str(out)) == str(out)
    svg = out.read_text(encoding="utf-8")
    check_svg(svg)
    assert titles(svg, "node") == ["a b", "c→d", "e"]
    assert titles(svg, "edge") == ["a b->c→d", "c→d->e"]
    assert "tp = 2" in svg


def test_inline_svg_without_dot_is_an_svg_element(no_dot, trace_source):
    svg = render.svg_of(trace_source)
    assert svg.startswith("<svg")                       # no XML prolog or DOCTYPE: invalid inside HTML
    check_svg(svg)
    assert len(titles(svg, "node")) > 10


def test_dot_and_gv_endings_write_the_source(tmp_path):
    for name in ("g.dot", "g.gv"):
        render.write_graph(SMALL, str(tmp_path / name))
        assert (tmp_path / name).read_text(encoding="utf-8") == SMALL


def test_a_graph_graphviz_cannot_parse_is_an_input_error(no_dot, tmp_path):
    with pytest.raises(InputError) as e:
        render.write_graph("digraph broken { a -> ", str(tmp_path / "b.svg"))
    assert "Graphviz" in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "b.svg").exists()


def test_explain_draws_svg_without_dot(run_cli, no_dot, tmp_path):
    out = tmp_path / "trace.svg"
    code, stdout, err = run_cli("explain", "--model", "llama-3-8b", "--gpus", "8", "--why", "tp", "--graph", str(out))
    assert code == 0, err
    assert stdout.rstrip().endswith(f"wrote {out}") and err == ""
    check_svg(out.read_text(encoding="utf-8"))


def test_png_without_dot_is_refused_before_anything_runs(run_cli, no_dot, tmp_path):
    out = tmp_path / "trace.png"
    code, stdout, err = run_cli("explain", "--model", "llama-3-8b", "--why", "tp", "--graph", str(out))
    assert code == 2 and stdout == "" and not out.exists()
    assert len(err.strip().splitlines()) == 1 and "PNG needs Graphviz's `dot`" in err and ".svg works" in err


@pytest.mark.parametrize("command", [["explain", "--model", "llama-3-8b", "--why", "tp"], ["rules", "graph"]])
def test_a_graph_that_cannot_be_written_is_status_2(run_cli, tmp_path, command):
    (tmp_path / "taken.svg").mkdir()                 # a folder where the file should go: rendering works, writing fails
    for target in (tmp_path / "no-such-folder" / "g.svg", tmp_path / "taken.svg"):
        code, stdout, err = run_cli(*command, "--graph", str(target))
        assert code == 2, (target, stdout)
        assert len(err.strip().splitlines()) == 1 and f"--graph {target}: cannot write" in err


def test_commands_that_draw_nothing_do_not_load_wasmtime():
    code = ("import sys; from shardwise.cli import explain_cmd, rules_cmd, report_cmd; "
            "from shardwise.explain import render; print('wasmtime' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz `dot` is not installed (apt-get install graphviz)")
def test_with_dot_png_is_a_png(run_cli, tmp_path):
    out = tmp_path / "trace.png"
    code, stdout, err = run_cli("explain", "--model", "llama-3-8b", "--why", "tp", "--graph", str(out))
    assert code == 0, err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz `dot` is not installed (apt-get install graphviz)")
def test_webassembly_draws_the_same_graph_as_dot(trace_source):
    by_dot = render._with_dot(shutil.which("dot"), trace_source, "svg", "test").decode("utf-8")
    by_wasm = render._with_wasm(trace_source, "test").decode("utf-8")
    check_svg(by_dot), check_svg(by_wasm)
    assert titles(by_wasm, "node") == titles(by_dot, "node") and len(titles(by_dot, "node")) > 10
    assert titles(by_wasm, "edge") == titles(by_dot, "edge")


def test_a_tie_is_not_minus_zero_and_an_alternatives_rule_is_its_layouts():
    """An alternative as fast to the printed digit reads '0% tokens/s', not '-0%'; a rule an
    alternative breaks is said to be broken by that layout, which may break it through another
    setting than the row's."""
    from shardwise.cli.recommend_cmd import setting_line
    tie = {"value": 2, "layout": "tp=4 zero=2", "tokens_per_s": 44783.0, "delta_pct": -0.001,
           "objective_delta_pct": -3.0, "ruled_out_by": "as fast, to 0.01%; breaks zero.lowest-that-fits (worth 3%)"}
    line = setting_line("zero", {"reasons": [], "alternatives": [tie]})
    assert line == "with zero=2: 0% tokens/s, that layout breaks zero.lowest-that-fits (worth 3%)"


def test_the_why_line_names_the_value_nearest_the_headline_by_the_objective():
    """Of the other values, the line quotes the one whose best layout the choice ranks highest
    (tokens/s less the worths it breaks), not the one with the most raw tokens/s: a slightly
    faster layout that breaks a 5% preference is further from the headline than one 2.5% slower
    that breaks nothing."""
    from shardwise.cli.recommend_cmd import setting_line
    fast = {"value": 16, "layout": "mbs=16", "tokens_per_s": 99.0, "delta_pct": -1.0, "objective_delta_pct": -9.0,
            "ruled_out_by": "1.0% slower; breaks cp.long-sequences (worth 5%), memory.headroom (worth 3%)"}
    near = {"value": 4, "layout": "mbs=4", "tokens_per_s": 97.5, "delta_pct": -2.5, "objective_delta_pct": -2.5,
            "ruled_out_by": "2.5% slower"}
    assert setting_line("mbs", {"reasons": [], "alternatives": [fast, near]}) == "with mbs=4: -2.5% tokens/s"


def test_where_no_other_value_fits_the_why_line_names_the_one_nearest_to_fitting():
    """Gemma 2 9B LoRA on four 48 GB cards fits only at micro-batch 1: the line names mbs=2, over
    by 16 GiB, not mbs=32, over by 850 GiB, because its layout would be the fastest."""
    from shardwise.cli.recommend_cmd import setting_line
    over = "memory: {:.1f} GiB of 48.0 breaks memory.fit-margin (require 'memory.used_pct <= 95')"
    two = {"value": 2, "layout": "mbs=2", "tokens_per_s": 3063.0, "delta_pct": 3.2, "objective_delta_pct": None,
           "hard_broken": 1, "peak_gib": 64.3, "ruled_out_by": over.format(64.3)}
    many = {"value": 32, "layout": "mbs=32", "tokens_per_s": 3159.0, "delta_pct": 6.5, "objective_delta_pct": None,
            "hard_broken": 1, "peak_gib": 898.0, "ruled_out_by": over.format(898.0)}
    line = setting_line("mbs", {"reasons": [], "alternatives": [many, two]})
    assert line.startswith("with mbs=2: does not fit, 64.3 GiB of 48.0"), line


def test_the_alternatives_say_how_near_to_allowed_each_is():
    """Each other value's layout carries its peak and how many hard rules it breaks (0 when allowed),
    the facts the one-line why ranks the values the hard rules leave out by."""
    from shardwise.decision.result import as_dict
    from shardwise.decision.run import decide
    from shardwise.kb.build import build_job
    job = build_job(model="gemma-2-9b", gpus=4, gpu="rtx-6000-ada", seq_len=8192, training="lora",
                    framework="hf", attention="eager")
    mbs = as_dict(decide(job))["settings"]["mbs"]
    assert mbs["value"] == 1
    over = [a for a in mbs["alternatives"] if a["layout"]]
    assert over and all(a["hard_broken"] >= 1 and a["peak_gib"] > 48 for a in over)
    assert min(over, key=lambda a: a["peak_gib"])["value"] == 2
