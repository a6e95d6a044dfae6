"""shardwise command line: small click commands over the fact base.

Every error a user can cause ends here as one line on stderr and exit status 2; nothing
prints a traceback (DEVELOPERS.md, Standards).
"""
from __future__ import annotations

import sys

import click

from shardwise.kb.errors import InputError

from .compare_cmd import compare
from .explain_cmd import explain
from .export_cmd import export
from .kb_cmd import kb
from .memory_cmd import memory
from .recommend_cmd import recommend
from .report_cmd import report
from .rules_cmd import rules
from .search_cmd import search


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="shardwise")
def cli():
    """shardwise: how should this model be parallelised on this cluster?"""


cli.add_command(recommend)
cli.add_command(memory)
cli.add_command(rules)
cli.add_command(search)
cli.add_command(compare)
cli.add_command(export)
cli.add_command(explain)
cli.add_command(report)
cli.add_command(kb)


def _fail(msg: str, code: int = 2) -> None:
    click.echo(f"shardwise: error: {' '.join(str(msg).split())}", err=True)
    sys.exit(code)


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    try:
        rv = cli.main(args=argv, prog_name="shardwise", standalone_mode=False)
    except InputError as e:
        _fail(str(e))
    except click.UsageError as e:
        _fail(e.format_message())
    except click.exceptions.Abort:
        _fail("aborted", 1)
    except click.ClickException as e:
        _fail(e.format_message())
    except BrokenPipeError:
        sys.exit(0)
    except RecursionError:
        _fail("input nests too deeply")
    except Exception as e:  # a bug: still one line, and a distinct status
        _fail(f"internal error ({e.__class__.__name__}: {e}); please report it with the command line", 1)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
