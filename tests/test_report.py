"""shardwise report: one self-contained HTML page, checked as text and as a person sees it in
headless Chromium (Debian's chromium; tests/browser/setup.sh installs it, else the browser test
skips and says why)."""
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from shardwise.explain import report, report_html
from shardwise.explain.memory_chart import COLOURS, grouped
from shardwise.kb.build import build_job
from shardwise.rules import playbook

JOB = dict(model="llama-3-70b", gpus=64, seq_len=8192, global_batch=128)
# a house policy pins two pipeline stages, so the chart has two bars whatever the headline would be
TWO_STAGES = "rules:\n  - id: house.two-stages\n    priority: 900\n    then:\n      - pin: {pp: 2}\n    because: a test\n"


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    p = tmp_path_factory.mktemp("policy") / "two-stages.yaml"
    p.write_text(TWO_STAGES)
    return [str(p)]


@pytest.fixture(scope="module")
def data(policy):
    return report.build(build_job(**JOB), policy)


@pytest.fixture(scope="module")
def page(data):
    return report_html.render(data)


def test_report_fetches_nothing(page):
    assert "<script" not in page and "<link" not in page and "@import" not in page and "url(" not in page
    assert not re.search(r"\ssrc\s*=", page)
    # the only addresses are the SVG and XLink namespace names, which no browser fetches
    assert {u for u in re.findall(r"https?://[^\"'\s>]+", page)} <= {"http://www.w3.org/2000/svg",
                                                                       "http://www.w3.org/1999/xlink"}


def test_report_holds_every_part_a_meeting_needs(data, page):
    for section in ("recommendation", "job", "memory", "rationale", "decision-trace", "alternatives", "exports",
                    "rule-files"):
        assert f'id="{section}"' in page
    for s in ("tp", "pp", "vp", "dp", "cp", "ep", "zero", "sp", "mbs", "recompute"):
        assert f'id="why-{s}"' in page
    assert "tp.inside-nvlink-domain" in page and "shardwise:rules/tp.yaml:" in page and "What would change it" in page
    assert "headline = argmax of" in page                # the search node of the trace: the choice rule
    for f in playbook.file_hashes(playbook.load()):
        assert f["file"] in page and f["sha256"] in page
    assert "ds_config.json" in page and "train_micro_batch_size_per_gpu" in page
    # the chart: one bar per stage, its segments adding up to the stage's peak
    assert len(data["stages"]) == 2
    for s in data["stages"]:
        assert sum(grouped(s["breakdown_gib"]).values()) == pytest.approx(s["peak_gib"], abs=0.01)
    segments = sum(1 for s in data["stages"] for v in grouped(s["breakdown_gib"]).values() if v > 0)
    assert page.count('class="seg seg-') == segments


def test_the_report_lists_the_runs_behind_its_checked_lines(data, page):
    """A review meeting can read the runs the speed and memory checked lines were read from, each
    with the estimate's error on it (kb/data/track_record.yaml), as many as the line counts."""
    from shardwise.kb import track_record
    assert 'id="track-record"' in page
    speed = data["track_record"]["speed"]
    assert speed and len(speed) == data["rec"]["metrics"]["checked"]["runs"]
    assert f"<h3>speed: {len(speed)} runs</h3>" in page
    for r in speed:
        assert f"<td>{r['run']}</td>" in page and f"<td>{r['error_pct']:+.1f}</td>" in page
    assert set(data["track_record"]) <= {"speed", "memory", "memory: layouts that ran"}
    assert all(r in track_record.runs() for r in speed)


def test_same_job_same_bytes(page, policy):
    assert report_html.render(report.build(build_job(**JOB), policy)) == page


def test_without_dot_the_report_still_draws_the_trace(run_cli, tmp_path, monkeypatch):
    # no `dot` on PATH, as on most laptops and CI images: Graphviz compiled to WebAssembly draws it
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    out_file = tmp_path / "r.html"
    code, out, err = run_cli("report", "--model", "llama-3-8b", "--gpus", "8", "-o", str(out_file))
    assert code == 0 and err == "", err
    html = out_file.read_text()
    start = html.index('<div class="figure" id="trace">') + len('<div class="figure" id="trace">')
    trace = ET.fromstring(html[start:html.index("</svg>", start) + len("</svg>")])
    assert trace.tag == "{http://www.w3.org/2000/svg}svg"
    assert sum(1 for g in trace.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node") > 10
    assert "digraph decision_trace" not in html                      # never the raw DOT source


def test_report_refuses_a_non_html_output(run_cli, tmp_path):
    code, out, err = run_cli("report", "--model", "llama-3-8b", "-o", str(tmp_path / "r.pdf"))
    assert code == 2 and ".html" in err and len(err.strip().splitlines()) == 1


# What the browser drew: the injected script measures the elements after layout and writes
# the numbers into the page, which --dump-dom prints.
MEASURE = """<script>window.onload = function () {
  function box(e) { var r = e.getBoundingClientRect(); return [r.left, r.top + window.scrollY, r.width, r.height]; }
  var trace = document.querySelector('#trace svg'), chart = document.getElementById('memory-chart');
  var o = {page: [document.documentElement.scrollWidth, document.documentElement.scrollHeight],
           trace: box(trace), chart: box(chart),
           trace_nodes: Array.prototype.filter.call(trace.querySelectorAll('g.node'),
               function (n) { var r = n.getBoundingClientRect(); return r.width > 5 && r.height > 5; }).length,
           segments: Array.prototype.map.call(chart.querySelectorAll('rect.seg'),
               function (r) { return [r.getAttribute('class').split('seg-')[1], r.getBoundingClientRect().height]; }),
           capacity: box(document.getElementById('capacity'))};
  document.getElementById('measured').textContent = JSON.stringify(o);
};</script><pre id="measured"></pre></body>"""


def _chromium(*args, timeout=180):
    return subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--no-first-run", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="Debian's chromium is not installed (tests/browser/setup.sh installs it as root)")
def test_chromium_draws_the_trace_and_the_memory_chart(data, page, tmp_path):
    Image = pytest.importorskip("PIL.Image", reason="pillow (in the test extras) reads the screenshot")
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", MEASURE))
    dom = _chromium("--window-size=1280,2000", "--dump-dom", probe.as_uri())
    m = json.loads(re.search(r'<pre id="measured">(.*?)</pre>', dom.stdout, re.S).group(1))

    nodes = len(re.findall(r'<g id="node\d+" class="node">', data["trace_svg"]))
    assert nodes > 10 and m["trace_nodes"] == nodes                  # every node of the trace is drawn
    assert m["trace"][2] > 300 and m["trace"][3] > 300
    assert m["chart"][2] > 300 and m["chart"][3] > 250
    assert m["segments"] and all(h > 0.5 for _, h in m["segments"])  # every stacked segment is visible
    assert m["capacity"][2] > 200                                     # the capacity line spans the plot

    shot, plain = tmp_path / "report.png", tmp_path / "report.html"
    plain.write_text(page)
    width, height = m["page"]
    _chromium(f"--window-size={width},{height}", f"--screenshot={shot}", plain.as_uri())
    img = Image.open(shot).convert("RGB")
    assert img.size == (width, height)

    def colours(box):
        x, y, w, h = (int(v) for v in box)
        return {"#%02x%02x%02x" % c for _, c in img.crop((x, y, x + w, y + h)).getcolors(1 << 20)}

    in_chart = colours(m["chart"])
    for group, _ in m["segments"]:
        assert COLOURS[group] in in_chart, f"the {group} segment is not painted"
    in_trace = colours(m["trace"])
    assert "#c9ecc9" in in_trace and "#dbe9ff" in in_trace           # honoured preferences (green), settings (blue)


def test_a_kept_preference_reads_faster_where_its_honouring_layout_is_faster(tmp_path):
    """A preference the headline breaks although the best layout honouring it is faster -- that
    layout breaks a weightier one: the report says "faster" and names the other rule, as the
    recommend table does. Built with two house rules on Llama 3 70B: a heavy one against the
    fastest layout's TP x PP, a light one against the setting where the next headline differs
    (the layout that honours the light one then breaks the heavy one or another)."""
    from shardwise.decision.result import as_dict
    from shardwise.decision.run import decide
    job = build_job(model="llama-3-70b", gpus=64, seq_len=8192)
    fastest = dict(kv.split("=") for kv in as_dict(decide(job))["search"]["best"]["layout"].split())
    heavy = tmp_path / "heavy.yaml"
    heavy.write_text(f"""rules:
  - id: policy.not-the-fastest-shape
    title: Avoid the fastest layout's TP x PP
    priority: 900
    then:
      - avoid: "layout.tp == {fastest['tp']} and layout.pp == {fastest['pp']}"
        worth: 30
    because: a test's house rule
""")
    second = {k: str(v) for k, v in as_dict(decide(job, [str(heavy)]))["layout"].items()}
    second["zero"] = second["zero_stage"]
    differs = next(k for k in ("tp", "pp", "cp", "zero", "mbs") if second[k] != fastest.get(k, "1"))
    light = tmp_path / "light.yaml"
    light.write_text(f"""rules:
  - id: policy.a-light-wish
    title: A light wish the second layout breaks
    priority: 900
    then:
      - avoid: "layout.{differs} == {second[differs]}"
        worth: 1
    because: a test's house rule
""")
    page = report_html.render(report.build(job, [str(heavy), str(light)]))
    row = re.search(r"policy\.a-light-wish</td>.*?</tr>", page, re.S).group(0)
    assert "% faster</td>" in row and "% slower" not in row
    assert re.search(r"faster</td><td>[a-z]+\.[a-z0-9.-]+", row)        # the weightier rule it breaks


def test_the_report_says_what_dropping_a_costly_house_policy_would_change(tmp_path):
    """The report's per-setting 'what would change it' is explain's: a forbid of ZeRO-3 that costs
    the job its fastest layout is listed there with file:line."""
    p = tmp_path / "house.yaml"
    p.write_text("rules:\n  - id: house.no-zero3\n    priority: 990\n    then:\n      - forbid: \"layout.zero == 3\"\n"
                 "    because: gathers time out\n")
    job = build_job(model="llama-3-70b", gpus=64, interconnect="ethernet", framework="deepspeed")
    zero = next(s for s in report.build(job, [str(p)])["settings"] if s["setting"] == "zero")
    assert zero["would_change"][0].startswith(f"ZeRO stage would be 3 instead of {zero['value']} without "
                                              f"house.no-zero3 ({p}:2: ")


def test_the_report_gives_the_time_to_train_line_recommend_gives(page):
    """Without --token-budget recommend and memory say the time to train is not estimated and which
    flag gives it; the report, the page a budget owner reads, left the line out without a word.
    With a budget its figure is recommend's, in minutes under an hour."""
    from shardwise.cli.output import NO_BUDGET
    assert f"<td>time to train</td><td>{NO_BUDGET}</td>" in page
    short = report_html.render(report.build(build_job(model="llama-3-8b", gpus=8, token_budget=10e6,
                                                      price_per_gpu_hour=2.0), []))
    assert re.search(r"<td>time to train 10M tokens</td><td>[0-9.]+ min</td>", short) and NO_BUDGET not in short


def test_the_trace_legend_names_every_colour_the_graph_fills(page):
    """The trace draws warnings and notes in yellow (explain/trace_graph._COLOR 'info'), and the
    legend above it named grey, blue, green and red only: a reviewer could not tell a yellow box
    from a constraint it added."""
    legend = page[page.index('<h2 id="decision-trace">'):page.index('<div class="figure" id="trace">')]
    for words in ("grey: hard constraints", "blue: pins", "green: preferences honoured", "red: broken",
                  "yellow: warnings and notes"):
        assert words in legend, words


def test_the_headline_says_whether_speed_was_checked_and_what_is_not_compute(page, data):
    """The headline table gives the exposed communication beside the bubble, as recommend's
    throughput line does, and labels the speed line as the answer does: on a GPU no run checks,
    'speed not checked' (it read 'speed checked: speed not checked: ...')."""
    met = data["rec"]["metrics"]
    assert f'<td>exposed communication</td><td>{met["comm_overhead_pct"]:.1f} %</td>' in page.replace("\n", "")
    assert "<td>speed checked</td>" in page and "speed not checked" not in page
    mi = report_html.render(report.build(build_job(model="llama-3-8b", gpus=8, gpu="mi300x", seq_len=4096), []))
    assert "<td>speed not checked</td><td>no measured or published run on mi300x checks the step time" in mi
    assert "speed checked: " not in mi and "<td>speed checked</td>" not in mi
