"""explain --why: the rules that bear on a setting, the layout with each other value, the what-ifs,
and the decision trace graph."""
import json
import re

from shardwise.decision.result import as_dict
from shardwise.decision.run import decide
from shardwise.explain.trace_graph import trace_graph
from shardwise.kb.build import build_job


def test_why_tp_names_the_rules_the_alternatives_and_what_would_change_it(run_cli):
    code, out, err = run_cli("explain", "--model", "llama-3-8b", "--gpus", "16", "--why", "tp", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    rules = {x["rule"]: x for x in r["reasons"]}
    assert "tp.inside-nvlink-domain" in rules and rules["tp.inside-nvlink-domain"]["file"] == "shardwise:rules/tp.yaml"
    assert rules["tp.inside-nvlink-domain"]["line"] > 0 and rules["tp.inside-nvlink-domain"]["kind"] == "hard"
    values = {a["value"] for a in r["alternatives"]}
    assert values >= {v for v in (1, 2, 4, 8) if v != r["value"]}
    assert all(a["ruled_out_by"] for a in r["alternatives"])
    over = [a for a in r["alternatives"] if a["value"] == 16]
    assert over and "tp.inside-nvlink-domain" in over[0]["ruled_out_by"]      # a rule by id, not a silent bound
    assert isinstance(r["would_change"], list)


def test_why_names_expandable_segments_where_they_would_change_the_setting(run_cli):
    """h200_fresh_boundary.jsonl's L12 at 29,696 tokens: under the caching allocator mbs 2's split
    peak is past capacity (it ran out so), and mbs 1 is taken; with expandable segments mbs 2 is
    the headline. `explain --why mbs` says so among what would change it -- the one what-if a
    launch line decides. A job already on expandable segments is not asked it."""
    job = ("explain", "--why", "mbs", "--model", "llama-3.2-3b", "--gpu", "h200", "--gpus", "1", "--seq-len",
           "29696", "--training", "finetune", "--framework", "hf", "--attention", "sdpa", "--optimizer", "adafactor",
           "--global-batch", "2", "--format", "json")
    code, out, err = run_cli(*job)
    assert code == 0, err
    r = json.loads(out)
    assert r["value"] == 1
    assert "micro-batch would be 2 instead of 1 if the run used expandable segments (--allocator expandable)" \
        in r["would_change"]
    code, out, err = run_cli(*job, "--allocator", "expandable")
    assert code == 0, err
    assert not any("expandable segments" in w for w in json.loads(out)["would_change"])


def test_why_a_pinned_setting_names_the_pin(run_cli):
    code, out, err = run_cli("explain", "--model", "llama-3-70b", "--gpus", "32", "--seq-len", "8192", "--mbs", "4",
                             "--why", "mbs")
    assert code == 0, err
    assert "job.mbs (job; pin, pinned)" in out and "--mbs 4" in out


def test_why_reports_slower_values_with_their_cost(run_cli):
    code, out, err = run_cli("explain", "--model", "llama-3-70b", "--gpus", "64", "--seq-len", "8192", "--why", "pp",
                             "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    priced = [a for a in r["alternatives"] if a["delta_pct"] is not None]
    assert priced and all(("slower" in a["ruled_out_by"]) == (a["delta_pct"] <= 0) or
                          a["ruled_out_by"].startswith("memory") or "(require" in a["ruled_out_by"]
                          for a in priced)


def test_a_value_without_a_valid_layout_says_what_the_framework_cannot_run(run_cli):
    """Under the Trainer (a fine-tune's default framework) selective recomputation does not
    exist; the line for it names the validity rule and what the rule says, not the bare id,
    which a reader cannot look up from the output."""
    code, out, err = run_cli("explain", "--model", "llama-3-8b", "--gpus", "8", "--training", "finetune",
                             "--why", "recompute")
    assert code == 0, err
    lines = out.splitlines()
    at = lines.index("  recompute=selective: no valid layout (validity: recompute-framework)")
    assert lines[at + 1].startswith("      recompute-framework: each framework runs only its own recomputation modes")
    assert "a transformers model under the Trainer or DeepSpeed none or full" in lines[at + 1]
    # modules is ruled out by the same rule: said once, not twice
    assert "  recompute=modules: no valid layout (validity: recompute-framework)" in lines
    assert sum(line.startswith("      recompute-framework:") for line in lines) == 1


def test_graph_reads_left_to_right_facts_rules_constraints_search_settings():
    r = as_dict(decide(build_job(model="llama-3-70b", gpus=32, seq_len=8192, mbs=4)))
    src = trace_graph(r).source
    assert "rankdir=LR" in src and "search:" in src
    for name in ("tp", "pp", "cp", "zero", "recompute"):
        assert f"s_{name} [label=\"{name} = " in src
    assert "memory.fit-margin" in src and "worth" in src
    if r["search"]["departures"]:
        assert "fastest, not taken" in src


def test_graph_shows_each_constraint_and_preference_whole():
    """The graph is what a review meeting reads of the rules, and a PNG has no tooltip: the
    constraint boxes were cut at three lines, so cp.long-sequences read 'train.seq_len /
    layout.cp <...' without the 4096 tokens a CP rank keeps, and tp.inside-nvlink-domain lost
    '% layout.tp == 0'. Every hard and soft rule's condition is drawn in full."""
    r = as_dict(decide(build_job(model="llama-3-70b", gpus=32, seq_len=8192)))
    src = " ".join(trace_graph(r).source.replace("\\n", " ").split())
    for t in r["trace"]:
        for a in t["added"]:
            if a["kind"] in ("require", "forbid", "prefer", "avoid"):
                assert f"{a['kind']}: {' '.join(a['text'].split())}" in src, a
    assert "train.seq_len / layout.cp < 4096" in src


def test_graph_refuses_an_unknown_format(run_cli, tmp_path):
    code, out, err = run_cli("explain", "--model", "llama-3-8b", "--why", "tp", "--graph", str(tmp_path / "t.pdf"))
    assert code == 2 and ".dot, .svg, .png" in err



def test_a_smaller_memory_what_if_does_not_offer_gpus_of_real_memory():
    """'If memory per GPU were 48 GiB' sizes a cluster of that GPU; the catalog's GPUs, at their
    real memory (as much as the job's own), are no answer to it."""
    from shardwise.explain.why import what_ifs
    from shardwise.kb.build import build_job
    job = build_job(model="llama-3.1-405b", gpus=128, gpu="h100-sxm", seq_len=8192)
    answers = dict(what_ifs(job, [], None))
    small = answers["memory per GPU were 47.8 GiB"]
    assert isinstance(small, str) and "it would fit on" in small and "of type" not in small


def test_a_value_no_layout_has_is_blamed_on_what_its_nearest_layouts_break(run_cli):
    """DeepSeek-V3 fine-tuned by the Trainer on 256 H200s with the default batch of 128: no EP
    degree above 1 is valid, because DP is capped at 128 and AutoEP refuses the TP or CP that
    would make up the rest. Each EP value must be blamed on AutoEP's limits, not on vp-chunks
    (interleaving), the rule most of its far candidates break first."""
    code, out, err = run_cli("explain", "--model", "deepseek-v3", "--gpus", "256", "--gpu", "h200",
                             "--seq-len", "4096", "--training", "finetune", "--why", "ep")
    assert code == 0, err
    lines = [x for x in out.splitlines() if x.strip().startswith("ep=") and "no valid layout" in x]
    assert len(lines) == 8
    assert all("autoep-limits" in x and "vp-chunks" not in x for x in lines), lines


def test_why_says_what_dropping_a_costly_house_policy_would_change(run_cli, tmp_path):
    """A forbid of ZeRO-3 that costs the job its fastest layout is a what-if a review meeting can
    act on: explain names it with file:line and the price; a policy that costs nothing (no
    TP 8, slower here anyway) is not offered as one."""
    pol = tmp_path / "house.yaml"
    pol.write_text("rules:\n  - id: house.no-zero3\n    priority: 990\n    then:\n      - forbid: \"layout.zero == 3\"\n"
                   "    because: gathers time out\n  - id: house.no-tp8\n    priority: 990\n    then:\n"
                   "      - forbid: \"layout.tp == 8\"\n    because: half-node NVLink\n")
    job = ["--model", "llama-3-70b", "--gpus", "64", "--interconnect", "ethernet", "--framework", "deepspeed",
           "--rules", str(pol)]
    code, out, _ = run_cli("explain", *job, "--why", "zero", "--format", "json")
    r = json.loads(out)
    assert code == 0 and r["value"] != 3
    assert r["would_change"][0].startswith(f"ZeRO stage would be 3 instead of {r['value']} without house.no-zero3 "
                                           f"({pol}:2: forbid 'layout.zero == 3'): ")
    code, out, _ = run_cli("explain", *job, "--why", "tp", "--format", "json")
    assert code == 0 and not any("house.no-tp8" in w for w in json.loads(out)["would_change"])


def test_the_cp_rule_says_the_condition_it_judges_beside_cp_2_at_8k(run_cli):
    """The quick start takes CP 2 at 8K tokens with cp.long-sequences honoured; its title said
    'only when they are long', which 8K is not by the playbook's 32K, so the line read as a
    contradiction. The title now says what the rule judges: 4K tokens or more per CP rank."""
    code, out, err = run_cli("explain", "--model", "llama-3-70b", "--gpus", "32", "--seq-len", "8192", "--mbs", "4",
                             "--why", "cp", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    assert r["value"] == 2
    (rule,) = [x for x in r["reasons"] if x["rule"] == "cp.long-sequences"]
    assert rule["status"] == "honoured" and 8192 // r["value"] >= 4096
    code, out, err = run_cli("recommend", "--model", "llama-3-70b", "--gpus", "32", "--seq-len", "8192", "--mbs", "4")
    cp_line = " ".join(x.strip() for x in out.split("\ncp ")[1].split("\nep ")[0].split("\n"))
    assert "only while each CP rank keeps 4K tokens or more" in cp_line


def test_why_with_nothing_changing_it_names_the_what_ifs_it_tried(run_cli):
    """A dense model's EP is 1 whatever the what-ifs change. On 8 GPUs of one node the GPU count is
    not doubled (explain/why.variants), and under the caching allocator expandable segments are
    tried: the line that none changed it named a fixed list, 'GPUs x2' included and expandable
    segments left out, which a review meeting read as 'twice the GPUs would not change it'."""
    code, out, err = run_cli("explain", "--model", "llama-3.2-1b", "--gpus", "8", "--why", "ep")
    assert code == 0, err
    line = [x for x in out.splitlines() if "none of the what-ifs tried" in x]
    assert len(line) == 1, out
    assert "GPUs" not in line[0] and "if the run used expandable segments" in line[0]
    assert "if memory per GPU were 119.5 GiB" in line[0] and "if the sequence were 8,192 tokens" in line[0]
    code, out, err = run_cli("explain", "--model", "llama-3.2-1b", "--gpus", "16", "--why", "ep", "--format", "json")
    assert code == 0, err
    assert "there were 32 GPUs" in json.loads(out)["what_ifs_tried"]


def test_a_job_on_part_of_a_node_is_asked_about_the_whole_node():
    """4 GPUs of an 8-GPU server: build_job records the job's node as its 4 GPUs, so the test
    'fewer GPUs than a node' never held and twice the GPUs was not tried, though the README says
    it is for part of a node. It is now, on the server's one node of 8 (not two nodes of 4)."""
    from shardwise.explain.why import variants
    job = build_job(model="llama-3-8b", gpus=4, gpu="h100-sxm", seq_len=4096)
    doubled = dict(variants(job)).get("there were 8 GPUs")
    assert doubled is not None and doubled.cluster.gpus == 8 and doubled.cluster.nodes == 1


def test_why_quotes_an_alternative_delta_as_its_own_line_and_the_table_do(run_cli):
    """Llama 3 70B by QLoRA on 2 H100s: ZeRO-0 is 0.05% slower than the headline's ZeRO-1. explain
    printed its delta to one decimal, '(-0.1%) -- 0.05% slower', two numbers for one difference,
    where recommend's table says -0.05%: each line now reads the delta as the table does."""
    code, out, err = run_cli("explain", "--model", "llama-3-70b", "--gpus", "2", "--training", "qlora",
                             "--why", "zero", "--format", "json")
    assert code == 0, err
    zero0 = [a for a in json.loads(out)["alternatives"] if a["value"] == 0][0]
    assert zero0["delta_pct"] == -0.05 and zero0["ruled_out_by"] == "0.05% slower"
    code, out, err = run_cli("explain", "--model", "llama-3-70b", "--gpus", "2", "--training", "qlora", "--why", "zero")
    assert code == 0, err
    assert "2,152 tokens/s (-0.05%) -- 0.05% slower" in out


def test_the_bubble_warnings_reason_states_the_interleaved_bubble_the_estimate_prices():
    """warn.large-bubble's reason (the trace's 'because', the report's) said '(p-1)/m of the time is
    idle' whatever the interleaving, while kb/perf/step.py prices (p-1) t_avg / v: at PP 8, VP 2 and
    16 micro-batches it read 7/16 where the estimate's bubble is 7/32 of the busy time."""
    from shardwise.rules import expr, playbook
    rule = next(r for r in playbook.load().rules if r.id == "warn.large-bubble")
    facts = {"layout.pp": 8, "layout.vp": 2, "layout.ga": 16}
    text = expr.render(rule.because, facts.__getitem__)
    assert "VP=2" in text and "(p-1)/(v m)" in text and "(p-1)/m of" not in text


def test_a_memory_what_if_that_fits_nowhere_names_the_gpu_at_its_own_memory(run_cli):
    """Llama 3 8B on 8 H100s given --gpu-memory 24: at 14.4 GiB (x0.6) nothing fits. The what-if's
    GPU kept the job's name, 'h100-sxm (24.0 GiB)', so the line read 'no layout fits in memory on
    8 x h100-sxm (24.0 GiB) ... it would fit on 16 x h100-sxm (24.0 GiB)' -- a GPU the job already
    fits on 8 of. It names the what-if's own memory."""
    code, out, err = run_cli("explain", "--model", "llama-3-8b", "--gpus", "8", "--gpu-memory", "24", "--why", "tp",
                             "--format", "json")
    assert code == 0, err
    line = [w for w in json.loads(out)["would_change"] if w.startswith("if memory per GPU were 14.4 GiB")]
    assert len(line) == 1 and "no layout would be allowed" in line[0]
    assert "on 8 x h100-sxm (14.4 GiB)" in line[0] and "x h100-sxm (14.4 GiB))" in line[0]
    assert "24.0 GiB" not in line[0]


def test_tp_stays_inside_the_jobs_share_of_an_nvl72_rack(run_cli):
    """On 136 GB200 the job runs as two blocks of 68 GPUs, one per rack (ClusterSpec.domain_block):
    TP 8 would put ranks 64-71 in both racks, so tp.inside-nvlink-domain rules it out and the
    trace says 68, not the rack's 72; on 144 GB200 (two full racks) TP 8 tiles each rack and is
    not ruled out by it."""
    def why(gpus):
        code, out, err = run_cli("explain", "--model", "llama-3-70b", "--gpu", "gb200", "--gpus", str(gpus),
                                 "--why", "tp", "--format", "json")
        assert code == 0, err
        return json.loads(out)
    split, whole = why(136), why(144)
    out8 = {a["value"]: a for a in split["alternatives"]}
    assert "tp.inside-nvlink-domain" in out8[8]["ruled_out_by"]
    text = next(x["text"] for x in split["reasons"] if x["rule"] == "tp.inside-nvlink-domain")
    assert "only the 68 GPUs this job has in one domain" in text
    eight = [a for a in whole["alternatives"] if a["value"] == 8]
    assert whole["value"] == 8 or (eight and "tp.inside-nvlink-domain" not in eight[0]["ruled_out_by"])


def test_why_on_part_of_a_node_does_not_double_it_into_part_nodes(run_cli):
    """`explain` on 6 of an 8-GPU server (a100-80gb-pcie) ended in 'internal error (ValueError:
    max() arg is an empty sequence)', status 1: its 'twice the GPUs' what-if built 12 GPUs in
    8-GPU nodes, a count the job flags refuse (not whole nodes). It now answers, and tries no
    what-if that is not whole nodes, while 3 of 8 still tries 6."""
    job = ("explain", "--model", "qwen3-4b", "--gpu", "a100-80gb-pcie", "--seq-len", "2048", "--why", "dp",
           "--format", "json")
    code, out, err = run_cli(*job, "--gpus", "6")
    assert code == 0, err
    assert not any("GPUs" in t for t in json.loads(out)["what_ifs_tried"])
    code, out, err = run_cli(*job, "--gpus", "3")
    assert code == 0, err
    assert "there were 6 GPUs" in json.loads(out)["what_ifs_tried"]


def test_other_values_are_listed_in_the_settings_order():
    """Llama 3.2 1B on one GPU: no valid layout interleaves, and explain listed the values no layout
    has as strings sort ('vp=10 ... vp=16, vp=2, vp=3 ...'), the recompute modes the hf Trainer
    cannot run after 'full' ('full, modules, selective'). A reviewer reads them in the setting's
    own order: numbers ascending, recompute none, selective, full, modules."""
    r = as_dict(decide(build_job(model="llama-3.2-1b", gpus=1, seq_len=2048, training="finetune", framework="hf")))
    vp = [a["value"] for a in r["settings"]["vp"]["alternatives"]]
    assert vp == sorted(vp) and vp[:3] == [2, 3, 4], vp
    assert [a["value"] for a in r["settings"]["recompute"]["alternatives"]] == ["selective", "full", "modules"]


def test_rule_texts_read_right_for_one_gpu_one_sequence_one_micro_batch(run_cli):
    """A count of one printed as a plural: on one B200, or eight H100s one to a node,
    tp.inside-nvlink-domain read 'only the 1 GPUs this job has in one domain'; a global batch of
    one sequence gave dp.batch-bounds-replicas' 'the global batch of 1 sequences ... DP 1 ranks';
    warn.large-bubble's reason said '1 micro-batches'. Counts now carry their noun
    ({path|noun}), singular for one and plural otherwise."""
    for job in (("--gpu", "b200", "--gpus", "1"), ("--gpu", "h100-sxm", "--gpus", "8", "--gpus-per-node", "1")):
        code, out, err = run_cli("explain", "--model", "llama-3-8b", *job, "--why", "tp")
        assert code == 0, err
        assert "only the 1 GPU this job has in one domain" in out and "1 GPUs" not in out
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpu", "b200", "--gpus", "8", "--global-batch", "1")
    assert code == 0, err
    assert "the global batch of 1 sequence gives each DP rank (DP 1)" in out
    assert not re.search(r"\b1 (GPUs|sequences|ranks|micro-batches)\b", out)
    # the plural still reads as one for the counts that are many
    code, out, err = run_cli("explain", "--model", "llama-3-70b", "--gpu", "gb200", "--gpus", "136", "--why", "tp")
    assert code == 0, err
    assert "only the 68 GPUs this job has in one domain" in out and "the 64 attention heads" in out
    from shardwise.rules import expr, playbook
    rule = next(r for r in playbook.load().rules if r.id == "warn.large-bubble")
    for ga, said in ((1, "and 1 micro-batch per step"), (16, "and 16 micro-batches per step")):
        assert said in expr.render(rule.because, {"layout.pp": 4, "layout.vp": 1, "layout.ga": ga}.__getitem__)


def test_graph_draws_a_house_rule_s_backslashes_as_written(tmp_path):
    r"""A rule file's texts reach the graph as DOT strings, where '\\' is one backslash, '\l' a
    line break and '\N' the node's name: a note 'logs on \\NAS\logs' was drawn as 'logs on \NAS'
    and 'ogs' on a line of its own, and a reason's '\l' became a line break in its tooltip. The
    drawn SVG shows them as the rule file wrote them."""
    from html import unescape

    from shardwise.explain.render import svg_of
    p = tmp_path / "house.yaml"
    p.write_text("rules:\n  - id: house.share\n    priority: 500\n    then:\n"
                 "      - require: \"layout.pp == 1\"\n      - note: 'logs on \\\\NAS\\logs'\n"
                 "    because: 'our \\l scheduler'\n")
    r = as_dict(decide(build_job(model="llama-3-8b", gpus=8), [str(p)]))
    svg = unescape(svg_of(trace_graph(r).source))
    assert "note: logs on \\\\NAS\\logs" in svg and "our \\l scheduler" in svg
