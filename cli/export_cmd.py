"""`shardwise export`: the recommended (or a given) layout as a framework's own config."""
from __future__ import annotations

from pathlib import Path

import click

from shardwise.export import FRAMEWORKS
from shardwise.kb.errors import InputError, NoLayout, refuse_empty_path

from .options import job_options


@click.command("export")
@job_options
@click.option("--to", "to", type=click.Choice(sorted(FRAMEWORKS) + ["all"]), required=True,
              help="framework, or all (each into its own folder under -o)")
@click.option("-o", "--output-dir", "out", type=click.Path(file_okay=False), help="write the files here")
@click.option("--layout", "layout", help="export this layout instead of the recommendation, e.g. tp=8,pp=4")
@click.option("--rules", "rules", multiple=True, help="house-policy rule file or folder (repeatable)")
@click.option("--playbook", "playbook", help="run this edited copy of the playbook (shardwise rules init DIR)")
def export(job, to, out, layout, rules, playbook):
    """Write the layout as DeepSpeed / Megatron / Nanotron / torchtitan / FSDP2 / Accelerate config."""
    from shardwise.export import Target, export as run_export
    from shardwise.kb.resolve import resolve_layout

    refuse_empty_path(out, "-o", "a folder to write the files in, or leave -o out to print them")

    if layout is not None:
        from shardwise.decision.memory_rules import broken_memory_rules
        from shardwise.kb.memory import estimate_memory
        from shardwise.kb.perf import step_time

        lay, _ = resolve_layout(job, layout)
        mem = estimate_memory(job, lay)
        if not mem.fits:
            click.echo(f"warning: this layout is predicted out of memory: {mem.peak_gib:.1f} of "
                       f"{mem.capacity_gib:.1f} GiB per GPU (shardwise memory --layout ... has the breakdown)", err=True)
        else:
            for b in broken_memory_rules(job, lay, mem, step_time(job, lay), list(rules), playbook):
                click.echo(f"warning: the recommendation would refuse this layout, {mem.peak_gib:.1f} of "
                           f"{mem.capacity_gib:.1f} GiB per GPU: {b}", err=True)
    else:
        from shardwise.decision.run import decide

        from .progress import hook
        d = decide(job, list(rules), playbook, progress=hook())
        if d.layout is None:
            raise NoLayout(f"nothing to export: {d.nothing_allowed}")
        lay = d.layout
    if to == "all":
        return _export_all(Target(job, lay), out)
    ex = run_export(to, Target(job, lay))
    if out is not None:
        _write(Path(out), ex.files, out)
    else:
        for name, text in ex.files.items():
            if len(ex.files) > 1:
                click.echo(f"==> {name} <==")
            click.echo(text, nl=False)
    for c in ex.caveats:
        click.echo(f"note: {to} cannot express: {c}", err=not out)


def _export_all(target, out):
    """Every framework's files in DIR/<framework>/; a framework that refuses the job says why."""
    from shardwise.export import export_all

    if out is None:
        raise InputError("--to all writes a folder per framework: give -o DIR")
    for name, ex in export_all(target).items():
        if ex.get("refused"):
            click.echo(f"note: {name}: not written: {ex['refused']}")
            continue
        _write(Path(out) / name, ex["files"], out)
        for c in ex["caveats"]:
            click.echo(f"note: {name} cannot express: {c}")


def _write(folder: Path, files: dict, out: str) -> None:
    """Write an export's files into ``folder`` and say so; a folder that cannot be written is
    the -o argument's error."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"-o {out}: {folder} exists and is not a folder; give a folder to write the files in")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text)
    except OSError as e:
        raise InputError(f"-o {out}: cannot write ({e.strerror or e})")
    for name in files:
        click.echo(f"wrote {folder / name}")
