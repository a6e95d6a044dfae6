"""Memory estimator behaviour a user relies on: the seed scenarios, and the direction each knob
moves the peak."""
import pytest

from shardwise.kb.build import build_job
from shardwise.kb.layout import Layout
from shardwise.kb.memory import estimate_memory
from shardwise.kb.resolve import resolve_layout


def job70(**kw):
    args = dict(model="llama-3-70b", gpus=32, gpu="h100-sxm", seq_len=8192)
    args.update(kw)
    return build_job(**args)


def mem(job, text):
    lay, _ = resolve_layout(job, text)
    return estimate_memory(job, lay)


def test_seed_000_mbs4_without_recompute_does_not_fit():
    """DESIGN.md: 1F1B keeps 4 micro-batches in flight on the first stage, ~90 GB of activations."""
    e = mem(job70(), "tp=8,pp=4,dp=1,zero=1,mbs=4,recompute=none")
    assert not e.fits
    assert e.stage == 0
    assert 80 <= e.breakdown_gib["activations"] * 2**30 / 1e9 <= 100   # ~90 GB
    # 70B x 16 B/param (bf16 weights and grad buffer as NVIDIA's recipes run Megatron, fp32 master
    # and Adam) / 32 GPUs with the optimizer sharded over dp=1 -> ~34 GiB of states on stage 0
    states = sum(e.breakdown_gib[k] for k in ("weights", "gradients", "master_weights", "optimizer"))
    assert 32 <= states <= 36


def test_seed_000_fits_with_full_recompute_or_mbs1():
    assert mem(job70(), "tp=8,pp=4,dp=1,zero=1,mbs=4,recompute=full").fits
    assert mem(job70(), "tp=8,pp=4,dp=1,zero=1,mbs=1,recompute=none").fits


def test_in_flight_micro_batches_follow_the_schedule():
    lay = Layout(pp=4, dp=8, grad_accum=16)
    assert [lay.in_flight(i) for i in range(4)] == [4, 3, 2, 1]
    assert Layout(pp=4, dp=8, grad_accum=2).in_flight(0) == 2          # m < p: all of them
    inter = Layout(pp=4, vp=2, dp=8, grad_accum=16)
    assert inter.in_flight(0) == pytest.approx(4 * (1 + 3 / 8))          # Korthikanti 1 + (p-1)/(p v)


def test_a_layer_count_pp_does_not_divide_splits_with_the_embedding_and_loss_as_layers():
    """Llama 3.1 405B's 126 layers on 16 stages: Megatron-Core splits 126 + 2 (the embedding and
    the loss count as a layer each), so the first and last stages build 7 layers and the others 8.
    Interleaved (vp 4: 2 slots a chunk), rank 0's first chunk holds one layer, and Megatron's
    warm-up runs 31 of rank 0's 79 chunk forwards on it (groups of 16 per chunk: 16 + 15 of
    79 = 2 x 15 + 3 x 16 + 1), so it holds 79 x 2 - 31 = 127 layer activations, not 79/4 x 8."""
    from shardwise.kb.catalog import model
    from shardwise.kb.stages import layers_in_flight, layers_on_stage
    m = model("llama-3.1-405b")
    assert [sum(layers_on_stage(m, 16, s)) for s in (0, 1, 14, 15)] == [7, 8, 8, 7]
    assert sum(sum(layers_on_stage(m, 16, s)) for s in range(16)) == 126
    assert [sum(layers_on_stage(m, 8, s)) for s in (0, 1, 7)] == [15, 16, 15]     # 128 / 8
    lay = Layout(tp=4, pp=16, vp=4, dp=4, grad_accum=192)
    assert layers_in_flight(m, lay, 0) == 127
    assert layers_in_flight(m, lay, 1) == pytest.approx(lay.in_flight(1) * 8)     # no shortened chunk there
    # the last stage: 49 chunk forwards of 2 layers at its peak, once the short chunk's backward
    # has run and full chunk-0 forwards are held (Megatron's schedule, max over the step: 98)
    assert layers_in_flight(m, lay, 15) == 98
    assert layers_in_flight(m, Layout(tp=4, pp=16, vp=8, dp=4, grad_accum=192), 0) == 143 - 31
    # a count pp divides keeps the plain split
    assert [sum(layers_on_stage(model("llama-3-70b"), 8, s)) for s in (0, 7)] == [10, 10]


def test_zero_stages_shard_more_and_more():
    job = build_job(model="llama-3-8b", gpus=8, seq_len=4096, framework="deepspeed")
    peaks = [mem(job, f"dp=8,zero={z},mbs=1,recompute=full").breakdown_gib for z in (0, 1, 2, 3)]
    assert peaks[1]["optimizer"] == pytest.approx(peaks[0]["optimizer"] / 8)
    assert peaks[2]["gradients"] < peaks[1]["gradients"]
    assert peaks[3]["weights"] == pytest.approx(peaks[2]["weights"] / 8)


def test_tensor_parallel_divides_weights_and_flash_removes_the_s2_term():
    job = build_job(model="llama-3-8b", gpus=8, seq_len=4096)
    w1 = mem(job, "tp=1,dp=8,mbs=1").breakdown_gib["weights"]
    w8 = mem(job, "tp=8,dp=1,mbs=1").breakdown_gib["weights"]
    assert w8 < w1 / 6
    eager = build_job(model="llama-3-8b", gpus=8, seq_len=4096, attention="eager")
    assert mem(eager, "dp=8,mbs=1").breakdown_gib["activations"] > 4 * mem(job, "dp=8,mbs=1").breakdown_gib["activations"]


def test_recompute_modes_order_activation_memory():
    job = build_job(model="llama-3-8b", gpus=8, seq_len=8192, attention="eager")
    a = {rc: mem(job, f"dp=8,mbs=1,recompute={rc}").breakdown_gib["activations"] for rc in ("none", "selective", "full")}
    assert a["full"] < a["selective"] < a["none"]


def test_large_vocab_logits_make_the_last_stage_the_peak_at_long_sequences():
    # DeepSpeed's pipeline engine on transformers code (the Trainer has no pipeline: hf-no-pipeline)
    job = build_job(model="llama-3-8b", gpus=16, seq_len=32768, framework="deepspeed")
    e = mem(job, "pp=2,dp=8,mbs=1,recompute=full")
    assert e.stage == 1 and e.breakdown_gib["logits"] > 20


def test_training_types_change_what_has_to_fit():
    full = mem(build_job(model="llama-3-70b", gpus=8, gpu="a100-80gb", framework="hf", training="finetune"),
               "dp=8,zero=3,mbs=1,recompute=full")
    lora = mem(build_job(model="llama-3-70b", gpus=8, gpu="a100-80gb", framework="hf", training="lora"),
               "dp=8,zero=3,mbs=1,recompute=full")
    qlora = mem(build_job(model="llama-3-70b", gpus=8, gpu="a100-80gb", framework="hf", training="qlora"),
                "dp=8,zero=3,mbs=1,recompute=full")
    rlhf = mem(build_job(model="llama-3-70b", gpus=8, gpu="a100-80gb", framework="hf", training="rlhf"),
               "dp=8,zero=3,mbs=1,recompute=full")
    assert not full.fits and lora.fits
    assert qlora.peak_gib < lora.peak_gib < full.peak_gib < rlhf.peak_gib


def test_rlhf_under_fsdp_and_pipelining_keeps_the_accumulated_gradients():
    """FSDP under PP holds the stage's unsharded gradients across micro-batches; PPO's policy
    and value models add their states on top, never take that buffer away."""
    layout = "pp=2,dp=8,zero=3,mbs=1,recompute=full"
    finetune = mem(build_job(model="llama-3-8b", gpus=16, framework="fsdp", training="finetune"), layout)
    rlhf = mem(build_job(model="llama-3-8b", gpus=16, framework="fsdp", training="rlhf"), layout)
    assert rlhf.breakdown_gib["gradients"] > finetune.breakdown_gib["gradients"]
    assert rlhf.peak_gib > finetune.peak_gib


def test_trl_ppo_holds_the_critics_activations_beside_the_policys():
    """TRL's PPOTrainer (--framework hf) runs critic and policy in one forward and one backward
    (PolicyAndValueWrapper), and checkpoints the policy alone: the critic's whole activations are
    live beside the policy's, whatever --recompute. The estimate held the policy's only, 24.5 GiB
    short for llama-3-8b at 4K (it called 70.6 GiB a fit on an 80 GB H100). Where actor and critic
    train in turn (OpenRLHF, verl: --framework deepspeed), the activations stay the policy's."""
    def acts(framework, training, recompute):
        job = build_job(model="llama-3-8b", gpus=8, framework=framework, training=training)
        return mem(job, f"dp=8,zero=3,mbs=1,recompute={recompute}").phases()["forward"]["live_gib"]["activations"]
    kept, checkpointed = acts("hf", "finetune", "none"), acts("hf", "finetune", "full")
    assert acts("hf", "rlhf", "none") == pytest.approx(2 * kept, rel=0.01)
    assert acts("hf", "rlhf", "full") == pytest.approx(checkpointed + kept, rel=0.01)
    assert acts("deepspeed", "rlhf", "none") == pytest.approx(acts("deepspeed", "finetune", "none"), rel=1e-6)


def test_grpo_and_dpo_hold_the_policy_and_its_reference_not_ppos_four_models():
    """GRPO (the reward a function) and DPO train the policy beside a frozen reference; --training
    rlhf sized PPO's four models for every algorithm, twice the trained states and a frozen copy
    too many. --rl-algorithm grpo|dpo holds one set of policy states and one frozen bf16 copy, and
    under hf no critic's activations."""
    layout = "dp=8,zero=3,mbs=2,recompute=none"
    def bd(**kw):
        return mem(build_job(model="llama-3-8b", gpus=8, framework="hf", **kw), layout).breakdown_gib
    ppo, tune = bd(training="rlhf"), bd(training="finetune")
    for alg in ("grpo", "dpo"):
        got = bd(training="rlhf", rl_algorithm=alg)
        for key in ("weights", "master_weights", "optimizer"):
            assert got[key] == pytest.approx(ppo[key] / 2, rel=1e-6) == pytest.approx(tune[key], rel=1e-6), (alg, key)
        assert got["frozen_weights"] == pytest.approx(ppo["frozen_weights"] / 2, rel=1e-6)
        assert got["activations"] == pytest.approx(tune["activations"], rel=1e-6)


def test_more_memory_per_gpu_never_hurts():
    small = mem(job70(gpu="h100-sxm"), "tp=8,pp=4,zero=1,mbs=2,recompute=selective")
    big = mem(job70(gpu="h200"), "tp=8,pp=4,zero=1,mbs=2,recompute=selective")
    assert big.peak_gib == pytest.approx(small.peak_gib) and big.capacity_gib > small.capacity_gib


def test_moe_experts_are_divided_by_ep():
    job = build_job(model="mixtral-8x7b", gpus=8, seq_len=4096)
    w1 = mem(job, "dp=8,ep=1,zero=1,mbs=1").breakdown_gib["weights"]
    w8 = mem(job, "dp=8,ep=8,zero=1,mbs=1").breakdown_gib["weights"]
    assert w8 < w1 / 4


def test_full_iteration_cuda_graphs_keep_the_routed_activations_in_a_padded_stash():
    """Under full-iteration CUDA graphs Megatron keeps the routed experts' activations in a paged
    stash preallocated at 1.2x the balanced load: a MoE layout holds more activation memory than
    without graphs, but less than 1.2x all of it (attention and norms are not stashed); a dense
    layout holds the same."""
    from shardwise.kb.memory.activations import PAGED_STASH_FACTOR

    def acts(model, layout, graphs):
        return mem(build_job(model=model, gpus=8, gpu="gb200", precision="fp8", seq_len=4096, cuda_graphs=graphs),
                   layout).breakdown_gib["activations"]
    plain, graphed = (acts("qwen3-30b-a3b", "dp=8,ep=8,zero=1,mbs=2", g) for g in ("none", "full-iteration"))
    assert plain < graphed < PAGED_STASH_FACTOR * plain
    assert acts("llama-3-8b", "dp=8,zero=1,mbs=1", "none") == acts("llama-3-8b", "dp=8,zero=1,mbs=1", "full-iteration")


def test_peak_is_a_sum_of_its_breakdown():
    e = mem(job70(), "tp=8,pp=4,zero=1,mbs=1,recompute=selective")
    assert sum(e.breakdown_gib.values()) == pytest.approx(e.peak_gib)


# --- phases, tensor lifetimes and optimizers (issue 17) ---------------------------------------

def _trainer_job(**kw):
    args = dict(model="llama-3-8b", gpus=1, seq_len=4096, framework="hf", training="finetune", global_batch=1)
    args.update(kw)
    return build_job(**args)


@pytest.mark.parametrize("job,layout", [
    (dict(), "mbs=1,recompute=full"),
    # FSDP under pipelining accumulates unsharded grads on top of the kept ones
    (dict(model="llama-3-8b", gpus=8, framework="fsdp", global_batch=16, zero_grad="zeros"),
     "tp=1,pp=2,dp=4,zero=3,mbs=1,recompute=full")])
def test_every_phase_is_reported_and_each_sums_to_its_peak(job, layout):
    e = mem(_trainer_job(**job), layout)
    d = e.as_dict()
    assert d["phase"] == d["peak_phase"] == e.phase
    assert set(d["phases"]) == {"forward", "backward-start", "backward-end", "optimizer-step"}
    for ph in d["phases"].values():
        assert all(v >= 0 for v in ph["live_gib"].values())
        assert sum(ph["live_gib"].values()) == pytest.approx(ph["peak_gib"], abs=0.02)
    assert max(ph["peak_gib"] for ph in d["phases"].values()) == pytest.approx(e.peak_gib, abs=0.01)


@pytest.mark.parametrize("kw,layout", [
    (dict(framework="fsdp", global_batch=1), "dp=1,zero=0,mbs=1,recompute=full"),
    (dict(framework="fsdp", gpus=8, global_batch=32), "dp=8,zero=0,mbs=1,recompute=full"),       # ga 4
    (dict(framework="hf", global_batch=4), "dp=1,zero=0,mbs=1,recompute=none")])
def test_keeping_the_gradients_never_reads_lower_than_freeing_them(kw, layout):
    """--zero-grad zeros holds every gradient that set-to-none holds, and more: its peak is never
    lower (gradients reuse their own blocks; the fragmentation allowance is for the rest)."""
    freed = mem(_trainer_job(**kw), layout).peak_gib
    kept = mem(_trainer_job(zero_grad="zeros", **kw), layout).peak_gib
    assert kept >= freed - 1e-9


def test_the_peft_on_transformers_gathers_the_logits_under_tensor_parallelism():
    """transformers' TP plan gathers the LM head's output onto every rank ("colwise_rep"):
    the loss's bytes do not shrink with TP there; Megatron's and torchtitan's sharded losses do
    (torchtitan's whole-sequence loss here: a chunked one keeps the hidden states' gradient
    beside it, replicated over TP)."""
    from shardwise.kb.memory.logits import logits_bytes
    from shardwise.kb.perf import compute
    for framework, shrinks in (("hf", False), ("fsdp", True), ("megatron", True)):
        job = _trainer_job(framework=framework, gpus=8, global_batch=8,
                           **({"loss_chunks": 1} if framework == "fsdp" else {}))
        one, four = (logits_bytes(job.model, job.training, Layout(tp=tp, mbs=1))[1] for tp in (1, 4))
        assert (four == pytest.approx(one / 4)) if shrinks else four == one
        if framework != "megatron":
            t1, t4 = (compute.loss_time(job.model, job.training, Layout(tp=tp, mbs=1), job.cluster.gpu) for tp in (1, 4))
            assert (t4 == pytest.approx(t1 / 4)) if shrinks else t4 == t1


def test_eager_attention_recomputed_for_backward_counts_its_scores():
    """Selective recomputation keeps no attention scores; an eager layer's backward recomputes
    them (6 bytes each) and adds its own 10: both are in the working set."""
    from shardwise.kb.memory import activations as act
    job = _trainer_job(framework="fsdp", attention="eager", seq_len=8192)
    sel = act.backward_transient(job.model, job.training, Layout(mbs=1, recompute="selective"), False)
    none = act.backward_transient(job.model, job.training, Layout(mbs=1, recompute="none"), False)
    scores = 8192 * 8192 * job.model.heads
    # the 6 bytes a score eager keeps (h100_hf_activations.jsonl's eager rows), not the constant
    # itself: a test that read it back could not fail
    assert sel - none == pytest.approx(6.0 * scores)


def test_set_to_none_frameworks_hold_no_gradients_at_the_end_of_forward():
    """zero_grad(set_to_none=True): the Trainer and FSDP have no grads until backward makes them;
    Megatron's persistent grad buffer is there in every phase."""
    hf = mem(_trainer_job(), "mbs=1,recompute=full").phases()
    assert "gradients" not in hf["forward"]["live_gib"]
    assert hf["backward-end"]["live_gib"]["gradients"] > 25       # 8B x 4 B fp32 grads
    meg = mem(build_job(model="llama-3-8b", gpus=8, seq_len=4096), "dp=8,zero=1,mbs=1").phases()
    assert meg["forward"]["live_gib"]["gradients"] == pytest.approx(meg["backward-end"]["live_gib"]["gradients"])


def test_accumulating_micro_batches_keep_the_grads_through_forward():
    hf = mem(_trainer_job(global_batch=4), "mbs=1,ga=4,recompute=full").phases()
    assert hf["forward"]["live_gib"]["gradients"] > 25


def test_optimizer_implementations_set_the_step_peak():
    step = {o: mem(_trainer_job(optimizer=o), "mbs=1,recompute=full").phases()["optimizer-step"]
            for o in ("adamw", "adamw-fused", "adamw-foreach", "adamw-single", "adamw-8bit", "adafactor", "sgd")}
    temp = {o: s["live_gib"].get("optimizer_temporaries", 0.0) for o, s in step.items()}
    opt = {o: s["live_gib"].get("optimizer", 0.0) for o, s in step.items()}
    assert step["adamw"] == step["adamw-fused"]                    # the Trainer's default is fused
    assert temp["adamw-fused"] == 0 and temp["adamw-8bit"] == 0 and temp["sgd"] == 0
    assert temp["adamw-foreach"] == pytest.approx(opt["adamw-fused"] / 2, rel=0.01)   # one fp32 copy
    assert 0 < temp["adamw-single"] < temp["adamw-foreach"]
    assert opt["adamw-8bit"] < opt["adamw-fused"] / 3 and opt["sgd"] == pytest.approx(opt["adamw-fused"] / 2)
    assert opt["adafactor"] == 0
    assert step["adamw-foreach"]["peak_gib"] > step["adamw-fused"]["peak_gib"] + 25


def test_cli_optimizer_choices_are_the_schema_ones():
    from typing import get_args

    from shardwise.kb.schema import Optimizer
    assert {"adamw", "adamw-fused", "adamw-foreach", "adamw-single", "adamw-8bit", "adafactor", "sgd"} == set(get_args(Optimizer))


def test_megatron_cross_entropy_keeps_the_softmax_and_writes_its_gradient_in_place():
    from shardwise.kb.memory.logits import logits_bytes
    job = build_job(model="llama-3-8b", gpus=8, seq_len=4096)
    kept, peak = logits_bytes(job.model, job.training, Layout(mbs=1))
    n = 4096 * job.model.vocab
    assert kept == 4.0 * n and peak == 6.0 * n
    hf = _trainer_job()
    assert logits_bytes(hf.model, hf.training, Layout(mbs=1)) == (4.0 * n, 12.0 * n)


def test_moe_routed_activations_follow_the_sequence_parallel_shard():
    # under torchtitan (fsdp): Megatron-Core trains an MoE model at TP > 1 only with SP on
    # (validity rule megatron-moe-tp-needs-sp), so there is no sp=off to compare with there
    job = build_job(model="mixtral-8x7b", gpus=8, seq_len=4096, framework="fsdp")
    on = mem(job, "tp=2,dp=4,ep=4,sp=on,zero=2,mbs=1").breakdown_gib["activations"]
    off = mem(job, "tp=2,dp=4,ep=4,sp=off,zero=2,mbs=1").breakdown_gib["activations"]
    assert on < 0.6 * off


def test_a_frozen_moe_base_under_qlora_keeps_its_fused_experts_in_bf16():
    """LoRA on gpt-oss-120b over 8 GPUs, ZeRO-3 (PEFT's path runs EP 1: expert parallelism
    replaces the MoE layer PEFT wraps, and is refused). QLoRA quantises the attention but leaves
    transformers 5's fused experts bf16 (bitsandbytes quantises nn.Linear only): most of the base."""
    from shardwise.kb.errors import InputError

    def frozen(text, training="lora"):
        job = build_job(model="gpt-oss-120b", gpus=8, seq_len=4096, training=training, framework="fsdp")
        lay, _ = resolve_layout(job, text)
        return estimate_memory(job, lay).breakdown_gib["frozen_weights"]
    zero3 = frozen("ep=1,zero=3,mbs=1")
    assert 0.9 * zero3 < frozen("ep=1,zero=3,mbs=1", "qlora") < zero3
    assert frozen("ep=1,zero=2,mbs=1") == pytest.approx(8 * zero3, rel=0.02)
    with pytest.raises(InputError, match="adapters-expert-parallel"):
        frozen("ep=8,zero=3,mbs=1")


def test_fsdp_gathers_a_frozen_base_in_its_stored_dtype_and_reduces_no_gradients_for_it():
    """ZeRO-3 / FSDP buffers: full fine-tuning holds two gathered bf16 layers, one layer's bf16
    gradient and its fp32 reduce-scatter output (10 bytes a layer parameter); a LoRA base only
    the two gathered bf16 layers (4), a QLoRA base the two layers in NF4 (about 1)."""
    def buffers(training):
        job = build_job(model="llama-3.1-70b", gpus=8, seq_len=4096, training=training, framework="fsdp")
        lay, _ = resolve_layout(job, "dp=8,zero=3,mbs=1,recompute=full")
        return estimate_memory(job, lay).breakdown_gib["comm_buffers"]
    full, lora, qlora = buffers("finetune"), buffers("lora"), buffers("qlora")
    layer = (full - lora) / 6.0                 # GiB per byte a layer parameter takes
    assert lora - qlora == pytest.approx(2 * (2.0 - 4.127 / 8) * layer, rel=1e-3)
    assert 0 < qlora < lora < 0.5 * full


def test_hsdp_shards_experts_only_inside_its_shard_group():
    """Under HSDP the experts' states are sharded over shard x tp / (ep x etp) ranks, not over
    the whole expert-data-parallel group (torchtitan's efsdp leaves dp_replicate out): with EP 8
    filling an 8-rank shard group each rank holds its experts unsharded. A shard group that does
    not hold whole expert-parallel groups is refused."""
    from shardwise.kb.errors import InputError
    job = build_job(model="qwen3-235b-a22b", gpus=256, framework="fsdp")
    whole = estimate_memory(job, resolve_layout(job, "dp=256,ep=8,zero=3,mbs=1,recompute=full")[0])
    hsdp = estimate_memory(job, resolve_layout(job, "dp=256,ep=8,zero=3,shard=8,mbs=1,recompute=full")[0])
    assert hsdp.peak_gib > 5 * whole.peak_gib and not hsdp.fits and whole.fits
    assert resolve_layout(job, "dp=256,ep=8,zero=3,shard=32,mbs=1,recompute=full")[0].expert_shard_group == 4
    with pytest.raises(InputError, match="multiple of ep x etp"):
        resolve_layout(job, "dp=256,ep=16,zero=3,shard=8,mbs=1,recompute=full")


def test_zero_over_one_dp_rank_still_shards_an_moe_models_experts():
    """With TP 8 over EP 2 the experts' data-parallel group has 4 ranks although DP is 1: ZeRO-1
    shards their states there (Megatron's distributed optimizer), so it is not read as ZeRO-0;
    at EP 8 nothing is left to shard and it is."""
    job = build_job(model="mixtral-8x7b", gpus=8)
    kept, notes = resolve_layout(job, "tp=8,ep=2,zero=1,mbs=1,recompute=full")
    assert kept.zero == 1 and not any("read as zero=0" in n for n in notes)
    assert estimate_memory(job, kept).peak_gib < estimate_memory(job, kept.with_(zero=0)).peak_gib
    gone, notes = resolve_layout(job, "tp=8,ep=8,zero=1,mbs=1,recompute=full")
    assert gone.zero == 0 and any("read as zero=0" in n for n in notes)


def test_the_search_and_the_exports_keep_zero_for_an_moe_models_experts_at_one_dp_rank():
    from shardwise.export import Target, export
    from shardwise.export.megatron.run import script_args
    from shardwise.kb.resolve import global_batch
    from shardwise.search.space import build_space
    job = build_job(model="mixtral-8x7b", gpus=8)
    a = build_space(job, global_batch(job)[0]).arrays
    assert ((a["dp"] == 1) & (a["tp"] == 8) & (a["ep"] == 2) & (a["zero"] == 1)).any()
    assert not ((a["dp"] == 1) & (a["tp"] == 8) & (a["ep"] == 8) & (a["zero"] == 1)).any()
    lay = resolve_layout(job, "tp=8,ep=2,zero=1,mbs=1,recompute=full")[0]
    assert "--use-distributed-optimizer" in script_args(export("megatron", Target(job, lay)).files["megatron_pretrain.sh"])


def test_autocast_casts_only_what_it_casts():
    """With fp32 weights under autocast: one bf16 cast per projection of a shared input (q, k, v;
    gate, up), one where a family fuses them (phi3's qkv_proj, gate_up_proj); the weight-cast
    cache holds the projections and the LM head, not the input embedding or the fp32 experts."""
    from shardwise.kb.memory import activations as act
    from shardwise.kb.memory.estimate import _states
    from shardwise.kb.stages import all_stages
    job = _trainer_job(training="finetune", precision="bf16")
    lay = Layout(mbs=1, recompute="full")
    h = job.model.hidden
    assert act.autocast_input_casts(job.model, job.training, lay, False) == 2.0 * (2 + 1) * h
    phi3 = job.model.model_copy(update={"family": "phi3"})
    assert act.autocast_input_casts(phi3, job.training, lay, False) == 0.0
    pure = _trainer_job(training="finetune", precision="pure-bf16")
    assert act.autocast_input_casts(pure.model, pure.training, lay, False) == 0.0
    moe = _trainer_job(model="mixtral-8x7b", training="finetune", precision="bf16")
    sp = all_stages(moe.model, lay)[0]
    copies = _states(moe, lay, sp).compute_copy
    assert sp.experts > 0 and copies == pytest.approx(2.0 * (sp.gemm - sp.experts))


def test_torchtitan_chunks_its_loss_and_the_others_do_not():
    """torchtitan 0.3's recipes run the loss in 8 sequence chunks (ChunkedLossWrapper): one
    chunk's logits at a time beside an fp32 gradient buffer of the hidden states, where the whole
    logits are what the transformers and Megatron paths hold."""
    layout = "dp=8,zero=3,mbs=1,recompute=full"
    chunked = mem(build_job(model="llama-3-8b", gpus=8, seq_len=8192, framework="fsdp"), layout)
    whole = mem(build_job(model="llama-3-8b", gpus=8, seq_len=8192, framework="fsdp", loss_chunks=1), layout)
    assert chunked.breakdown_gib["logits"] < whole.breakdown_gib["logits"] / 5
    accumulator = 4 * 8192 * 4096 / 2 ** 30
    assert chunked.breakdown_gib["logits"] == pytest.approx(whole.breakdown_gib["logits"] / 8 + accumulator, rel=1e-6)
    assert whole.peak_gib - chunked.peak_gib > 8
    # an adapter or RLHF job under FSDP is the user's own transformers script: the whole logits
    for training in ("lora", "qlora", "rlhf"):
        job = build_job(model="llama-3-8b", gpus=8, seq_len=8192, framework="fsdp", training=training)
        assert mem(job, layout).breakdown_gib["logits"] == pytest.approx(whole.breakdown_gib["logits"]), training


def test_peft_lora_keeps_each_moe_layers_merged_experts():
    """LoRA on Mixtral 8x7B through PEFT: every MoE layer keeps its merged bf16 experts from
    forward to backward -- about a second copy of the experts without recomputation, one layer's
    with it; QLoRA leaves the fused experts bf16. gpt-oss's experts are not adapted: no merged
    copy. DeepSpeed AutoEP would replace the layer PEFT wrapped: refused."""
    def mem(model, training, framework, layout, gpus=8):
        job = build_job(model=model, gpus=gpus, seq_len=4096, training=training, framework=framework)
        return estimate_memory(job, resolve_layout(job, layout)[0])
    experts_gib = 32 * 8 * 3 * 4096 * 14336 * 2 / 2**30            # Mixtral 8x7B's experts in bf16
    kept = mem("mixtral-8x7b", "lora", "hf", "dp=8,zero=3,mbs=1,recompute=none")
    assert kept.breakdown_gib["compute_copies"] == pytest.approx(experts_gib, rel=0.02)
    assert kept.phase == "backward-start"
    one = mem("mixtral-8x7b", "lora", "hf", "dp=8,zero=3,mbs=1,recompute=full")
    assert one.breakdown_gib["compute_copies"] < 0.1
    assert one.breakdown_gib["backward_working_set"] > 4 / 3 * experts_gib / 32
    qlora = mem("mixtral-8x7b", "qlora", "hf", "dp=8,zero=3,mbs=1,recompute=full")
    assert qlora.breakdown_gib["frozen_weights"] > 0.95 * experts_gib / 8
    oss = mem("gpt-oss-120b", "lora", "hf", "dp=8,zero=3,mbs=1,recompute=none")
    assert oss.breakdown_gib["compute_copies"] < 1.0
    # DeepSpeed AutoEP (EP > 1) would replace the MoE layer PEFT wraps: refused, not estimated
    from shardwise.kb.errors import InputError
    with pytest.raises(InputError, match="adapters-expert-parallel"):
        mem("mixtral-8x7b", "lora", "hf", "dp=8,ep=8,zero=1,mbs=1,recompute=none")


def test_fsdp_zero2_under_pipelining_accumulates_unsharded_gradients_as_zero3_does():
    """torch pipelining turns FSDP's gradient sync off until the last micro-batch (so the step
    time reduces once a step for ZeRO-2 as for ZeRO-3): the gradients then accumulate unsharded
    in fp32 under either, and the memory says so."""
    job = build_job(model="llama-3-8b", gpus=16, training="finetune", framework="fsdp")
    grads = {z: estimate_memory(job, resolve_layout(job, f"pp=2,dp=8,zero={z},mbs=1,recompute=full")[0])
             .breakdown_gib["gradients"] for z in (2, 3)}
    assert grads[2] == pytest.approx(grads[3], rel=0.15) and grads[2] > 8 / 2 * 4 * 0.9


def test_adafactor_on_deepspeeds_flattened_partitions_keeps_a_full_second_moment():
    """DeepSpeed's ZeRO hands the optimizer one flattened fp32 partition, which Adafactor cannot
    factor: a full fp32 second moment (4 bytes a parameter of the partition) and two
    partition-sized temporaries at its step. Without ZeRO (the Trainer's own data parallelism)
    its moments are factored, next to nothing."""
    estimate = estimate_memory
    job = build_job(model="llama-3-8b", gpus=8, framework="deepspeed", optimizer="adafactor")
    params_rank = 8.03e9 / 8
    z1 = estimate(job, Layout(dp=8, zero=1, mbs=1, recompute="full"))
    assert z1.breakdown_gib["optimizer"] == pytest.approx(4 * params_rank / 2**30, rel=0.01)
    # its two temporaries, and the partition's fp32 gradient DeepSpeed makes for the step with
    # the flattened bf16 copy it casts
    assert z1.breakdown_gib["optimizer_temporaries"] == pytest.approx((8 + 4 + 2) * params_rank / 2**30, rel=0.01)
    hf = estimate(build_job(model="llama-3-8b", gpus=8, framework="hf", optimizer="adafactor"),
                  Layout(dp=8, zero=0, mbs=1, recompute="full"))
    assert hf.breakdown_gib.get("optimizer", 0.0) < 0.05
    # DeepSpeed at ZeRO-0: Adafactor is no FusedAdam, so FP16_UnfusedOptimizer keeps a fp32 copy of
    # each parameter in its own shape, which Adafactor factors; under the pipeline engine
    # BF16_Optimizer hands it flat groups of the data-parallel partition, which it cannot
    z0 = estimate(job, Layout(dp=8, zero=0, mbs=1, recompute="full"))
    assert z0.breakdown_gib.get("optimizer", 0.0) < 0.05
    piped = build_job(model="llama-3-8b", gpus=16, framework="deepspeed", optimizer="adafactor", global_batch=256)
    z0pp = estimate(piped, resolve_layout(piped, "pp=4,dp=4,zero=0,mbs=1,recompute=full")[0])
    assert z0pp.breakdown_gib["optimizer"] > 0.5


def test_adafactor_under_fsdp2_is_refused(run_cli):
    """Adafactor fails on FSDP2's and TP's DTensor parameters, and torchtitan and the FSDP2 export
    hold every layout's parameters as DTensors (a replicated one as a 1-wide shard): under
    --framework fsdp it is refused as input, with what runs it."""
    code, out, err = run_cli("recommend", "--model", "llama-3-8b", "--gpus", "8", "--framework", "fsdp",
                             "--optimizer", "adafactor")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--optimizer adafactor with --framework fsdp" in err and "--framework hf or deepspeed" in err


def test_fsdp_zero2_keeps_fp32_shards_and_the_unsharded_bf16_copies_whatever_the_recompute():
    """FSDP2's ZeRO-2 (reshard_after_forward=False) shards its fp32 parameters as ZeRO-3 does and
    keeps every parameter's unsharded bf16 copy from forward to backward -- which full
    recomputation does not free, as it would autocast's casts."""
    job = build_job(model="llama-3-8b", gpus=8, seq_len=8192, framework="fsdp")
    z2 = {r: mem(job, f"dp=8,zero=2,mbs=1,recompute={r}").breakdown_gib for r in ("full", "none")}
    z3 = mem(job, "dp=8,zero=3,mbs=1,recompute=full").breakdown_gib
    assert z2["full"]["weights"] == pytest.approx(z3["weights"])
    assert z2["full"]["compute_copies"] == pytest.approx(z2["none"]["compute_copies"])
    assert z2["full"]["compute_copies"] == pytest.approx(2 * 8.03e9 / 2**30, rel=0.02)


def test_deepspeed_makes_its_fp32_gradient_partition_only_for_the_step():
    """DeepSpeed ZeRO-1/2/3 accumulate gradients in bf16 and cast the partition to fp32 inside
    step(): forward and backward hold 2 bytes a parameter of gradient (sharded at ZeRO-2), and
    the 4 bytes of the fp32 partition appear with the optimizer step, with the 2 of the flattened
    bf16 copy they are cast from (test_deepspeed_casts_a_flattened_copy_of_its_gradients)."""
    job = build_job(model="llama-3-8b", gpus=8, seq_len=4096, framework="deepspeed", training="finetune",
                    global_batch=64)
    e = mem(job, "dp=8,zero=2,mbs=1,recompute=full")
    part = 8.03e9 / 8 / 2**30
    assert e.phase == "backward-start"
    assert e.breakdown_gib["gradients"] == pytest.approx(2 * part, rel=0.02)
    step = e.phases()["optimizer-step"]["live_gib"]
    assert step["optimizer_temporaries"] == pytest.approx((4 + 2) * part, rel=0.02)


def test_deepspeed_casts_a_flattened_copy_of_its_gradients():
    """ZeRO 1-3 flatten the partition's bf16 gradients into a new tensor and cast that to fp32
    (stage_1_and_2.py step: flatten, then .to, then del; stage3.py
    _prepare_fp32_grad_for_sub_group: flatten(...).to(...)): 2 + 4 bytes an element at once, a
    ZeRO-3 sub-group (1e9 elements) at a time. Llama 3 8B on 8 GPUs: 1.0e9 elements a rank,
    5.6 GiB at the step, not the 3.7 of the fp32 copy alone."""
    job = build_job(model="llama-3-8b", gpus=8, seq_len=1024, framework="deepspeed", training="finetune",
                    global_batch=64)
    part = 8.03e9 / 8
    for z in (1, 2, 3):
        step = mem(job, f"dp=8,zero={z},mbs=1,recompute=full").phases()["optimizer-step"]["live_gib"]
        elems = min(part, 1e9) if z == 3 else part
        assert step["optimizer_temporaries"] * 2**30 == pytest.approx(6 * elems, rel=0.02), z


def test_deepspeed_pipeline_in_bf16_shards_master_and_moments_at_zero0():
    """Under its pipeline engine in bf16 DeepSpeed runs BF16_Optimizer, which keeps the fp32
    master and Adam's moments on the rank's data-parallel partition (ZeRO-1's sharding) and two
    full bf16 gradients; without the pipeline, ZeRO-0 keeps them whole."""
    job = build_job(model="llama-3-8b", gpus=16, seq_len=4096, framework="deepspeed", global_batch=256)
    piped = mem(job, "pp=4,dp=4,zero=0,mbs=1,recompute=full")
    zero1 = mem(job, "pp=4,dp=4,zero=1,mbs=1,recompute=full")
    for k in ("master_weights", "optimizer"):
        assert piped.breakdown_gib[k] == pytest.approx(zero1.breakdown_gib[k])
    assert piped.breakdown_gib["gradients"] == pytest.approx(2 * zero1.breakdown_gib["gradients"])


def test_deepspeed_zero0_casts_gradients_flat_only_with_its_fused_adam():
    """At ZeRO-0 DeepSpeed's FusedAdam runs under FP16_Optimizer, which casts every gradient to
    fp32 in a list and flattens the list (8 bytes a parameter at once); SGD runs under
    FP16_UnfusedOptimizer, which casts parameter by parameter (4)."""
    def temporaries(optimizer):
        job = build_job(model="llama-3.2-1b", gpus=8, framework="deepspeed", optimizer=optimizer)
        e = mem(job, "dp=8,zero=0,mbs=1,recompute=full")
        return e.phases()["optimizer-step"]["live_gib"]["optimizer_temporaries"] * 2**30 / 1.236e9
    assert temporaries("adamw") == pytest.approx(8.0, rel=0.02)
    assert temporaries("sgd") == pytest.approx(4.0, rel=0.02)


@pytest.mark.parametrize("model,gpus,layout", [
    # DeepSeek-V3's three leading dense layers spill past stage 0 at two layers a stage: stage 1
    # holds one dense and one MoE layer, stages 2-28 two MoE layers with their experts
    ("deepseek-v3", 64, "tp=1,pp=32,dp=2,ep=2,zero=1,mbs=4,recompute=full"),
    ("deepseek-v3", 64, "tp=2,pp=16,dp=2,ep=4,zero=1,mbs=1,recompute=full"),
    ("deepseek-v3", 488, "tp=1,pp=61,dp=8,ep=8,zero=1,mbs=1,recompute=full"),
    ("llama-3-70b", 48, "tp=2,pp=6,dp=4,zero=1,mbs=1,recompute=selective"),      # 80 over 6: uneven
    ("llama-3.1-405b", 128, "tp=8,pp=16,dp=1,zero=1,mbs=1,recompute=full"),     # 126 + 2 slots
    ("mixtral-8x7b", 32, "tp=1,pp=4,dp=8,ep=8,zero=1,mbs=2,recompute=none"),
])
def test_the_peak_is_the_peak_over_every_pipeline_stage(model, gpus, layout, monkeypatch):
    """The estimate reads a few stages (kb/stages.all_stages); its peak must be the peak over all
    of them. Before, it read stages 0, 1 and the last, and gave DeepSeek-V3 at pp 32 122.8 GiB
    where stage 2 needs 221.6 -- a headline that fitted only on paper."""
    from shardwise.kb import stages
    from shardwise.kb.memory import estimate
    job = build_job(model=model, gpus=gpus, gpu="b200", seq_len=4096, precision="fp8")
    lay, _ = resolve_layout(job, layout)
    picked = estimate_memory(job, lay)
    monkeypatch.setattr(estimate, "all_stages",
                        lambda m, l: [stages.stage_params(m, l, i) for i in range(l.pp)])
    every = estimate_memory(job, lay)
    assert picked.peak_gib == pytest.approx(every.peak_gib, rel=1e-12)
    assert picked.stage == every.stage


def test_megatron_lora_counts_its_fused_adapters_and_one_shared_pair_per_expert_rank():
    """Megatron-Bridge's LoRA puts one adapter on the fused linear_qkv and linear_fc1 (PEFT puts
    one on each of q, k, v, gate and up), and its routed experts share one adapter pair per MoE
    layer on a rank (share_expert_adapters): Qwen3-235B's adapter states on a rank were counted
    as one adapter per expert (128 a layer), about 1.6 GiB of states at EP 8 for 0.15."""
    from shardwise.kb.memory.states import lora_params
    from shardwise.kb.stages import stage_params
    from shardwise.kb.memory.states import adapter_params_rank
    job = build_job(model="llama-3-8b", gpus=8, training="lora", framework="megatron")
    m, r = job.model, 16
    h, q, kv, f = m.hidden, m.q_width, m.kv_width, m.ffn
    per_layer = r * ((h + q + 2 * kv) + (q + h) + (h + 2 * f) + (f + h))
    assert lora_params(m, r, job.training) == m.layers * per_layer
    peft = build_job(model="llama-3-8b", gpus=8, training="lora", framework="hf")
    assert lora_params(m, r, peft.training) - lora_params(m, r, job.training) == m.layers * r * 3 * h

    moe = build_job(model="qwen3-235b-a22b", gpus=64, training="lora", framework="megatron")
    ranks = {ep: adapter_params_rank(moe.model, moe.training, stage_params(moe.model, Layout(tp=2, pp=4, dp=8, ep=ep), 0))
             for ep in (8, 16)}
    assert abs(ranks[8] - ranks[16]) < 1e-6 * ranks[8]         # the expert pair does not shrink with EP
    est = estimate_memory(moe, Layout(tp=2, pp=4, dp=8, ep=8, mbs=1, recompute="full"))
    adapters = sum(est.breakdown_gib[k] for k in ("weights", "gradients", "optimizer"))
    assert adapters < 0.3


def test_qlora_adapters_under_bf16_autocast_keep_no_copy_of_their_input():
    """QLoRA on the Trainer (fp32 adapters, bf16 autocast): bitsandbytes' 4-bit LoRA layer casts
    its input to the adapters' dtype only outside autocast (peft tuners/lora/bnb.py
    Linear4bit.forward), so its adapters share the bf16 input as bf16 adapters do, where LoRA's
    nn.Linear adapters each keep a bf16 copy: 8 h a token a layer at Llama 3 8B's shape (q, k, v
    and o's copies less the norm output they replace, 6 h; gate's and up's, 2 h). A lora_dropout
    keeps its dropped-out copies either way; without autocast (pure-bf16) QLoRA casts too."""
    def acts(training, layout="dp=1,mbs=1,recompute=none", **kw):
        job = build_job(model="llama-3-8b", gpus=1, seq_len=4096, framework="hf", training=training, **kw)
        return mem(job, layout).breakdown_gib["activations"]
    per_token_h = 32 * 4096 * 4096 / 2**30                 # GiB of 1 byte per hidden unit, token and layer
    assert acts("lora") - acts("qlora") == pytest.approx(8 * per_token_h, rel=1e-6)
    assert acts("qlora", lora_dropout=0.1) == pytest.approx(acts("lora", lora_dropout=0.1), rel=1e-9)
    assert acts("qlora", precision="pure-bf16") == pytest.approx(acts("lora", precision="pure-bf16"), rel=1e-9)


def test_megatron_lora_adapters_on_a_rank_are_its_stage_layers_split_over_tp_and_expert_tp():
    """Megatron-Bridge splits each adapter over its linear's tensor-parallel group, the routed
    experts' shared pair over expert TP (peft/utils.py ParallelLinearAdapter on the expert tp_group),
    and puts none on the embedding or the output layer. The estimate kept the whole pair on every
    expert-TP rank (Qwen3-235B, tp 4 pp 4 ep 4: the same 7.0M adapters a rank at etp 1, 2 and 4)
    and shared the rest by parameters, so the stage with the LM head held more of them."""
    from shardwise.kb.memory.states import adapter_params_rank, megatron_lora_params
    from shardwise.kb.stages import stage_params
    dense = build_job(model="llama-3-8b", gpus=8, training="lora", framework="megatron")
    m, r = dense.model, dense.training.lora_rank
    h, q, kv, f = m.hidden, m.q_width, m.kv_width, m.ffn
    per_layer = r * ((h + q + 2 * kv) + (q + h) + (h + 2 * f) + (f + h))
    lay = Layout(tp=2, pp=4, dp=1)
    for stage in range(4):
        sp = stage_params(m, lay, stage)
        assert adapter_params_rank(m, dense.training, sp, lay.tp, lay.etp) == pytest.approx(sp.layers * per_layer / 2)

    moe = build_job(model="qwen3-235b-a22b", gpus=64, training="lora", framework="megatron")
    m = moe.model
    _, _, pair = megatron_lora_params(m, moe.training.lora_rank)
    on = {etp: adapter_params_rank(m, moe.training, stage_params(m, Layout(tp=4, pp=4, dp=4, ep=4, etp=etp), 1), 4, etp)
          for etp in (1, 2, 4)}
    layers = stage_params(m, Layout(tp=4, pp=4, dp=4, ep=4), 1).moe_layers
    assert on[1] - on[2] == pytest.approx(layers * pair / 2) and on[2] - on[4] == pytest.approx(layers * pair / 4)


def test_peft_lora_on_phi3_adapts_its_fused_qkv_and_gate_up_once():
    """Phi-3 and Phi-4 (model_type phi3) build qkv_proj and gate_up_proj (transformers
    modeling_phi3.py), each one nn.Linear, so PEFT's all-linear LoRA puts one adapter on each:
    Phi-4 at r 16 has 55,705,600 adapter parameters, not the 65,536,000 of separate q, k, v, gate
    and up (which the activation estimate already did not count)."""
    from shardwise.kb.memory.states import lora_params
    job = build_job(model="phi-4", gpus=8, training="lora", framework="hf")
    m, r = job.model, 16
    h, q, kv, f = m.hidden, m.q_width, m.kv_width, m.ffn
    per_layer = r * ((h + q + 2 * kv) + (q + h) + (h + 2 * f) + (f + h))
    assert lora_params(m, r, job.training) == m.layers * per_layer == 55_705_600


def test_sdpa_keeps_llama4s_dense_chunked_mask_on_every_chunked_layer(tmp_path):
    """Past one chunk, transformers' Llama 4 builds its chunked mask as a bool [b, 1, s, s] tensor
    (1 byte a score, once a forward) and SDPA turns it into a bf16 additive mask on each call,
    which its kernel saves for the backward: 2 s^2 bytes on each of Scout's 36 chunked layers.
    At 32K that is 72 GiB without recomputation (the bool mask is freed with the forward), 1 GiB
    (the bool mask the checkpoints keep) with it; nothing under Megatron (no chunked attention), under eager (no SDPA), or below a chunk."""
    import dataclasses
    import json
    from test_params import HF_CONFIGS
    path = tmp_path / "config.json"
    path.write_text(json.dumps(HF_CONFIGS["llama4_scout"][0]))

    def extra(seq, recompute, **kw):
        job = build_job(hf_config=str(path), gpus=32, seq_len=seq, **kw)
        full = dataclasses.replace(job, model=job.model.model_copy(update={"attn_chunk": 0, "chunked_layers": 0}))
        text = f"dp=32,zero=3,mbs=1,recompute={recompute}" if "framework" in kw else \
            f"dp=8,cp=4,ep=8,zero=3,mbs=1,recompute={recompute}"
        return mem(job, text).breakdown_gib["activations"] - mem(full, text).breakdown_gib["activations"]

    s = 32768
    sdpa = dict(framework="deepspeed", attention="sdpa")
    # with the mask, SDPA keeps k and v repeated to Scout's 40 query heads from its 8 kv heads
    # (repeat_kv: no enable_gqa with a mask), 2 x 2 x (5120 - 1024) bytes a token a chunked layer
    repeated = 36 * 4 * (5120 - 1024) * s / 2 ** 30
    assert extra(s, "none", **sdpa) == pytest.approx(36 * 2 * s * s / 2 ** 30 + repeated)
    assert extra(s, "full", **sdpa) == pytest.approx(1 * s * s / 2 ** 30)
    assert extra(s, "none", framework="deepspeed", attention="flash") == pytest.approx(72.0 + 18.0)
    assert extra(4096, "none", **sdpa) == 0.0
    assert extra(s, "none", framework="deepspeed", attention="eager") == 0.0
    assert extra(s, "none") == 0.0


def test_megatron_lora_states_are_megatrons_recipe_for_the_adapters_and_none_for_the_frozen_base():
    """Megatron-Bridge's adapters are bf16 Megatron linears (peft/utils.py ParallelLinearAdapter:
    self.bfloat16() under config.bf16) with a bf16 DDP grad buffer (the PEFT recipes'
    grad_reduce_in_fp32=False), fp32 main params and Adam in Megatron's optimizer (optimizer.py
    Float16OptimizerWithFloat16Params, trained parameters only) and no autocast copy; the frozen
    base has no grad buffer (distributed_data_parallel.py skips requires_grad=False) and no
    optimizer state. Hand count, Llama 3 8B at r 16, one rank of tp=1: P = 32 layers x 16 x
    (6144 + 4096 (qkv) + 8192 (proj) + 4096 + 28672 (fc1) + 18432 (fc2)) = 35,651,584 adapter
    parameters: weights 2 P, gradients 2 P, master 4 P, Adam 8 P, compute copies 0 (the estimate
    held PEFT's fp32 adapters: weights 4 P, no master, a 2 P compute copy)."""
    job = build_job(model="llama-3-8b", gpus=8, seq_len=4096, training="lora", framework="megatron")
    e = mem(job, "tp=1,pp=1,mbs=1,recompute=none")
    p = 32 * 16 * (6144 + 4096 + 8192 + 4096 + 28672 + 18432)
    assert p == 35_651_584
    bd = e.phases()["forward"]["live_gib"]
    want = {"weights": 2 * p, "gradients": 2 * p, "master_weights": 4 * p, "optimizer": 8 * p}
    for k, b in want.items():
        assert e.breakdown_gib[k] == pytest.approx(b / 2**30, rel=1e-9), k
    assert "compute_copies" not in bd
    # the frozen base: its bf16 weights alone, 2 bytes a parameter of the model
    from shardwise.kb.params import total_params
    assert e.breakdown_gib["frozen_weights"] == pytest.approx(2 * total_params(job.model) / 2**30, rel=1e-9)


def test_deepspeed_pure_bf16_steps_a_bf16_copy_of_its_partition():
    """DeepSpeed's ZeRO optimizer with bf16_master_weights_and_grads (what the export writes for
    pure-bf16) clones its partition of the bf16 weights into a bf16 master (stage_1_and_2.py
    weights_partition ... .clone().to(dtype=master_weights_and_grads_dtype)): 2 bytes a parameter
    over the shard group. Llama 3.2 1B at ZeRO-1 on 8 GPUs: 2 P / 8 of master weights, 4 P / 8 of
    bf16 Adam moments, and 2 P / 8 of flattened gradients in the step. torchtitan's FSDP2 steps the bf16 parameters themselves: no master."""
    from shardwise.kb.params import total_params
    job = build_job(model="llama-3.2-1b", gpus=8, precision="pure-bf16", framework="deepspeed")
    p = total_params(job.model)
    e = mem(job, "dp=8,zero=1,mbs=1,recompute=none")
    assert e.breakdown_gib["master_weights"] == pytest.approx(2 * p / 8 / 2**30, rel=1e-9)
    assert e.breakdown_gib["optimizer"] == pytest.approx(4 * p / 8 / 2**30, rel=1e-9)
    # its step flattens the partition's bf16 gradients into a new tensor, which the cast to the
    # bf16 master's dtype returns as it is (states.fp32_grad_temporary): 2 P / 8 while it steps
    step = e.phases()["optimizer-step"]["live_gib"]
    assert step["optimizer_temporaries"] == pytest.approx(2 * p / 8 / 2**30, abs=1e-3)     # shown to the MiB
    fsdp = mem(build_job(model="llama-3.2-1b", gpus=8, precision="pure-bf16", framework="fsdp"),
               "dp=8,zero=3,mbs=1,recompute=none")
    assert fsdp.breakdown_gib.get("master_weights", 0.0) == 0.0


def test_peft_lora_states_keep_fp32_adapters_with_an_autocast_copy():
    """PEFT's adapters under the Trainer stay fp32 (autocast_adapter_dtype) with fp32 grads, AdamW
    and a bf16 autocast copy: what Megatron's adapters changed must not move them. Llama 3 8B's
    all-linear PEFT adapters at r 16: P = 32 x 16 x (4096 x 7 + 4096 + 1024 x 2 + 4096 + 14336 x 3
    + 4096 x 3) -- q, k, v, o, gate, up, down -- = 41,943,040."""
    job = build_job(model="llama-3-8b", gpus=8, seq_len=4096, training="lora", framework="hf")
    e = mem(job, "dp=8,mbs=1,recompute=none")
    p = 32 * 16 * ((4096 + 4096) + (4096 + 1024) * 2 + (4096 + 4096) + (4096 + 14336) * 3)
    assert p == 41_943_040
    for k, b in {"weights": 4 * p, "master_weights": 0, "optimizer": 8 * p, "compute_copies": 2 * p}.items():
        assert e.breakdown_gib[k] == pytest.approx(b / 2**30, rel=1e-9, abs=1e-12), k


def test_megatron_lora_activations_are_what_te_and_the_adapters_keep():
    """Against Megatron-Core's full fine-tuning count, what Megatron-Bridge's LoRA changes in a
    Llama 3 8B layer's saved tensors (h 4096, q 4096, F 14336, r 16), bytes a token, from the
    source (kb/memory/megatron_adapters.py):
    - bf16, tp=1: TE's frozen LayerNormLinear still keeps the norm output it returns to the qkv and
      fc1 adapters, which share it; frozen linear_proj and linear_fc2 keep no input, their
      adapters keep the same tensors instead; each of the four adapters' linear_out keeps linear_in's
      rank-r output: 4 x 2 r = 128;
    - tp=2 with SP: each of the qkv and fc1 adapters keeps the gathered, whole-sequence norm
      output TE returns (2 h each) beside TE's local shard: 4 h + 128 = 16,512;
    - dropout 0.1, tp=1: qkv's and fc1's dropped-out copy and mask (3 h each), linear_proj's
      (3 q), linear_fc2's less the SwiGLU output it frees (3 F - 2 F): 6 h + 3 q + F + 128 =
      51,328.
    The estimate counted none of it (the full fine-tuning figure)."""
    def acts(layout, **kw):
        out = {}
        for training in ("lora", "finetune"):
            job = build_job(model="llama-3-8b", gpus=8, seq_len=4096, framework="megatron", training=training,
                            **(kw if training == "lora" else {}))
            forward = [r for r in mem(job, layout).stages if r["phase"] == "forward"]
            out[training] = forward[0]["breakdown_gib"]["activations"]
        return out["lora"] - out["finetune"]
    per_byte = 32 * 4096 / 2**30                 # GiB of 1 byte a token in each of 32 layers, 4,096 tokens
    h, q, f, r = 4096, 4096, 14336, 16
    assert acts("tp=1,pp=1,mbs=1,recompute=none") == pytest.approx(4 * 2 * r * per_byte, rel=1e-6)
    assert acts("tp=2,pp=1,mbs=1,sp=on,recompute=none") == pytest.approx((4 * h + 8 * r) * per_byte, rel=1e-6)
    assert (acts("tp=1,pp=1,mbs=1,recompute=none", lora_dropout=0.1)
            == pytest.approx((6 * h + 3 * q + f + 8 * r) * per_byte, rel=1e-6))
    # full recomputation keeps each layer's input alone, adapters or not
    assert acts("tp=1,pp=1,mbs=1,recompute=full") == pytest.approx(0.0, abs=1e-9)


def test_sdpa_keeps_the_dense_sliding_window_mask_on_every_sliding_layer():
    """Past the window, transformers builds the sliding-window mask as a bool [b, 1, s, s] tensor
    (create_sliding_window_causal_mask passes local_size) and SDPA keeps a bf16 additive copy of it
    on each sliding layer for the backward, and k and v expanded to all query heads: 2 s^2 bytes
    of mask on each of Mistral 7B's 32 layers, and on
    Gemma 3's 5 of 6 (29 of gemma-3-4b's 34), where a FlashAttention kernel takes the window
    itself. Below the window SDPA runs is_causal with no mask: nothing; and nothing moves for a
    model without a window."""
    s = 32768

    def act(model, seq, attention, recompute="none"):
        job = build_job(model=model, gpus=8, seq_len=seq, framework="hf", attention=attention)
        return mem(job, f"dp=8,zero=3,mbs=1,recompute={recompute}").breakdown_gib["activations"]

    score = s * s / 2 ** 30                                   # GiB of one byte a score
    # with the mask SDPA keeps k and v repeated to every query head (no enable_gqa with a mask):
    # 2 x 2 x (q - kv) bytes a token a sliding layer -- Mistral 4096 - 1024, gemma-3-4b 2048 - 1024
    repeated = {"mistral-7b": 32 * 4 * 3072 * s / 2 ** 30, "gemma-3-4b": 29 * 4 * 1024 * s / 2 ** 30}
    assert act("mistral-7b", s, "sdpa") - act("mistral-7b", s, "flash") == \
        pytest.approx(32 * 2 * score + repeated["mistral-7b"])
    assert act("gemma-3-4b", s, "sdpa") - act("gemma-3-4b", s, "flash") == \
        pytest.approx(29 * 2 * score + repeated["gemma-3-4b"])
    assert act("mistral-7b", 2048, "sdpa") == act("mistral-7b", 2048, "flash")
    assert act("gemma-3-4b", 1023, "sdpa") == act("gemma-3-4b", 1023, "flash")   # window 1024
    assert act("llama-3-8b", s, "sdpa") == act("llama-3-8b", s, "flash")
    # under recomputation the checkpoints keep the model's one bool mask (1 byte a score) until
    # the backward; without, it is freed with the forward, before the backward starts
    assert act("mistral-7b", s, "sdpa", "full") - act("mistral-7b", s, "flash", "full") == pytest.approx(score)


def test_checkpoints_keep_transformers_eager_masks_until_the_backward():
    """transformers' eager path builds a float [b, 1, s, s] mask a layer type each forward
    (masking_utils.eager_mask, in the embeddings' dtype) and adds it to the scores, which keeps
    nothing for the backward. Under recomputation every checkpointed layer holds it as an input
    until its backward: 2 bytes a score with bf16 weights, 4 with fp32 weights under autocast,
    twice for a model with full and sliding layers (Gemma 3), once for Llama or all-sliding
    Mistral. Without recomputation it is freed with the forward: nothing at the backward's start."""
    s = 8192

    def act(model, attention, layout):
        job = build_job(model=model, gpus=8, seq_len=s, framework="hf", attention=attention)
        return mem(job, layout).breakdown_gib["activations"]

    score = s * s / 2 ** 30
    zero3, ddp = "dp=8,zero=3,mbs=1,recompute=full", "dp=8,zero=0,mbs=1,recompute=full"
    assert act("llama-3-8b", "eager", zero3) - act("llama-3-8b", "flash", zero3) == pytest.approx(2 * score)
    assert act("llama-3-8b", "eager", ddp) - act("llama-3-8b", "flash", ddp) == pytest.approx(4 * score)
    assert act("mistral-7b", "eager", zero3) - act("mistral-7b", "flash", zero3) == pytest.approx(2 * score)
    assert act("gemma-3-4b", "eager", zero3) - act("gemma-3-4b", "flash", zero3) == pytest.approx(2 * 2 * score)
    none = "dp=8,zero=3,mbs=1,recompute=none"
    eager = build_job(model="llama-3-8b", gpus=8, seq_len=s, framework="hf", attention="eager")
    flash = build_job(model="llama-3-8b", gpus=8, seq_len=s, framework="hf", attention="flash")
    from shardwise.kb.memory.activations import layer_bytes_per_token
    lay, _ = resolve_layout(eager, none)
    scores = sum(layer_bytes_per_token(j.model, j.training, lay, False, s) * (1 if j is eager else -1)
                 for j in (eager, flash)) * s * 32 / 2 ** 30
    assert act("llama-3-8b", "eager", none) - act("llama-3-8b", "flash", none) == pytest.approx(scores)


def test_the_answer_says_which_kernel_its_sliding_windows_were_sized_for():
    """Under the Trainer the default --attention flash sizes sliding windows as flash-attn runs
    them; transformers' own default, sdpa, builds a dense mask past the window. The answer says so
    where it matters (Mistral 7B and Gemma 3 past their windows), not below the window, not with
    --attention sdpa, not for Gemma 2 (no SDPA path: eager by default) nor a model without windows."""
    from shardwise.kb.resolve import assumptions

    def said(model, seq, **kw):
        job = build_job(model=model, gpus=8, seq_len=seq, framework="hf", **kw)
        return [a for a in assumptions(job) if a.startswith("attention flash:")]
    line = said("mistral-7b", 8192)
    assert len(line) == 1 and "32 sliding-window layers" in line[0] and "--attention sdpa" in line[0]
    assert said("gemma-3-4b", 8192)
    assert not said("mistral-7b", 2048) and not said("mistral-7b", 8192, attention="sdpa")
    assert not said("gemma-2-9b", 8192) and not said("llama-3-8b", 8192)
    # Llama 4's chunked layers have no flash-attn path: "flash" is already SDPA's dense mask there,
    # and the line would have named 0 sliding-window layers of 0 tokens
    assert not said("llama-4-scout", 16384)


def test_gemma2s_final_logit_cap_keeps_its_tanh_output_beside_the_loss():
    """transformers' Gemma 2 caps its logits (logits / 30, tanh, * 30) before the loss; tanh
    saves its bf16 output, 2 bytes a logit from the forward through the loss's backward, on top of
    the 4 kept and 12 at the peak (kb/memory/logits.py). Megatron has no cap; a model without one
    keeps nothing more."""
    from shardwise.kb.memory.logits import logits_bytes, logits_forward_bytes
    lay = Layout(dp=8, zero=3, mbs=1, recompute="full")
    capped = build_job(model="gemma-2-9b", gpus=8, seq_len=4096, framework="hf", training="finetune")
    m, t = capped.model, capped.training
    plain = m.model_copy(update={"final_softcap": 0.0})
    n = 4096 * m.vocab
    assert [a - b for a, b in zip(logits_bytes(m, t, lay), logits_bytes(plain, t, lay))] == [2 * n, 2 * n]
    assert logits_forward_bytes(m, t, lay) - logits_forward_bytes(plain, t, lay) == 2 * n
    mega = build_job(model="gemma-2-9b", gpus=8, seq_len=4096, framework="megatron", training="finetune").training
    assert logits_bytes(m, mega, lay) == logits_bytes(plain, mega, lay)


def test_ulysses_drops_the_dense_sliding_window_mask_before_sdpa():
    """Under DeepSpeed's Ulysses (cp > 1 on hf / deepspeed) the wrapper around transformers'
    attention sets attention_mask = None before SDPA runs (ulysses_sp.py uattn_wrapper), so SDPA
    runs is_causal with enable_gqa: no bf16 additive mask copy, no k and v repeated to every query
    head -- what flash keeps. Past the window that would drop the window too, and such layouts are
    refused (ulysses-keeps-local-attention); at a sequence of one window, where transformers still
    builds the dense mask but it is the causal one, Ulysses runs and keeps what flash keeps. The
    model's own mask over its s / cp tokens is below the window: none of it either."""
    s = 4096

    def act(attention, layout):
        job = build_job(model="mistral-7b", gpus=8, seq_len=s, framework="deepspeed", attention=attention)
        return mem(job, layout).breakdown_gib["activations"]

    none, full = "dp=4,cp=2,zero=3,mbs=1,recompute=none", "dp=4,cp=2,zero=3,mbs=1,recompute=full"
    assert act("sdpa", none) == pytest.approx(act("flash", none))
    assert act("sdpa", full) == pytest.approx(act("flash", full))
    # without Ulysses the mask reaches SDPA: its copy on every one of the 32 sliding layers
    one = "dp=8,zero=3,mbs=1,recompute=none"
    assert act("sdpa", one) - act("flash", one) > 32 * 2 * s * s / 2 ** 30


LLAMA_8B_CONFIG = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                   "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "rope_theta": 500000.0,
                   "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "hidden_act": "silu"}


def _dropout_job(tmp_path, attention, framework="hf", **cfg):
    import json
    path = tmp_path / f"{len(list(tmp_path.iterdir()))}" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(dict(LLAMA_8B_CONFIG, **cfg)))
    return build_job(hf_config=str(path), gpus=8, gpu="h100-sxm", seq_len=4096, framework=framework,
                     attention=attention)


def test_attention_dropout_keeps_a_mask_a_score_under_eager_and_nothing_under_sdpa_or_flash(tmp_path):
    """config.json's attention_dropout 0.1 is applied in training: transformers' eager attention
    keeps the dropout's bool mask, 1 byte a score, and its dropped copy in place of the
    probabilities (measured on CPU layers through the GPU's fused kernel,
    cpu_dropout_saved_tensors.jsonl): 32 heads x 4,096 x 4,096 scores x 32 layers = 16 GiB more
    at mbs 1 -- once sized as if 0. SDPA and flash-attn take it inside the kernel, which keeps
    its RNG state only: nothing more. Its kernel's traffic makes the eager step slower."""
    none = "dp=8,zero=3,mbs=1,recompute=none"
    scores = 32 * 4096 * 4096 * 32 / 2 ** 30
    acts = {(a, p): mem(_dropout_job(tmp_path, a, attention_dropout=p), none).breakdown_gib["activations"]
            for a in ("eager", "sdpa", "flash") for p in (0.0, 0.1)}
    assert acts[("eager", 0.1)] - acts[("eager", 0.0)] == pytest.approx(1.0 * scores)
    assert acts[("sdpa", 0.1)] == acts[("sdpa", 0.0)] and acts[("flash", 0.1)] == acts[("flash", 0.0)]
    from shardwise.kb.perf import compute
    jobs = {p: _dropout_job(tmp_path, "eager", attention_dropout=p) for p in (0.0, 0.1)}
    lay = resolve_layout(jobs[0.0], none)[0]
    gpu = jobs[0.0].cluster.gpu
    attn = {p: compute.layer_time(j.model, j.training, lay, gpu, False).attention for p, j in jobs.items()}
    # the dropout kernel reads and writes every score forward and backward (10 bytes a score)
    traffic = 32 * 4096 * 4096 * compute.DROPOUT_BYTES / (gpu.hbm_gbps * 1e9 * compute.HBM_EFFICIENCY)
    assert attn[0.1] - attn[0.0] == pytest.approx(traffic)


def test_residual_dropout_keeps_a_mask_of_each_sublayers_output(tmp_path):
    """Phi-3's resid_pdrop drops the attention's and the MLP's outputs before each residual add:
    2 x hidden bytes a token a layer of bool masks (measured: +1,024 bytes a token at h = 512),
    whatever the attention kernel."""
    import json
    from shardwise.kb.memory.activations import layer_bytes_per_token
    phi = {"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064}
    per_token = {}
    for p in (0.0, 0.1):
        path = tmp_path / str(p) / "config.json"
        path.parent.mkdir()
        path.write_text(json.dumps(dict(phi, resid_pdrop=p)))
        job = build_job(hf_config=str(path), gpus=8, seq_len=4096, framework="hf", attention="sdpa")
        per_token[p] = layer_bytes_per_token(job.model, job.training, Layout(mbs=1), False, 4096)
    assert per_token[0.1] - per_token[0.0] == 2 * 3072


def test_model_dropout_is_said_where_it_is_not_sized(tmp_path):
    """Megatron's export trains without the config's dropout and torchtitan's Llama has none: the
    answer says the dropout is not sized there, and sizes nothing for it; on transformers layers it
    says how it is sized. A config without dropout says nothing."""
    from shardwise.kb.resolve import assumptions

    def said(job):
        return [a for a in assumptions(job) if "dropout in training" in a]

    for framework in ("megatron", "fsdp"):
        job = _dropout_job(tmp_path, "flash", framework, attention_dropout=0.1)
        assert len(said(job)) == 1 and "attention_dropout 0.1) is not sized" in said(job)[0]
        plain = _dropout_job(tmp_path, "flash", framework)
        assert mem(job, "dp=8,mbs=1").peak_gib == mem(plain, "dp=8,mbs=1").peak_gib and not said(plain)
    assert "mask kept, 1 byte a score" in said(_dropout_job(tmp_path, "eager", attention_dropout=0.1))[0]
    assert "keeps only its RNG seed and offset" in said(_dropout_job(tmp_path, "sdpa", attention_dropout=0.1))[0]


def test_a_config_with_attention_dropout_is_searched_under_eager(tmp_path):
    """recommend on a config.json with attention_dropout under --attention eager scores a whole
    space of layouts at once; the dropout's kernel is timed on every eager score whichever softmax
    precedes it, so the search must not depend on the per-score bytes (an array over the space).
    It stopped with an internal error (the truth value of an array); now every layout the search
    scores equals the single-layout estimate, and the dropout's mask is in its memory."""
    import numpy as np
    from shardwise.kb.perf.step import step_time
    from shardwise.search.score import score
    from shardwise.search.space import build_space
    from shardwise.kb.resolve import global_batch
    for p in (0.0, 0.1):
        job = _dropout_job(tmp_path, "eager", attention_dropout=p)
        space = build_space(job, global_batch(job)[0])
        sc = score(job, space)
        for i in np.random.default_rng(3).choice(len(space), size=min(20, len(space)), replace=False):
            lay = space.layout(int(i))
            assert sc["peak_gib"][i] == pytest.approx(estimate_memory(job, lay).peak_gib, rel=1e-12)
            assert sc["tokens_per_s"][i] == pytest.approx(step_time(job, lay).tokens_per_s, rel=1e-12)
    none = "dp=8,zero=3,mbs=1,recompute=none"
    drop, plain = (mem(_dropout_job(tmp_path, "eager", attention_dropout=p), none).breakdown_gib["activations"]
                   for p in (0.1, 0.0))
    assert drop - plain == pytest.approx(32 * 4096 * 4096 * 32 / 2 ** 30)


def test_deepspeed_holds_its_buckets_in_the_phases_it_makes_them():
    """ZeRO-1/2 make their two reduce buckets (5e8 bf16 elements each, double-buffered under the
    export's overlap_comm) at a backward's first gradient hook and free them at its epilogue --
    ZeRO-2 every backward, ZeRO-1 at the accumulation boundary -- so the optimizer step holds
    none; ZeRO-3 keeps its one bucket from init and releases the gathered parameters by the end
    of backward (stage_1_and_2.py setup_buckets / _release_ipg_buffers; stage3.py)."""
    bucket = 5e8 * 2 / 2**30                          # one bucket of 5e8 bf16 elements

    def buffers(z, global_batch):
        job = build_job(model="llama-3-8b", gpus=8, seq_len=1024, framework="deepspeed", training="finetune",
                        global_batch=global_batch)
        ph = mem(job, f"dp=8,zero={z},mbs=1,recompute=full").phases()
        return {name: ph[name]["live_gib"]["comm_buffers"] for name in ph}

    nccl = buffers(0, 64)["optimizer-step"]           # ZeRO-0: no buckets, the communicators alone
    z2 = buffers(2, 64)
    assert z2["optimizer-step"] == pytest.approx(nccl) and z2["forward"] == pytest.approx(nccl)
    assert z2["backward-end"] == pytest.approx(nccl + 2 * bucket, abs=0.01)
    assert buffers(3, 64)["optimizer-step"] == pytest.approx(nccl + bucket, abs=0.01)
    # ZeRO-1 keeps its buckets from the first backward to the boundary: in later forwards
    assert buffers(1, 64)["forward"] == pytest.approx(nccl + 2 * bucket, abs=0.01)
    assert buffers(1, 8)["forward"] == pytest.approx(nccl)


def test_deepspeed_zero1_and_2_gradients_live_where_stage_1_and_2_keeps_them():
    """stage_1_and_2.py: the boundary backward's epilogue keeps the partition's gradients and
    drops every p.grad, the step drops the partition once cast; ZeRO-1 accumulates whole p.grad
    between boundaries, ZeRO-2 a second partition in each later backward. Llama 3 8B on 8 GPUs:
    ZeRO-1's optimizer step held 15 GiB of gradients where it holds the 1.9 of its partition."""
    part = 2 * 8.03e9 / 8 / 2**30

    def grads(z, global_batch):
        job = build_job(model="llama-3-8b", gpus=8, seq_len=1024, framework="deepspeed", training="finetune",
                        global_batch=global_batch)
        ph = mem(job, f"dp=8,zero={z},mbs=1,recompute=full").phases()
        return {name: ph[name]["live_gib"].get("gradients", 0.0) for name in ph}

    for z in (1, 2):
        for gb in (8, 64):                      # one micro-batch a step, and eight
            assert grads(z, gb)["optimizer-step"] == pytest.approx(part, rel=0.02), (z, gb)
        one = grads(z, 8)
        assert one["forward"] == 0.0 and one["backward-end"] == pytest.approx(part, rel=0.02)
    # accumulating: ZeRO-1 whole gradients, ZeRO-2 the accumulated partition and a new one
    assert grads(1, 64)["backward-end"] == pytest.approx(8 * part, rel=0.02)
    assert grads(2, 64)["backward-end"] == pytest.approx(2 * part, rel=0.02)
    assert grads(3, 8)["forward"] == pytest.approx(part, rel=0.02)     # ZeRO-3's flat buffer is kept


def test_the_trainer_on_several_gpus_keeps_ddps_gradient_buckets():
    """The Trainer replicates the model with DDP, built with gradient_as_bucket_view=False
    (Accelerate's default; the Trainer passes find_unused_parameters, bucket_cap_mb and
    broadcast_buffers only): its Reducer keeps a flat bucket copy of every gradient, fp32 like
    the Trainer's weights, for the whole run. Llama 3.2 1B on 8 GPUs: 4.6 GiB more on every
    GPU; on one GPU there is no DDP; LoRA buckets only its adapters' gradients."""
    def buffers(gpus, training="finetune"):
        job = build_job(model="llama-3.2-1b", gpus=gpus, seq_len=4096, framework="hf", training=training,
                        global_batch=64)
        e = mem(job, f"dp={gpus},zero=0,mbs=1,recompute=full")
        return e.breakdown_gib["comm_buffers"], e.breakdown_gib["gradients"]

    nccl = 688e6 / 2**30                                # the one data-parallel communicator
    ddp, grads = buffers(8)
    assert grads == pytest.approx(4 * 1.236e9 / 2**30, rel=0.02)
    assert ddp == pytest.approx(nccl + grads, rel=0.01)
    assert buffers(1)[0] == 0.0
    lora, adapter_grads = buffers(8, "lora")
    assert lora == pytest.approx(nccl + adapter_grads, rel=0.01) and adapter_grads < 0.1


def test_fsdp_holds_its_gathered_layers_and_gradient_buffers_in_the_phases_fsdp2_makes_them():
    """FSDP2 ZeRO-3: forward holds two gathered bf16 layers (the one computing and the prefetched
    next, 4 bytes a layer parameter) and no gradient buffer; backward adds one layer's bf16
    gradient and its fp32 reduce-scatter input (10 bytes in all); the optimizer step holds none,
    since post_backward reshards every layer and the root's final callback frees the
    reduce-scatter buffers before optimizer.step (torch _fsdp_state.py). Llama 3 8B on 8 GPUs
    held 2 GiB of them through the step, 1.2 too many in forward."""
    from shardwise.kb.params import layer_params
    job = build_job(model="llama-3-8b", gpus=8, seq_len=8192, framework="fsdp")
    ph = mem(job, "dp=8,zero=3,mbs=1,recompute=none").phases()
    buf = {name: ph[name]["live_gib"]["comm_buffers"] for name in ph}
    nccl = buf["optimizer-step"]
    lp = layer_params(job.model, False)
    layer = (lp.tp_sharded + lp.replicated) / 2**30          # GiB a byte a layer parameter takes
    assert nccl == pytest.approx(688e6 / 2**30, abs=2e-3)     # one DP communicator, nothing else
    assert buf["forward"] == pytest.approx(nccl + 4 * layer, abs=2e-3)
    assert buf["backward-start"] == pytest.approx(nccl + 10 * layer, abs=2e-3)
    assert buf["backward-end"] == buf["backward-start"]


def test_per_module_recompute_fits_nvidias_deepseek_v3_layout_on_gb200():
    """NVIDIA's DeepSeek-V3 layout on 256 GB200 (PP 4 x VP 4, EP 64, micro-batch 1, 4K tokens,
    MXFP8 under full-iteration CUDA graphs: the NeMo 26.06 and 26.08 rows of published_runs.yaml)
    ran with the MLA up-projections recomputed (Megatron-Bridge's recipe: recompute_modules
    ["mla_up_proj"]). Without recomputation it cannot fit; with shardwise's per-module mode,
    which on an MLA model reruns the up-projections and drops their q, k and v, it must."""
    job = build_job(model="deepseek-v3", gpus=256, gpu="gb200", seq_len=4096, global_batch=2048, precision="fp8",
                    cuda_graphs="full-iteration")
    base = "tp=1,pp=4,vp=4,dp=64,ep=64,zero=1,mbs=1"
    assert not mem(job, base + ",recompute=none").fits
    assert mem(job, base + ",recompute=modules").fits


def test_mla_up_projection_recompute_drops_exactly_q_k_and_v():
    """Per token of an MLA layer under per-module recomputation, the up-projected q and k (heads x
    (nope + rope) each) and v (heads x v_head_dim) leave the saved set, 2 bytes an element, sharded
    by TP; a model without MLA keeps its attention as under selective recomputation."""
    from shardwise.kb.memory.activations import layer_bytes_per_token
    for name, tp in (("deepseek-v3", 1), ("deepseek-v2-lite", 2)):
        job = build_job(model=name, gpus=16, seq_len=4096)
        lay, _ = resolve_layout(job, f"tp={tp},dp={16 // tp},ep=8,zero=1,mbs=1,recompute=modules")
        m = job.model
        q_k_v = 2 * (2 * m.heads * (m.qk_nope_dim + m.qk_rope_dim) + m.heads * m.v_head_dim) / tp
        sel = layer_bytes_per_token(m, job.training, lay, True, 4096, recompute="selective")
        mod = layer_bytes_per_token(m, job.training, lay, True, 4096, recompute="modules")
        dense = build_job(model="qwen3-30b-a3b", gpus=16, seq_len=4096)
        d_lay, _ = resolve_layout(dense, "dp=16,ep=8,zero=1,mbs=1,recompute=modules")
        d_sel = layer_bytes_per_token(dense.model, dense.training, d_lay, True, 4096, recompute="selective")
        d_mod = layer_bytes_per_token(dense.model, dense.training, d_lay, True, 4096, recompute="modules")
        # the norms and the expert activation go under both models' per-module mode; q, k, v only under MLA
        assert (sel - mod) - q_k_v == pytest.approx(_norm_and_act_saving(m, job.training, lay), rel=1e-9)
        assert d_sel - d_mod == pytest.approx(_norm_and_act_saving(dense.model, dense.training, d_lay), rel=1e-9)


def _norm_and_act_saving(m, t, lay):
    """What per-module recomputation drops besides MLA's q, k and v: the norms' outputs and the
    expert activation's, read from the same terms the estimate sums."""
    from shardwise.kb.memory.activations.mlp import moe_mlp_bytes
    from shardwise.kb.memory.activations.norms import residual_norm_bytes
    return (residual_norm_bytes(m, t, lay, True, "selective") - residual_norm_bytes(m, t, lay, True, "modules")
            + moe_mlp_bytes(m, t, lay, "selective") - moe_mlp_bytes(m, t, lay, "modules"))
