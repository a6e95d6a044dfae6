"""`shardwise report -o report.html`: one self-contained page for a review meeting."""
from __future__ import annotations

from pathlib import Path

import click

from shardwise.kb.errors import InputError, refuse_empty_path

from .options import job_options


@click.command()
@job_options
@click.option("-o", "--output", "output", required=True, help="the HTML file to write, e.g. report.html")
@click.option("--rules", "rules", multiple=True, help="house-policy rule file or folder (repeatable)")
@click.option("--playbook", "playbook", help="run this edited copy of the playbook (shardwise rules init DIR)")
def report(job, output, rules, playbook):
    """The recommendation, why each setting, the decision trace, memory per stage, the ranked
    alternatives, the exports and the rule files' hashes, in one HTML file (nothing fetched)."""
    refuse_empty_path(output, "-o", "the HTML file to write, e.g. report.html")
    if not output.lower().endswith((".html", ".htm")):
        raise InputError(f"-o {output}: the report is HTML; allowed endings .html, .htm")
    from shardwise.explain.report import build
    from shardwise.explain.report_html import render

    data = build(job, list(rules), playbook)
    try:
        Path(output).write_text(render(data), encoding="utf-8")
    except OSError as e:
        raise InputError(f"-o {output}: cannot write ({e.strerror or e})")
    click.echo(f"wrote {output}")
