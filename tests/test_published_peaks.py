"""Published peak memory nobody fitted to (benchmarks/calibration/published_peaks.yaml): every
figure names its source and runs through `shardwise memory` as written; the job that shardwise
models in full is predicted within 10%, and a run that used memory savers shardwise does not model
(torch.compile, torchtune's chunked loss, activation offloading, an optimizer step in backward)
is never predicted below what it measured -- the estimate stays on the side of refusing."""
import pytest

published_peaks = pytest.importorskip("published_peaks")

METRICS = {"active", "allocated", "reserved", "device"}
EFFECTS = {None, "lowers", "raises", "mixed"}


def test_every_figure_names_its_source_and_conditions():
    figs = published_peaks.figures()
    assert len(figs) >= 15
    assert len({f["id"] for f in figs}) == len(figs)
    for f in figs:
        assert f["source"] and f["conditions"], f["id"]
        assert "@" in f["source_location"], f["id"]          # a file at a commit
        assert f["metric"] in METRICS, f["id"]
        assert f["measured_gib"] > 0, f["id"]
        assert "--layout" in f["args"], f["id"]
        assert (f.get("unmodelled_effect") is None) == (not f["unmodelled"]), f["id"]
        assert f.get("unmodelled_effect") in EFFECTS, f["id"]


@pytest.fixture(scope="module")
def rows():
    return published_peaks.rows()


def test_a_fully_modelled_job_within_10_percent(rows):
    full = [r for r in rows if not r["unmodelled"]]
    assert full
    for r in full:
        assert abs(r["error"]) < 0.10, (r["id"], r["error"])


def test_runs_with_unmodelled_memory_savers_are_never_underestimated(rows):
    savers = [r for r in rows if r["effect"] == "lowers"]
    assert len(savers) >= 10
    for r in savers:
        assert r["predicted"] >= r["measured"], (r["id"], r["predicted"], r["measured"])
