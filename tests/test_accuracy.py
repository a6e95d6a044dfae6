"""Estimator accuracy on benchmarks/calibration stays inside the targets of issue 2."""
import statistics

import pytest

calibration = pytest.importorskip("calibration")

if not calibration.CALIBRATION.exists():        # shipped in the repository: missing is a failure
    raise RuntimeError(f"calibration data not found at {calibration.CALIBRATION}")


def test_per_layer_activations_within_5_percent_of_every_measured_row():
    rows = calibration.activation_rows()
    assert len(rows) == 49
    flagged = [r for r in rows if r["artefact"]]
    assert len(flagged) == 1            # the one documented measurement artefact
    for r in rows:
        if not r["artefact"]:
            assert abs(r["error"]) < 0.05, r["id"]


def test_logits_within_5_percent():
    rows = calibration.logits_rows()
    assert len(rows) == 8
    assert max(abs(r["error"]) for r in rows) < 0.05


def test_torchtitan_whole_step_peaks():
    rows = calibration.torchtitan_peak_rows()
    assert len(rows) == 16
    assert statistics.median(abs(r["error"]) for r in rows) < 0.06
    eight_b = [r for r in rows if "llama3-8b" in r["id"]]
    assert max(abs(r["error"]) for r in eight_b) < 0.15
