import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
SCALE = float(os.environ.get("SHARDWISE_FUZZ_SCALE", "1"))


def fuzz(n: int) -> int:
    """A generated test's example count, scaled by SHARDWISE_FUZZ_SCALE."""
    return max(1, int(n * SCALE))


def refused(run_cli, *args) -> str:
    """A command's refusal (stderr), asserted to be what bad input gets: exit 2, nothing on
    stdout, one line on stderr, no traceback."""
    code, out, err = run_cli(*args)
    assert code == 2 and out == "", (code, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def run_cli(capsys):
    """Run the shardwise command in-process; returns (exit status, stdout, stderr)."""
    from shardwise.cli.main import main

    def run(*args):
        try:
            main(list(args))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err
    return run
