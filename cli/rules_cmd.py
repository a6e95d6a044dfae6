"""`shardwise rules list|facts|lint|test|init|graph`: the rule files, listed, checked and tested."""
from __future__ import annotations

from pathlib import Path

import click

from shardwise.kb.build import build_job
from shardwise.kb.choices import RECOMPUTE
from shardwise.kb.errors import InputError, read_input_file, refuse_empty_path
from shardwise.kb.fact_schema import DESCRIPTIONS, GROUP_OF, SCHEMA
from shardwise.kb.facts import layout_dict
from shardwise.kb.user_yaml import JobYamlLoader, load_user_yaml
from shardwise.rules import lint as lint_mod
from shardwise.rules import playbook
from shardwise.rules.loader import SETTINGS, expand

from shardwise.explain import rule_graph
from shardwise.explain.render import checked_graph_path, write_graph

from .main import Group
from .options import job_settings, named_in_file
from .output import emit, format_option, table

_RULES = click.option("--rules", "extra", multiple=True, help="also these house-policy rule files or folders")
_PLAYBOOK = click.option("--playbook", "playbook_dir", help="an edited copy of the playbook (shardwise rules init DIR)")


@click.group(cls=Group)
def rules():
    """List, lint, test and copy the rule files (the playbook as data).

    House policies are rule files of your own: add them with --rules FILE_OR_FOLDER (repeatable)
    to recommend, search, explain, export, report, compare and rules list/graph/test; a policy
    replaces a playbook rule with 'override: true' under its id, or turns it off with
    'disable: [id]'. `rules facts` lists what a rule can read; README.md, "Rules: the playbook
    as data", gives the format."""


@rules.command("list")
@_RULES
@_PLAYBOOK
@format_option
def list_(extra, playbook_dir, fmt):
    """Every rule: id, stratum, kind (hard, soft, info), file:line, title."""
    book = playbook.load(list(extra), playbook_dir)
    rows = [{"id": r.id, "stratum": r.stratum, "kind": r.kind, "where": r.where, "priority": r.priority,
             "title": r.title} for r in book.rules]
    emit({"rules": rows}, fmt, lambda md: table([[d["id"], d["stratum"], d["kind"], d["where"], d["title"]]
                                                 for d in rows], ["rule", "stratum", "kind", "where", "title"], md))


@rules.command()
@format_option
def facts(fmt):
    """Every fact rules can read: its type, its group (where a rule may read it), what it means;
    and the settings a rule may pin."""
    rows = [{"fact": p, "type": t, "group": GROUP_OF[p], "meaning": DESCRIPTIONS.get(p, "")} for p, t in SCHEMA.items()]
    data = {"facts": rows, "pin_settings": dict(SETTINGS)}
    emit(data, fmt, lambda md: table([[d["fact"], d["type"], d["group"], d["meaning"]] for d in rows],
                                     ["fact", "type", "group", "meaning"], md)
         + "\n\nsettings a rule may pin: " + ", ".join(f"{k} ({v})" for k, v in SETTINGS.items()))


@rules.command()
@click.argument("paths", nargs=-1, required=True)
@_PLAYBOOK
def lint(paths, playbook_dir):
    """Check exactly these rule files or folders: load errors (file:line), conditions that can
    never hold, constraints and preferences that cannot change the answer, two pins of one setting
    with different values, two hard rules no layout meets together, worths adding up past 100%. The playbook (or --playbook) is context
    for disable/override and for the worth sum. Exit 1 when it finds problems."""
    context = playbook.rule_files([], playbook_dir)
    given, problems = lint_mod.lint_files(list(paths), context)
    for p in problems:
        click.echo(p)
    click.echo(f"{len(given)} rule{'s' if len(given) != 1 else ''}, "
               f"{len(problems)} problem{'s' if len(problems) != 1 else ''}")
    if problems:
        raise SystemExit(1)


# what a case may expect: the headline's settings (kb/facts.layout_dict), zero for zero_stage, and fits
EXPECT_KEYS = {"tp", "pp", "vp", "dp", "cp", "ep", "etp", "zero", "zero_stage", "shard_group", "sp", "mbs",
               "grad_accum", "global_batch", "recompute", "offload", "fits"}


def _case(path: str, i: int, case) -> str:
    """How a refusal names a case: the file, and the case's name where it has one, else its number."""
    name = case.get("name") if isinstance(case, dict) else None
    return f"{path}: case {name!r}" if isinstance(name, str) and name.strip() else f"{path}: case {i + 1}"


def _expect_value(where: str, key: str, v) -> None:
    """An expected value of the kind the headline has, or one line naming what is allowed: a
    case that expects tp 'one' or recompute 'ful' would fail for ever, not test the policy."""
    if key in ("sp", "fits"):
        ok, allowed = isinstance(v, bool), "true or false"
    elif key == "recompute":
        ok, allowed = v in RECOMPUTE, ", ".join(RECOMPUTE)
    elif key in ("zero", "zero_stage"):
        ok, allowed = isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 3, "a stage 0-3"
    else:
        least = 0 if key in ("shard_group", "offload") else 1
        ok, allowed = isinstance(v, int) and not isinstance(v, bool) and v >= least, f"a whole number from {least}"
    if not ok:
        raise InputError(f"{where}: expect {key}: {v!r} is not a value the headline can have; allowed: {allowed}")


def _case_job(path: str, i: int, case) -> object:
    """The case's job, read as a job file's settings are (options.job_settings: a relative
    hf_config beside the test file, as its rules: and playbook: are); a refusal names the file and
    the case, and the setting as the case writes it, not the flag the user never typed."""
    where = _case(path, i, case)
    if not isinstance(case, dict) or not isinstance(case.get("job"), dict) or not isinstance(case.get("expect"), dict):
        raise InputError(f"{where} needs 'job:' and 'expect:' mappings")
    extra = set(case) - {"name", "job", "expect"}
    if extra:
        raise InputError(f"{where}: unknown key(s) {sorted(map(str, extra))}; allowed: name, job, expect")
    settings = job_settings(case["job"], path, where)
    bad = set(case["expect"]) - EXPECT_KEYS
    if bad:
        raise InputError(f"{where}: unknown expect key(s) {sorted(map(str, bad))}; "
                         f"allowed: {', '.join(sorted(EXPECT_KEYS))}")
    if not case["expect"]:
        raise InputError(f"{where}: 'expect:' names nothing to check; allowed: {', '.join(sorted(EXPECT_KEYS))}")
    for k, v in case["expect"].items():
        _expect_value(where, k, v)
    try:
        return build_job(**settings)
    except InputError as e:
        named = named_in_file(e, where, set(settings))
        raise (named if named is not e else InputError(f"{where}: {e}")) from None


def _case_names(path: str, cases: list) -> None:
    """A file with no cases, or two cases of one name, would pass (or report) without testing
    what it says: refused."""
    if not cases:
        raise InputError(f"{path}: 'cases:' is empty; a policy test file needs at least one case")
    seen = set()
    for i, case in enumerate(cases):
        name = case.get("name") if isinstance(case, dict) else None
        if name is None:
            continue
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"{path}: case {i + 1}: 'name:' must be text")
        if name in seen:
            raise InputError(f"{path}: case {i + 1}: the name {name!r} is given to an earlier case too; names must differ")
        seen.add(name)


def _got(d) -> dict:
    """What a case can expect: the headline's settings (zero as well as zero_stage) and fits."""
    if d.layout is None:
        return {"fits": False}
    return dict(layout_dict(d.layout), zero=d.layout.zero, fits=bool(d.memory.fits))


@rules.command("test")
@click.argument("path")
@_RULES
@_PLAYBOOK
def test_(path, extra, playbook_dir):
    """Run policy test cases: a YAML file with `cases:` (each a `job:`, whose hf_config is
    relative to it, and the `expect:`ed settings or `fits`), and optionally `rules:` (files,
    relative to it) and `playbook:` (a folder, relative to it). Exit 1 when a case fails."""
    from shardwise.decision.run import decide
    refuse_empty_path(path, "rules test", "a policy test file (YAML with 'cases:')")
    p = Path(path)
    # read as a job file is: YAML 1.1 would take a case's 'gpus: 010' as 8 (kb/user_yaml.JobYamlLoader)
    spec = load_user_yaml(read_input_file(path, "rules test"), path, JobYamlLoader)
    if not isinstance(spec, dict) or not isinstance(spec.get("cases"), list):
        raise InputError(f"{path}: a policy test file has 'cases:' (a list) and optionally 'rules:' and 'playbook:'")
    unknown = set(spec) - {"cases", "rules", "playbook"}
    if unknown:
        raise InputError(f"{path}: unknown key(s) {sorted(map(str, unknown))}; allowed: cases, rules, playbook")
    files = spec.get("rules") or []
    if not isinstance(files, list) or not all(isinstance(r, str) for r in files):
        raise InputError(f"{path}: 'rules:' must be a list of rule files (relative to the test file)")
    for r in files:     # joined to the test file's folder, '' would name that whole folder
        refuse_empty_path(r, f"{path}: 'rules:'", "a rule file or folder (relative to the test file)")
    book_dir = spec.get("playbook")
    if book_dir is not None and not isinstance(book_dir, str):
        raise InputError(f"{path}: 'playbook:' must be a folder (relative to the test file)")
    refuse_empty_path(book_dir, f"{path}: 'playbook:'", "a folder of rule files (relative to the test file)")
    # the file's own rules: and playbook: are read beside it and named as it writes them; every
    # rule file is loaded (and every case's job built) before any case runs
    for r in files:
        expand(str(p.parent / r), r, flag=f"{path}: rules")
    if book_dir is not None and not playbook_dir:
        playbook.rule_files([], str(p.parent / book_dir), flag=f"{path}: playbook", shown=book_dir)
    extra_rules = [str(p.parent / r) for r in files] + list(extra)
    if playbook_dir is None and book_dir is not None:
        playbook_dir = str(p.parent / book_dir)
    book_dir = playbook_dir
    _case_names(path, spec["cases"])
    jobs = [_case_job(path, i, case) for i, case in enumerate(spec["cases"])]   # every case checked before any runs
    playbook.load(extra_rules, book_dir)
    failed = 0
    for i, (case, job) in enumerate(zip(spec["cases"], jobs)):
        name = case.get("name", f"case {i + 1}")
        try:
            d = decide(job, extra_rules, book_dir)
        except InputError as e:
            # the rules refuse this case's job alone (preferences worth 100% on every layout of it)
            raise InputError(f"{path}: case {name!r}: {e}") from None
        got = _got(d)
        bad = {k: (v, got.get(k, "none")) for k, v in case["expect"].items() if got.get(k, "none") != v}
        if bad:
            failed += 1
            # named as a refusal names a case; a setting of no layout is the NO LAYOUT and its why
            # (it read "tp expected 1 got 'none'")
            what = ", ".join(f"{k} expected {e!r} got {g!r}" for k, (e, g) in bad.items()
                             if d.layout is not None or k == "fits")
            if d.layout is None and set(bad) - {"fits"}:
                what = (what + ", " if what else "") + f"got NO LAYOUT ({d.nothing_allowed})"
            click.echo(f"FAIL {path}: case {name!r}: {what}")
        else:
            click.echo(f"ok   {name}")
    click.echo(f"{len(spec['cases']) - failed} passed, {failed} failed")
    if failed:
        raise SystemExit(1)


@rules.command()
@click.argument("directory")
def init(directory):
    """Copy the shipped playbook into DIRECTORY (new or empty) to edit and run with --playbook."""
    for f in playbook.init(directory):
        click.echo(f"wrote {f}")
    click.echo(f"run it: shardwise recommend ... --playbook {directory}")


@rules.command()
@_RULES
@_PLAYBOOK
@click.option("--setting", type=click.Choice(list(rule_graph.SETTINGS), case_sensitive=False),
              help="the rules that bear on this setting")
@click.option("--graph", "-o", "graph", help="draw it: out.dot, out.svg or out.png (with --setting: what bears on it)",
              callback=checked_graph_path)
@format_option
def graph(extra, playbook_dir, setting, graph, fmt):
    """Which facts each rule reads and which settings it bears on: rules that can never fire,
    rules that bear on no setting, and (--setting) every rule that bears on one setting."""
    book = playbook.load(list(extra), playbook_dir)
    result = rule_graph.analyse(book.rules, setting)
    # drawn first, so that a graph that cannot be written fails before anything is printed
    written = write_graph(rule_graph.draw(rule_graph.build(book.rules), setting).source, graph) if graph else None
    emit(result, fmt, lambda markdown: _render_graph(result, markdown))
    if written:
        click.echo(f"wrote {written}", err=fmt in ("json", "yaml"))


def _render_graph(r: dict, markdown: bool) -> str:
    s = r["strata"]
    lines = [f"{r['rules']} rules (stratum 1: {s['1']}, stratum 2: {s['2']}, stratum 3: {s['3']}) reading "
             f"{r['facts_read']} facts, {r['edges']} edges; no rule moves a setting, so no cycles", ""]
    if r["never_fires"]:
        lines += [f"can never fire: {rid}: {why}" for rid, why in r["never_fires"].items()]
    else:
        lines.append("every rule can fire")
    if r["no_setting"]:
        lines += [f"bears on no setting: {rid} ({where})" for rid, where in r["no_setting"].items()]
    else:
        lines.append("every constraint and preference bears on a setting")
    if r["info"]:
        lines.append(f"warnings and notes only ({len(r['info'])}): {', '.join(r['info'])}")
    for name, rows in r.get("influences", {}).items():
        lines += ["", f"rules that bear on {name}:"]
        lines.append(table([[d["rule"], d["where"], d["stratum"], d["kind"],
                             "directly" if d["direct"] else "through the estimates", d["how"]] for d in rows],
                           ["rule", "where", "stratum", "kind", "how", "what"], markdown))
    return "\n".join(lines)
