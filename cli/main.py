"""shardwise command line: small click commands over the fact base.

Every error a user can cause ends here as one line on stderr and exit status 2; nothing
prints a traceback (DEVELOPERS.md, Standards).

The commands load lazily: `shardwise --help` and each command import only their own module
(and what it needs), not NumPy, networkx, durable_rules or the exporters of every other
command (issue 16: `--help` took as long as a whole recommendation).
"""
from __future__ import annotations

import difflib
import gc
import importlib
import sys

import click

from shardwise.kb.errors import InputError, NoLayout
from shardwise.rules.expr import ExprError

# name -> (module, attribute, short help). The short help is the command's own first docstring
# paragraph, repeated here so that `--help` can list the commands without importing them;
# tests/test_cli_speed_mechanics.py checks that each entry still matches its command.
COMMANDS = {
    "compare": ("shardwise.cli.compare_cmd", "compare",
                "Compare the best layout, speed, time and cost across variants of a job."),
    "explain": ("shardwise.cli.explain_cmd", "explain",
                "Why the recommendation chose a setting, and what would change it."),
    "export": ("shardwise.cli.export_cmd", "export",
               "Write the layout as DeepSpeed / Megatron / Nanotron / torchtitan / FSDP2 / Accelerate config."),
    "kb": ("shardwise.cli.kb_cmd", "kb", "List the built-in catalogs."),
    "memory": ("shardwise.cli.memory_cmd", "memory",
               "Memory per GPU (and its breakdown), step time, throughput and MFU for one layout."),
    "recommend": ("shardwise.cli.recommend_cmd", "recommend",
                  "Recommend the whole layout, with the rules behind each setting and the arithmetic of the choice."),
    "report": ("shardwise.cli.report_cmd", "report",
               "The recommendation, why each setting, the decision trace, memory per stage, the ranked "
               "alternatives, the exports and the rule files' hashes, in one HTML file (nothing fetched)."),
    "rules": ("shardwise.cli.rules_cmd", "rules", "List, lint, test and copy the rule files (the playbook as data)."),
    "search": ("shardwise.cli.search_cmd", "search",
               "Rank the layouts the rules allow by predicted throughput x (1 - broken worths)."),
}


class Group(click.Group):
    """Every group of shardwise (the command itself, `rules`, `kb`): run without a subcommand it
    prints its help, as bare `shardwise` does (click would raise its help as one squashed usage
    error); a subcommand it lacks is refused naming those it takes; and the subcommand it runs
    gets refuse_repeats."""

    def parse_args(self, ctx, args):
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            click.echo(ctx.get_help())
            ctx.exit(0)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx, args):
        name = args[0]
        if not name.startswith("-") and self.get_command(ctx, name) is None and not ctx.resilient_parsing:
            names = self.list_commands(ctx)
            near = difflib.get_close_matches(name, names, n=1)
            raise click.UsageError(f"no such command '{name}'" + (f" (did you mean {near[0]}?)" if near else "")
                                   + f"; {ctx.info_name} takes {', '.join(names[:-1])} or {names[-1]}", ctx)
        name, cmd, rest = super().resolve_command(ctx, args)
        if cmd is not None and not isinstance(cmd, click.Group):
            refuse_repeats(cmd, rest, ctx.help_option_names)
        return name, cmd, rest


def refuse_repeats(cmd: click.Command, args: list, help_names=("--help",)) -> None:
    """Refuse an option that takes one value given more than once: click keeps the last one
    silently, so `--gpus 8 --gpus 16` ran 16 GPUs and `-f a.yaml -f b.yaml` dropped a.yaml.
    Read from the command's own declared options, as click's parser reads them (`--opt value`,
    `--opt=value`, `-f value`, `-fvalue`; an option's value is the next word even if it starts
    with '-'; nothing after `--`). Options declared multiple=True (--rules, --vary) repeat by
    design; a flag given twice says the same thing twice and is let be. With --help the command
    prints its help, whatever else is given."""
    takes = {o: p for p in cmd.params if isinstance(p, click.Option) and not p.is_flag and not p.count
             for o in p.opts}
    seen: dict = {}                     # option name -> [(as typed, value)]
    i = 0
    while i < len(args):
        word, i = args[i], i + 1
        if word == "--":
            break
        if word in help_names:
            return
        if word.startswith("--"):
            opt, eq, value = word.partition("=")
            if opt not in takes:
                continue
            if not eq:
                if i == len(args):
                    break               # click says the value is missing
                value, i = args[i], i + 1
        elif word.startswith("-") and len(word) > 1:
            # a cluster of short options: flags, until one that takes the rest (or the next word)
            opt = next((f"-{c}" for c in word[1:] if f"-{c}" in takes or f"-{c}" in help_names), None)
            if opt is None:
                continue
            if opt in help_names:
                return
            value = word[word.index(opt[1]) + 1:]
            if not value:
                if i == len(args):
                    break
                value, i = args[i], i + 1
        else:
            continue
        p = takes[opt]
        if not p.multiple:
            seen.setdefault(p.name, []).append((opt, value))
    for uses in seen.values():
        if len(uses) > 1:
            typed = "/".join(dict.fromkeys(o for o, _ in uses))
            times = "twice" if len(uses) == 2 else f"{len(uses)} times"
            values = ", ".join(v if v else "''" for _, v in uses)
            raise InputError(f"{typed} given {times} ({values}): give it once")


class LazyGroup(Group):
    """A group whose commands are imported by name, only when one is invoked (or asked for
    its own help); the group's help lists them from COMMANDS."""

    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[name]
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx, formatter):
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        with formatter.section("Commands"):
            # a bare Command with the same help shortens it exactly as the real one would
            formatter.write_dl([(n, click.Command(n, help=COMMANDS[n][2]).get_short_help_str(limit)) for n in names])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="shardwise")
def cli():
    """shardwise: how should this model be parallelised on this cluster?"""


def _fail(msg: str, code: int = 2) -> None:
    click.echo(f"shardwise: error: {' '.join(str(msg).split())}", err=True)
    sys.exit(code)


def main(argv=None) -> None:
    try:
        _main(argv)
    finally:
        if argv is None:
            # the process ends here (the console script): exempt what it built from the
            # interpreter's final garbage collection, a third of a quick command's exit (~30 ms
            # of `recommend`, benchmarks/speed.py). Not when called in-process (tests), where
            # frozen objects would stay for good.
            gc.freeze()


def _stray_word_hint(e: click.UsageError) -> str:
    """click's 'Got unexpected extra argument (k)' names neither the flag nor what to type: the
    word is most often a value written in two (`--seq-len 4 k`, `--token-budget 300 billion`)
    or a value without its flag (`recommend llama-3-8b`)."""
    if not e.format_message().startswith("Got unexpected extra argument"):
        return ""
    where = f"`{e.ctx.command_path} --help`" if e.ctx else "`shardwise --help`"
    # the examples only where the command takes those flags (`kb gpus extra` takes neither)
    flags = {o for p in (e.ctx.command.params if e.ctx else []) for o in p.opts}
    shown = ", ".join(x for f, x in (("--seq-len", "--seq-len 4k"), ("--token-budget", "--token-budget 300B"))
                      if f in flags)
    return f": a flag's value is one word after it{f' ({shown})' if shown else ''}; {where} lists what it takes"


def _other_name_message(e: click.NoSuchOption) -> str:
    """click's 'No such option' with its similarity guess, unless the flag is another tool's
    name for a setting (cli/other_names.py): --micro-batch was offered --global-batch."""
    from .other_names import other_name_hint
    takes = {p.name for p in (e.ctx.command.params if e.ctx else [])}
    hint = other_name_hint(e.option_name, takes, as_flag=True)
    return f"No such option '{e.option_name}'; {hint}" if hint else e.format_message()


def _main(argv) -> None:
    argv = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    try:
        rv = cli.main(args=argv, prog_name="shardwise", standalone_mode=False)
    except InputError as e:
        _fail(str(e))
    except NoLayout as e:
        _fail(str(e), 3)
    except click.BadParameter as e:
        # click names the bad value (a choice's message lists the choices); the option's help says
        # what it takes
        p = e.param
        said = p is None or not p.help or isinstance(p.type, click.Choice)
        _fail(e.format_message() + ("" if said else f" ({p.opts[0]}: {' '.join(p.help.split())})"))
    except click.NoSuchOption as e:
        _fail(_other_name_message(e))
    except click.UsageError as e:
        _fail(e.format_message() + _stray_word_hint(e))
    except click.exceptions.Abort:
        _fail("aborted", 1)
    except click.ClickException as e:
        _fail(e.format_message())
    except BrokenPipeError:
        sys.exit(0)
    except RecursionError:
        _fail("input nests too deeply")
    except ExprError as e:  # a rule's condition that parses but cannot be evaluated for this job
        _fail(f"a rule's expression cannot be evaluated: {e}")
    except Exception as e:  # a bug: still one line, and a distinct status
        _fail(f"internal error ({e.__class__.__name__}: {e}); please report it with the command line", 1)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
