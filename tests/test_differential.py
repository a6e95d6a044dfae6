"""durable_rules and the plain-Python reference agenda make the same decision on random rule
files beside the playbook: the same firings (rule ids, strata, the facts each condition read,
what each added) and the same headline (docs/reference/durable-rules.md, section 5.8). Each
batch runs in a subprocess so that a crash in the C engine fails the test instead of killing
pytest."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("differential_worker.py")
RUNS = 60


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_durable_matches_reference_on_random_rule_files(seed):
    proc = subprocess.run([sys.executable, str(WORKER), str(seed), str(RUNS)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"worker crashed (status {proc.returncode}): {proc.stderr[-2000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["runs"] == RUNS
    assert out["mismatches"] == [], json.dumps(out["mismatches"][0], indent=1)[:3000]
    # the generator must exercise the engine: random rules of every stratum fire, most runs answer
    assert all(out["fired"][s] > 0 for s in ("1", "2", "3")), out
    assert out["answered"] > RUNS // 2, out
