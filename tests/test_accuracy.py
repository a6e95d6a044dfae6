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


def test_every_transformers_family_layer_within_1_percent():
    """One decoder layer of each family's own modeling code (CPU, saved-tensor hooks), with bf16
    weights and with fp32 weights under autocast, read through the estimate's config.json
    reader: Gemma's fp32-scaled norms, Gemma 2's post-norms, OLMo 2's post-norms and whole-width
    q/k norms (OLMoE's too, under Mixtral's experts), GLM-4.5's fp32-upcasting router (dots.llm1's
    too, under Qwen3's per-head q/k norms), OLMo 3's (OLMo 2's layer) and EXAONE 4.0's post-norms
    (Llama's RMSNorm reading a bf16 sublayer output, with fp32 weights too), Seed-OSS's biases, ERNIE 4.5's
    autocast-off fp32 router and per-layer fp32 interleaved RoPE, Ministral 3's position-scaled query, Granite
    MoE's top-k-then-softmax router and GraniteMoeShared's fused shared MLP (one fp32 cast),
    Llama 4's every-token-through-every-expert MoE with its L2 q/k norms and bmm experts autocast casts
    and soft-capped eager scores, Qwen2-MoE's gated shared expert, Phi-3's fused qkv, the MoE
    routers, the shared expert's casts -- within 1%; the rows whose CPU path is not a GPU's, and
    gpt-oss's fp32 experts, are flagged, not hidden."""
    rows = calibration.family_saved_rows()
    assert len(rows) == 52                 # bf16 weights, and fp32 weights under autocast
    assert sorted(r["id"].split()[0] for r in rows if r["artefact"]) == ["deepseek_v3", "deepseek_v3", "glm4_moe",
                                                                          "glm4_moe", "phi3", "phi3"]
    for r in rows:
        if not r["artefact"]:
            assert abs(r["error"]) < 0.01, r["id"]


def test_lora_changes_what_a_layer_keeps_as_measured():
    """PEFT's adapters keep their own inputs and the frozen base keeps less: the difference from
    full fine-tuning, measured on four Llama shapes, Qwen3 (frozen q/k norms), Gemma (fp32-scaled
    norms) and a DeepSeek-V3 dense layer (MLA's inner norms; an MLP PEFT leaves without adapters)
    with fp32 (Trainer) and bf16 (DeepSpeed) adapters, within a tenth of a byte per token per
    hidden unit; the one CPU artefact (the math SDPA's unsaved attention output) within its 2 h."""
    rows = [r for r in calibration.lora_saved_rows() if not r["id"].endswith("-dropout")]
    assert len(rows) == 14
    assert max(abs(r["error"]) for r in rows if not r["artefact"]) < 0.1
    assert all(abs(abs(r["error"]) - 2.0) < 0.1 for r in rows if r["artefact"])
    assert any(r["measured"] > 0 for r in rows) and any(r["measured"] < 0 for r in rows)
    deepseek = [r for r in rows if r["id"].startswith("deepseek_v3")]
    assert len(deepseek) == 2 and all(r["measured"] < -10 * 512 for r in deepseek)


def test_lora_dropout_keeps_a_copy_per_adapter_as_measured():
    """PEFT's lora_dropout (0.1, through the fused dropout kernel a GPU runs): each adapter keeps
    its own dropped-out input and mask, and the inputs only the lora_As kept go. Measured on the
    same seven layers with fp32 and bf16 adapters, within a tenth of a byte per token per hidden
    unit (DeepSeek-V3's math-SDPA rows within their 2 h); a dense Llama layer keeps several h a
    token more than without dropout, the same with either adapter dtype."""
    rows = {r["id"]: r for r in calibration.lora_saved_rows()}
    dropout = [r for i, r in rows.items() if i.endswith("-dropout")]
    assert len(dropout) == 14
    assert max(abs(r["error"]) for r in dropout if not r["artefact"]) < 0.1
    assert sum(1 for r in dropout if r["artefact"]) == 2
    assert all(abs(abs(r["error"]) - 2.0) < 0.1 for r in dropout if r["artefact"])
    llama = "llama h=512 F=1792 heads=8/2 r=16 "
    for mode in ("lora", "lora-bf16"):
        more = rows[llama + mode + "-dropout"]["predicted"] - rows[llama + mode]["predicted"]
        assert more > 8 * 512, mode
    assert rows[llama + "lora-dropout"]["predicted"] == rows[llama + "lora-bf16-dropout"]["predicted"]


def test_model_dropout_keeps_what_a_measured_layer_keeps():
    """config.json's dropout in training, measured on CPU layers through the fused kernel a GPU
    runs: eager attention's mask a score (Llama, Gemma 2 and Seed-OSS +1 byte, gpt-oss's bf16
    softmax +3, +1 with fp32 weights) and the residual dropout's two masks of h (Phi-3, Seed-OSS),
    with bf16 and fp32 weights: to the byte."""
    rows = calibration.dropout_saved_rows()
    assert len(rows) == 12
    for r in rows:
        assert r["predicted"] == r["measured"], r["id"]


def test_moe_layer_keeps_per_token_as_measured():
    """One transformers 5 MoE layer of each family on CPU: full fine-tuning's bytes a token at 256
    and 1,024 tokens within 2% (gpt-oss at both: its eager attention keeps 2 bytes a score, so a
    figure right at one length only would miss the other by half), and what PEFT's LoRA changes
    per token -- frozen norms and experts, adapters, fp32 copies, lora_dropout's copies -- within a
    tenth of a byte per hidden unit. DeepSeek-V3's full rows and fp32 LoRA row carry the CPU's math SDPA and are
    flagged, not judged."""
    rows = calibration.moe_layer_token_rows()
    assert len(rows) == 40                 # with dropout rows for the four families PEFT lets take it
    assert sorted(r["id"] for r in rows if r["artefact"]) == [
        "deepseek_v3 fp32 adapters, per token", "deepseek_v3 full, 1024 tokens (sdpa)", "deepseek_v3 full, 256 tokens (sdpa)"]
    for r in rows:
        if r["artefact"]:
            continue
        assert abs(r["error"]) < (0.02 if r["what"] == "full" else 0.1), r["id"]
    oss = [r for r in rows if r["id"].startswith("gpt_oss full")]
    assert len(oss) == 2 and oss[1]["measured"] > oss[0]["measured"] * 1.3


def test_logits_within_2_percent():
    """measure.py's rows, predicted as that script measured them (it holds the model output
    through backward; the peak is a difference of two models' peaks): 12 bytes per logit at the
    loss's backward peak of a training step, 4 kept, read from the ops, not fitted."""
    rows = calibration.logits_rows()
    assert len(rows) == 8
    assert max(abs(r["error"]) for r in rows) < 0.02


def test_torchtitan_whole_step_peaks():
    """Published peaks (reserved memory) of torchtitan runs. Median within 7.5%: it was 4.8% while
    the loss was charged 13.35 bytes per logit, a figure measured with the model output held
    through backward, which torchtitan's train step deletes first (del pred); at the 12 its ops
    hold, the full-AC long-context rows read 10-12% under their reserved peaks, as the 20-30% of
    the dynamic memory that the caching allocator holds above allocated under checkpointing in
    h200_torch_loops.jsonl (L04, L05, L07, L10, L12) predicts: the estimate's fragmentation is
    the 8% that judges fits near capacity (tests below), not the reserved excess far from it."""
    rows = calibration.torchtitan_peak_rows()
    assert len(rows) == 16
    assert statistics.median(abs(r["error"]) for r in rows) < 0.075
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
    for held_out, med, top in ((False, 0.01, 0.03), (True, 0.01, 0.03)):
        errs = [abs(r["error"]) for r in rows if r["error"] is not None and r["held_out"] == held_out]
        assert statistics.median(errs) < med and max(errs) < top, (held_out, errs)


def test_trainer_steps_fits_or_oom():
    """Every run but t02 is judged right. t02 ran on the H200: 68.9 GiB allocated at its peak
    (estimate 68.4). On the H100 it asked for the loss's 15.7 GiB with 69.3 GiB in use by the
    process and 9.9 free: the caching allocator held blocks it could not give back, more than
    the estimate's fragmentation allows (reported, not hidden)."""
    wrong = [r["id"].split()[0] for r in calibration.trainer_rows() if r["fits_measured"] != r["fits_predicted"]]
    assert wrong == ["t02"]


def test_h200_trainer_steps_memory_and_fits():
    """The same 24 Trainer steps on an H200 (h200_hf_trainer_steps.jsonl): 21 ran, among them
    the seven the H100 could not hold, and three ran out of memory; every one is judged right."""
    rows = calibration.trainer_rows("h200")
    assert len(rows) == 24
    errs = [abs(r["error"]) for r in rows if r["error"] is not None]
    # max 1.4% since LoRA's saved tensors are counted (t17, LoRA without checkpointing, read 5% low)
    assert len(errs) == 21 and statistics.median(errs) < 0.01 and max(errs) < 0.02
    assert [r["id"] for r in rows if r["fits_measured"] != r["fits_predicted"]] == []


def test_torch_loops_memory_like_for_like():
    """h200_torch_loops.jsonl: 68 plain PyTorch steps that ran (fused, foreach, single-tensor and
    8-bit AdamW, SGD, Adafactor; set_to_none True and False; SDPA and eager; full, LoRA, QLoRA;
    0.5B-8B; 512-32K tokens), with the fit and held-out configurations apart: the issue's
    targets are a median within 5% and none beyond 10%."""
    rows = calibration.loop_rows()
    assert len(rows) == 91
    for held_out in (False, True):
        errs = [abs(r["error"]) for r in rows if r["error"] is not None and r["held_out"] == held_out]
        assert len(errs) >= 20 and statistics.median(errs) < 0.01 and max(errs) < 0.03, held_out


def test_torch_loops_fits_or_oom():
    """91 runs, 23 of them out of memory, bisected to the boundary. Judged wrong: two runs that fit
    at 95% of capacity (L06, L13), which the 8% fragmentation allowance calls out of memory, and
    Adafactor with checkpointing (L12) running out at an estimated 84-91% of capacity, asking
    for its 28-31 GiB of logits with 20% of the dynamic memory in partly used blocks."""
    rows = calibration.loop_rows()
    wrong = sorted(r["id"].split()[0] + " " + r["id"].split()[-1] for r in rows if r["fits_measured"] != r["fits_predicted"])
    assert wrong == ["L06 s=23552", "L12 s=29696", "L12 s=30720", "L12 s=32768", "L13 s=9216"]


def test_fresh_boundary_with_expandable_segments():
    """h200_fresh_boundary.jsonl, each run in a fresh process: with expandable segments the
    allocator gives back every free page before it fails, and the estimate (1% of the dynamic
    memory above what is allocated, near capacity) judges all nine runs right -- the eight that
    fit, at 88-99% of capacity, each within 2% like for like, and L13 at 9,728 that ran out."""
    rows = [r for r in calibration.fresh_rows() if r["allocator"] == "expandable"]
    assert len(rows) == 9
    assert [r["id"] for r in rows if r["fits_measured"] != r["fits_predicted"]] == []
    errs = [abs(r["error"]) for r in rows if r["error"] is not None]
    assert len(errs) == 8 and max(errs) < 0.02


def test_fresh_boundary_caching_allocator_misses_are_warned():
    """With PyTorch's default caching allocator, fresh: the five runs that ran out though the
    estimate says they fit (L12 at 29,696-32,768 tokens with 85-93% allocated, t02 at an H100's
    capacity, L11) each asked for a logits-sized block whose last copy's segment smaller tensors
    had split; the split peak (kb/memory/estimate._split_candidate) is above capacity for every one of
    them, so the answer warns. L06 at 23,552 fit at 95% of capacity, which the 8% allowance calls
    out of memory."""
    rows = [r for r in calibration.fresh_rows() if r["allocator"] == "caching"]
    assert len(rows) == 14
    missed = [r for r in rows if not r["fits_measured"] and r["fits_predicted"]]
    assert sorted(r["id"] for r in missed) == ["L11 s=8192 caching", "L12 s=29696 caching", "L12 s=30720 caching",
                                               "L12 s=32768 caching", "t02 s=8192 caching"]
    assert all(r["split_flagged"] for r in missed)
    assert [r["id"] for r in rows if r["fits_measured"] and not r["fits_predicted"]] == ["L06 s=23552 caching"]


def test_the_split_peak_flags_the_runs_that_ran_out_and_few_that_did_not():
    """The split peak on the sweeps and the Trainer steps (H100 and H200): every run that ran out
    though the estimate says it fits (L12 at 29,696-32,768 tokens, t02 on the H100) has one past
    capacity, and of the 103 runs that fit only 7 do, all at 87% of capacity or more -- a warning
    and a 5% preference that stay near the edge, not a second opinion on every layout."""
    from shardwise.kb.memory.estimate import estimate_memory
    cases = [calibration.loop_case(r) + (r,) for r in calibration._jsonl("h200_torch_loops.jsonl") if "seq" in r]
    for gpu, card, cap in (("h100", "h100-sxm", calibration.TRAINER_CAPACITY_GIB),
                           ("h200", "h200", calibration.H200_CAPACITY_GIB)):
        cases += [calibration.trainer_case(r, card, cap) + (r,) for r in calibration._jsonl(f"{gpu}_hf_trainer_steps.jsonl")]
    fit_flagged, missed = [], []
    for job, lay, r in cases:
        est = estimate_memory(job, lay)
        flagged = est.split_peak_gib > est.capacity_gib
        if "error" not in r and flagged:
            fit_flagged.append(est.peak_gib / est.capacity_gib)
        if "error" in r and est.fits:
            missed.append(flagged)
    assert len(missed) == 4 and all(missed)
    assert sum("error" not in r for *_, r in cases) == 103
    assert len(fit_flagged) <= 7 and min(fit_flagged) > 0.85


def test_published_megatron_layouts_fit():
    """NVIDIA's layouts ran: every one whose recipe the row records fits (129 of 233 read above
    capacity before issue 17; the last 12 were Llama 3.1 405B and Qwen3-235B, whose 126 and 94
    layers Megatron splits with the embedding and the loss as a layer each, on GB200 also read
    against a capacity 12 GiB short of what nvidia-smi reports). Nine interleaved MoE runs on
    Blackwell are judged apart: their recipes leave the EP overlap off, which the export turns
    on at the cost of one more warm-up forward. The ten Llama 3 70B runs on GB200 and GB300 whose
    recipes offload activations to host memory (20 or 40 of 80 layers) are judged with it: they
    read 123-184% of memory without it, 90% and 97% with it, under the expandable segments
    NVIDIA's performance scripts launch with."""
    rows = [r for r in calibration.published_megatron_memory_rows() if not r["unmodelled"]]
    assert len(rows) >= 195
    assert sum(1 for r in rows if "offload=" in r["layout"]) == 10
    assert [r["id"] for r in rows if not r["fits"]] == []


def test_trainer_steps_time():
    """step_s of the same rows (one GPU, no communication): median within 9% over all, 14% on the
    held-out rows, none beyond 15% (12.9%, 13.6% and 18.8% before the loss's memory traffic was
    counted; 21.5%, 35% and 84% before issue 17). The issue's target is a median within 15%."""
    rows = [r for r in calibration.trainer_rows() if "step_error" in r]
    assert len(rows) == 14
    assert statistics.median(abs(r["step_error"]) for r in rows) < 0.09
    assert statistics.median(abs(r["step_error"]) for r in rows if r["held_out"]) < 0.14
    assert max(abs(r["step_error"]) for r in rows) < 0.15


def test_torch_loops_step_time():
    """step_s of the 68 plain loops that ran, on the H200: median within 12% on the fit and on the
    held-out configurations, nine in ten within 25%. The rest is what the note lists: eager
    attention 15-36% slow, foreach AdamW's step on an 8B bf16 model (up to 42% at 512 tokens),
    models under 2B parameters 12-29% slow at short sequences."""
    rows = [r for r in calibration.loop_rows() if "step_error" in r]
    assert len(rows) == 68
    for held_out in (False, True):
        errs = sorted(abs(r["step_error"]) for r in rows if r["held_out"] == held_out)
        assert statistics.median(errs) < 0.12, held_out
    errs = sorted(abs(r["step_error"]) for r in rows)
    assert errs[int(0.9 * len(errs))] < 0.25


def test_peft_lora_on_fused_moe_experts_as_measured():
    """PEFT 0.21 on transformers 5's fused experts, one CPU layer per MoE family: Mixtral,
    Qwen3-MoE, OLMoE and DeepSeek-V3 keep the merged expert weights (plus, with fp32 adapters, the bf16
    casts of B and A) beyond full fine-tuning's tensors, within 3%; Qwen2-MoE, gpt-oss and the
    Granite MoEs merge nothing (their experts are not adapted; GraniteMoeShared's fused shared
    MLP is, two adapters); the backward adds the down projection's
    merged-weight gradient (within 12%); the adapters counted are the ones PEFT made, exactly; and
    bitsandbytes' 4-bit loading quantises what the estimate quantises -- attention and shared
    experts, not the fused routed experts -- within 0.5%."""
    rows = calibration.peft_expert_rows()
    assert len(rows) == 46
    kept = {r["id"].split()[0]: r for r in rows if r["what"] == "kept"}
    assert sorted(k for k, r in kept.items() if r["predicted"]) == ["deepseek_v3", "mixtral", "olmoe", "qwen3_moe"]
    for r in rows:
        if r["what"] == "kept":
            assert abs(r["error"]) < 0.03, r["id"]
        elif r["what"] == "backward":
            assert abs(r["error"]) < 0.12, r["id"]
        elif r["what"] == "4-bit":
            assert abs(r["error"]) < 0.005, r["id"]
        else:
            assert r["predicted"] == r["measured"], r["id"]
