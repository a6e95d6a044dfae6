"""How the command stays quick (issue 16): what `import shardwise.cli.main`, `--help` and a
table `recommend` load, and the progress bar of a long search. Speed itself is measured by
benchmarks/speed.py, never asserted here."""
import io
import json
import subprocess
import sys

import click
import pytest

from shardwise.cli import progress
from shardwise.cli.main import COMMANDS, cli

HEAVY = ("numpy", "networkx", "durable", "pydantic", "graphviz", "shardwise.export")
SMALL_JOB = ["--model", "llama-3-8b", "--gpus", "8"]


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (exits are caught)."""
    probe = (f"import sys, json\ntry:\n    {code}\nexcept SystemExit:\n    pass\n"
             "sys.stdout = sys.__stdout__\nprint('\\n' + json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def heavy(mods: set[str]) -> set[str]:
    return {m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)}


def test_importing_the_cli_loads_no_heavy_package():
    assert heavy(loaded_after("import shardwise.cli.main")) == set()


def test_help_lists_every_command_without_importing_any():
    mods = loaded_after("import io, contextlib; from shardwise.cli.main import main\n"
                        "    with contextlib.redirect_stdout(io.StringIO()): main(['--help'])")
    assert heavy(mods) == set()
    assert not {m for m in mods if m.endswith("_cmd")}


def test_the_help_table_matches_each_commands_own_help():
    for name, (module, attr, short) in COMMANDS.items():
        cmd = cli.get_command(None, name)
        assert cmd.name == name and cmd.get_short_help_str(limit=1000) == short, name


def test_help_output_shows_each_command_with_its_short_help(run_cli):
    code, out, _ = run_cli("--help")
    assert code == 0
    listed = out.split("Commands:")[1]
    for name, (_, _, short) in COMMANDS.items():
        assert f"  {name} " in listed and short.split()[0] in listed


def test_an_unknown_command_is_one_line_and_status_2(run_cli):
    code, out, err = run_cli("recomend", *SMALL_JOB)
    assert code == 2 and err.strip() == ("shardwise: error: no such command 'recomend' (did you mean recommend?); "
                                         "shardwise takes compare, explain, export, kb, memory, recommend, report, "
                                         "rules or search")


def test_table_recommend_builds_no_export_but_json_carries_them():
    run = "from shardwise.cli.main import main; main({})"
    assert "shardwise.export" not in loaded_after(run.format(["recommend", *SMALL_JOB]))
    assert "shardwise.export" in loaded_after(run.format(["recommend", *SMALL_JOB, "--format", "json"]))


def test_yaml_recommend_carries_the_exports(run_cli):
    code, out, _ = run_cli("recommend", *SMALL_JOB, "--format", "yaml")
    assert code == 0 and "\nexports:\n  deepspeed:" in out


def test_public_import_paths_still_work():
    from shardwise.export import FRAMEWORKS, Export, Target, export_all  # noqa: F401
    from shardwise.kb.memory import MemoryEstimate, estimate_memory  # noqa: F401
    from shardwise.kb.perf import StepTime, step_time  # noqa: F401
    assert callable(estimate_memory) and callable(step_time)
    with pytest.raises(ImportError):
        from shardwise.kb.memory import no_such_name  # noqa: F401


# --- the progress bar -------------------------------------------------------------------

class FakeTTY(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_render_draws_the_fraction_and_the_counts():
    assert progress.render(0, 200, width=10) == "scoring layouts [..........]   0% (0 of 200)"
    assert progress.render(50, 200, width=10) == "scoring layouts [##........]  25% (50 of 200)"
    assert progress.render(12345, 12345, width=10) == "scoring layouts [##########] 100% (12,345 of 12,345)"


def test_bar_waits_for_the_delay_throttles_and_erases_itself():
    tty, clock = FakeTTY(), Clock()
    bar = progress.Bar(tty, delay=1.0, clock=clock)
    clock.t = 0.5
    bar(10, 100)
    assert tty.getvalue() == ""                      # a quick search never shows a bar
    clock.t = 1.2
    bar(20, 100)
    assert tty.getvalue() == "\r" + progress.render(20, 100)
    clock.t = 1.25
    bar(30, 100)                                     # within REDRAW_S: not redrawn
    assert tty.getvalue().count("\r") == 1
    clock.t = 1.26
    bar(100, 100)                                    # the last group is always drawn
    assert tty.getvalue().endswith("\r" + progress.render(100, 100))
    bar.close()
    assert tty.getvalue().endswith("\r" + " " * len(progress.render(100, 100)) + "\r")


def test_bar_writes_nothing_when_the_stream_is_not_a_terminal():
    stream, clock = io.StringIO(), Clock()
    bar = progress.Bar(stream, delay=0.0, clock=clock)
    clock.t = 5.0
    bar(50, 100)
    bar.close()
    assert stream.getvalue() == ""


def test_no_progress_output_when_stderr_is_not_a_terminal(run_cli, monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)    # as if the search were slow
    code, out, err = run_cli("recommend", *SMALL_JOB)
    assert code == 0 and out and err == ""


def test_a_terminal_sees_the_bar_and_the_answer_is_unchanged(run_cli, monkeypatch):
    _, plain, _ = run_cli("recommend", *SMALL_JOB)
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    code, out, _ = run_cli("recommend", *SMALL_JOB)
    assert code == 0 and out == plain
    drawn = tty.getvalue()
    assert "scoring layouts [" in drawn and "100%" in drawn and drawn.endswith("\r")
    assert progress.hook() is None                   # the bar is gone after the command
