"""`shardwise rules list|lint|test|facts|graph`: the rule files, checked and tested."""
from __future__ import annotations

from pathlib import Path

import click

from shardwise.kb.errors import InputError
from shardwise.rules.facts import SCHEMA, SETTINGS
from shardwise.rules.loader import load_rulebook
from shardwise.rules.recommend import rule_files

from shardwise.explain.trace_graph import checked_graph_path

from .options import JOB_KEYS
from .output import FORMATS, emit, table


@click.group()
def rules():
    """List, lint and test rule files."""


@rules.command("list")
@click.option("--rules", "extra", multiple=True, help="also list these rule files or folders")
def list_(extra):
    """Every rule: id, file:line, priority, title."""
    paths, shown = rule_files(list(extra))
    book = load_rulebook(paths, shown)
    click.echo(table([[r.id, r.where, r.priority, r.title] for r in book], ["rule", "where", "priority", "title"]))


@rules.command()
def facts():
    """The facts rule conditions can read, and the settings rules can set."""
    click.echo(table([[p, t] for p, t in SCHEMA.items()], ["fact", "type"]))
    click.echo("\nsettings: " + ", ".join(f"{k} ({v})" for k, v in SETTINGS.items()))


@rules.command()
@click.argument("paths", nargs=-1, required=True)
def lint(paths):
    """Check rule files: schema errors and unknown facts (file:line), rules that can never fire,
    two rules setting the same setting at the same priority. Exit 1 when it finds problems."""
    from shardwise.rules import lint as lint_mod

    base, shown = rule_files([])
    book = load_rulebook(base + [Path(p) for p in paths], shown + list(paths))   # raises on schema errors
    problems = lint_mod.lint(book, set(shown))
    for p in problems:
        click.echo(p)
    click.echo(f"{len(book)} rules, {len(problems)} problem{'s' if len(problems) != 1 else ''}")
    if problems:
        raise SystemExit(1)


@rules.command("test")
@click.argument("path")
def test_(path):
    """Run policy test cases: a YAML file with `rules:` (files, relative to it) and `cases:`,
    each a `job:` and the `expect:`ed settings. Exit 1 when a case fails."""
    from shardwise.kb.build import build_job
    from shardwise.kb.errors import read_input_file
    from shardwise.kb.user_yaml import load_user_yaml
    from shardwise.rules.recommend import recommend

    p = Path(path)
    spec = load_user_yaml(read_input_file(path, "rules test"), path)
    if not isinstance(spec, dict) or not isinstance(spec.get("cases"), list):
        raise InputError(f"{path}: a policy test file has 'cases:' (a list) and optionally 'rules:'")
    extra = [str((p.parent / r).resolve()) for r in spec.get("rules") or []]
    failed = 0
    for i, case in enumerate(spec["cases"]):
        if not isinstance(case, dict) or not isinstance(case.get("job"), dict) or not isinstance(case.get("expect"), dict):
            raise InputError(f"{path}: case {i + 1} needs 'job:' and 'expect:' mappings")
        unknown = set(case["job"]) - set(JOB_KEYS)
        if unknown:
            raise InputError(f"{path}: case {i + 1}: unknown job setting(s) {sorted(unknown)}")
        job = build_job(**{k: v for k, v in case["job"].items()})
        result = recommend(job, extra, lazy_exports=True)     # exports unused
        got = dict(result["layout"], zero=result["layout"]["zero_stage"], fits=result["memory"]["fits"])
        bad = {k: (v, got.get(k, "?")) for k, v in case["expect"].items() if got.get(k, "?") != v}
        name = case.get("name", f"case {i + 1}")
        if bad:
            failed += 1
            click.echo(f"FAIL {name}: " + ", ".join(f"{k} expected {e!r} got {g!r}" for k, (e, g) in bad.items()))
        else:
            click.echo(f"ok   {name}")
    click.echo(f"{len(spec['cases']) - failed} passed, {failed} failed")
    if failed:
        raise SystemExit(1)


@rules.command()
@click.option("--rules", "extra", multiple=True, help="also these rule files or folders")
@click.option("--setting", type=click.Choice(list(SETTINGS)), help="which rules can influence this setting")
@click.option("--graph", "graph", help="draw it: out.dot, out.svg or out.png (with --setting: what reaches it)",
              callback=checked_graph_path)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
def graph(extra, setting, graph, fmt):
    """Which rules read facts other rules write: cycles that could loop, rules no run can
    reach, and (--setting) every rule that can influence a setting."""
    from shardwise.explain import rule_graph     # networkx: only this command needs it
    from shardwise.explain.trace_graph import write_graph

    paths, shown = rule_files(list(extra))
    book = load_rulebook(paths, shown)
    result = rule_graph.analyse(book, setting)
    emit(result, fmt, lambda markdown: _render_graph(result, markdown))
    if graph:
        for line in write_graph(rule_graph.draw(rule_graph.build(book), setting), graph):
            click.echo(line, err=fmt in ("json", "yaml"))


def _render_graph(r: dict, markdown: bool) -> str:
    lines = [f"{r['rules']} rules reading {r['facts_read']} facts, {r['edges']} edges", ""]
    for c in r["cycles"]:
        lines.append(f"rules that feed each other ({len(c['rules'])}): {', '.join(c['rules'])}")
        for k in c["contested"]:
            lines.append(f"  could loop: {k['setting']} is set by {', '.join(k['rules'])} "
                         f"(e.g. {k['example']}); the engine's loop guard stops a revisited layout")
        if not c["contested"]:
            lines.append("  no setting is set by two of them: each only escalates its own")
    if not r["cycles"]:
        lines.append("no cycles")
    lines.append("")
    if r["unreachable"]:
        lines += [f"unreachable: {rid}: {why}" for rid, why in r["unreachable"].items()]
    else:
        lines.append("every rule is reachable")
    for s, rows in r.get("influences", {}).items():
        lines += ["", f"rules that can influence {s}:"]
        lines.append(table([[d["rule"], d["where"], "sets it" if d["direct"] else "indirect", d["path"]] for d in rows],
                           ["rule", "where", "how", "shortest path"], markdown))
    return "\n".join(lines)
