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
    # every row, the 405B ones read with torchtitan's pipeline micro-batches (calibration.
    # torchtitan_batching: 4 sequences each, not 1; the worst was 24% before)
    assert max(abs(r["error"]) for r in rows) < 0.15


# --- whole steps and published layouts (issue 17) ----------------------------------------------

def test_trainer_steps_memory_like_for_like():
    """h100_hf_trainer_steps.jsonl: the estimate less CUDA context and fragmentation against
    torch.cuda.max_memory_allocated, on the rows a fit may use and on the held-out rows: the
    issue's targets, median within 5% and none beyond 10%, on both."""
    rows = calibration.trainer_rows()
    assert len(rows) == 24
    for held_out, med, top in ((False, 0.025, 0.06), (True, 0.02, 0.10)):
        errs = [abs(r["error"]) for r in rows if r["error"] is not None and r["held_out"] == held_out]
        assert statistics.median(errs) < med and max(errs) < top, (held_out, errs)


def test_trainer_steps_fits_or_oom():
    """Every run but t02 is judged right. t02 (1B, 32k tokens x 128k vocab = 4.2e9 logits, past
    2^31 elements) needed at least 69.3 GiB in use + 15.7 GiB asked = 85 GiB; the estimate, whose
    logits term was measured up to 1.05e9 logits, is 71.7 GiB (reported, not hidden)."""
    wrong = [r["id"].split()[0] for r in calibration.trainer_rows() if r["fits_measured"] != r["fits_predicted"]]
    assert wrong == ["t02"]


def test_published_megatron_layouts_fit():
    """NVIDIA's layouts ran: every one whose recipe the row records fits (129 of 233 read above
    capacity before issue 17; the last 12 were Llama 3.1 405B and Qwen3-235B, whose 126 and 94
    layers Megatron splits with the embedding and the loss as a layer each, on GB200 also read
    against a capacity 12 GiB short of what nvidia-smi reports). Nine interleaved MoE runs on
    Blackwell are judged apart: their recipes leave the EP overlap off, which the export turns
    on at the cost of one more warm-up forward."""
    rows = [r for r in calibration.published_megatron_memory_rows() if not r["unmodelled"]]
    assert len(rows) >= 185
    assert [r["id"] for r in rows if not r["fits"]] == []


def test_trainer_steps_time():
    """step_s of the same rows (one GPU, no communication): median within 13% over all, 14% on the
    held-out rows, none beyond 19% (21.5%, 35% and 84% before issue 17)."""
    rows = [r for r in calibration.trainer_rows() if "step_error" in r]
    assert len(rows) == 14
    assert statistics.median(abs(r["step_error"]) for r in rows) < 0.13
    assert statistics.median(abs(r["step_error"]) for r in rows if r["held_out"]) < 0.14
    assert max(abs(r["step_error"]) for r in rows) < 0.19
