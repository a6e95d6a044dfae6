"""durable_rules and the plain-Python reference agenda give the same firings on random rule
sets (docs/reference/durable-rules.md, section 5.8). Each batch runs in a subprocess so
that a crash in the C engine fails the test instead of killing pytest."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("differential_worker.py")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_durable_matches_reference_on_random_rulebooks(seed):
    proc = subprocess.run([sys.executable, str(WORKER), str(seed), "200"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"worker crashed (status {proc.returncode}): {proc.stderr[-2000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["runs"] == 200
    assert out["mismatches"] == [], json.dumps(out["mismatches"][0], indent=1)[:3000]
