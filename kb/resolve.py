"""Resolve a job's batch and a user's layout text, with every assumption stated.

The global batch decides how many micro-batches a step has, and so how many a pipeline
holds in flight and how large its bubble is. It is the user's sequences, their tokens taken
as a workable sequence count, or the default of the training type (kb/batch.py); the text
for each conversion or default is in ``assumptions(job)``, the one list the output prints.
"""
from __future__ import annotations

import numpy as np

from .batch import default_batch, from_tokens
from .custom_gpu import custom_gpu_figures
from .defaults import ADAPTERS, default_texts
from .errors import InputError
from .job import Job, divisors
from .layout import Layout, parse_layout
from .validity import check_layout, tp_divides_heads

def tensor_degrees(job: Job) -> tuple[int, ...] | None:
    """For a framework without pipelining (the transformers Trainer), the TP degrees a layout may
    take inside one NVLink domain: dividing the GPU count, and as the tp-divides-heads validity
    rule allows them -- the batch is rounded for the data-parallel degrees they leave
    (kb/batch.py). None where pipeline stages reach the other data-parallel degrees."""
    c = job.cluster
    if job.training.framework != "hf":
        return None
    tps = np.array([t for t in divisors(c.gpus) if c.inside_block(t)])
    return tuple(int(t) for t in tps[tp_divides_heads(job, {"tp": tps})])


def global_batch(job: Job, layout: Layout | None = None) -> tuple[int, list[str]]:
    """Sequences per optimizer step, and the text saying how they were counted ([] when the
    user gave sequences). Never inflated to a multiple of the GPU count: a token or default batch
    moves only within 5%, to keep data-parallel choices open (kb/batch.py). With ``layout`` (a
    layout the user fixed) it moves to a count that the layout's mbs x DP divides, where one is
    within 5%."""
    t = job.training
    gpus, mbs, dp = job.cluster.gpus, (layout.mbs if layout else t.mbs), (layout.dp if layout else None)
    if t.global_batch:
        return t.global_batch, []
    tps = tensor_degrees(job)
    if t.global_batch_tokens:
        n, how = from_tokens(t.global_batch_tokens, t.seq_len, gpus, mbs, dp, tps)
        return n, [f"global batch {how}"]
    n, text = default_batch(t.training, t.seq_len, gpus, mbs, dp, tps)
    return n, [text]


def assumptions(job: Job, layout: Layout | None = None) -> list[str]:
    """Every default and conversion behind this job's answer, in a fixed order: the framework
    chosen for the training type, the batch (default or token count taken as sequences), then
    the other settings left at their defaults. The output's ``assumptions[]``; ``layout`` as
    for global_batch."""
    texts = default_texts(job)
    framework = texts[:1] if "framework" in job.training.defaulted else []
    return (framework + global_batch(job, layout=layout)[1] + texts[len(framework):]
            + custom_gpu_figures(job.cluster.gpu) + sustained_peak(job)
            + cuda_graph_terms(job) + rlhf_scope(job) + lora_dropout_scope(job) + model_dropout_scope(job)
            + window_kernel(job)
            + list(job.model.reading_notes))


def sustained_peak(job: Job) -> list[str]:
    """Where the step time runs a GPU at other than its datasheet peak (GPUSpec.sustained_share),
    the output says so: it is why MFU on that GPU reads lower (or higher) than the speed suggests."""
    g = job.cluster.gpu
    if g.sustained_share == 1:
        return []
    return [f"{g.name} timed at {100 * g.sustained_share:.0f}% of its datasheet peak (kb/data/gpus.yaml "
            f"sustained_share: set from NVIDIA's published runs on it and put down to the clock its power limit "
            f"holds under training load); MFU is against the datasheet"]


def cuda_graph_terms(job: Job) -> list[str]:
    """What --cuda-graphs full-iteration changes in the answer, and what it asks of the run: the
    MoE host time it removes (kb/perf/step.moe_layer_overhead), the paged stash it adds
    (kb/memory/activations.paged_stash_factor), and the capacity past which a step is run again
    (kb/frameworks.RANK_CAPACITY_FACTOR, which the Megatron export writes)."""
    if job.training.cuda_graphs != "full-iteration":
        return []
    if not job.model.is_moe:
        return ["cuda graphs full-iteration: no step-time change for a dense model (the step time has no host "
                "launch term to remove)"]
    from .memory.activations import PAGED_STASH_FACTOR
    from .frameworks import RANK_CAPACITY_FACTOR
    return [f"cuda graphs full-iteration: no host-side MoE dispatch or launch time; each rank's routed tokens are "
            f"padded to {RANK_CAPACITY_FACTOR}x its balanced share (a step whose routing overflows it runs again "
            f"without the graph, which the estimate, at balanced routing, does not count); the routed activations are "
            f"kept in a paged stash of {PAGED_STASH_FACTOR}x the balanced load"]


# an assumption that bounds the time and cost every command gives for the job, which a table
# of variants must keep even where every row shares it (cli/compare_cmd.said_of_rows)
RLHF_SCOPE_TAG = "rlhf:"


def rlhf_scope(job: Job) -> list[str]:
    """What an RLHF estimate covers, per --rl-algorithm: memory holds the models the algorithm
    keeps on the GPUs in its training phase, the step time only the policy's training
    (kb/perf/step.py has no critic, reference, reward or generation term). Rollout generation's
    KV cache, and under TRL at ZeRO-3 the weights it gathers for generate (ppo_trainer.py
    unwrap_model_for_generation(gather_deepspeed3_params=args.ds3_gather_for_generation)), are
    another phase, not sized."""
    t = job.training
    if t.training != "rlhf":
        return []
    rollout = ("memory is the training phase's, not rollout generation's (its KV cache; under TRL at ZeRO-3 the "
               "weights gathered for generate, ds3_gather_for_generation)")

    def timed(left_out: str) -> str:
        return (f"step time, tokens/s, time and cost count the policy's training only -- not {left_out} -- so read "
                "them as a lower bound on time")
    if t.rl_algorithm == "ppo":
        return [f"{RLHF_SCOPE_TAG} ppo: memory holds the 4 PPO models (policy and value trained, reference and reward "
                f"frozen); {rollout}; " + timed("the critic's training, the reference and reward forwards or rollout "
                                                "generation, which often dominates a PPO step")]
    if t.rl_algorithm == "grpo":
        # trl/trainer/grpo_config.py beta: "If 0.0 (default), the reference model is not loaded"
        return [f"{RLHF_SCOPE_TAG} grpo: memory holds the policy's training and a frozen reference (TRL's beta > 0: at "
                "its default 0 none is loaded, one bf16 copy less), the reward a function (a reward model would add "
                f"a frozen copy); {rollout}; " + timed("the reference's forward or the rollout generation of each "
                                                       "prompt's group, which often dominates a GRPO step")]
    # trl/trainer/dpo_trainer.py DataCollatorForPreference.torch_call: input_ids = prompt_chosen_ids
    # + prompt_rejected_ids, one forward over both; precompute_ref_log_probs or a PEFT policy drops ref_model
    return [f"{RLHF_SCOPE_TAG} dpo: memory holds the policy's training and a frozen reference (none with "
            "precompute_ref_log_probs or a PEFT policy); the batch and micro-batch count sequences, each preference "
            "pair two of them (chosen and rejected in one forward, TRL's DataCollatorForPreference), so a step trains "
            "half as many pairs; " + timed("the reference's forward over the same sequences, about a third more "
                                           "compute")]


def lora_dropout_scope(job: Job) -> list[str]:
    """Where a LoRA dropout's tensors are not in the estimate: they are sized on transformers
    layers (kb/memory/activations.own_input_copies, the hf profile: the Trainer and DeepSpeed);
    the Megatron and torch-native activation profiles size no adapter tensors."""
    from .memory.activations import profile
    t = job.training
    if t.training not in ADAPTERS or t.lora_dropout == 0 or profile(t) == "hf":
        return []
    return [f"LoRA dropout {t.lora_dropout!r}: each adapter's dropped-out input and mask (3 bytes an element) are "
            f"sized on transformers layers (--framework hf or deepspeed), not in this {t.framework} estimate, "
            "whose activations leave the adapters' tensors out"]


def model_dropout_scope(job: Job) -> list[str]:
    """How the model's own dropout (config.json's attention_dropout, residual dropout:
    ModelSpec.attn_dropout, resid_dropout) is in the answer. Transformers layers (the hf profile:
    the Trainer, DeepSpeed) keep and time it: eager attention's mask a score
    (kb/memory/activations.eager_dropout_per_score), none under SDPA or flash-attn, whose kernel
    keeps its RNG state only, and the residual dropout's masks (residual_dropout_bytes). The
    Megatron profile sizes none, as its export trains without (export/megatron/architecture.py writes
    --attention-dropout 0.0 --hidden-dropout 0.0); the torch-native one none, as torchtitan's Llama
    has no dropout."""
    from .memory.activations import BF16_SOFTMAX_FAMILIES, profile
    m, t = job.model, job.training
    given = ([f"attention_dropout {m.attn_dropout:g}"] if m.attn_dropout else []) + \
        ([f"residual dropout {m.resid_dropout:g}"] if m.resid_dropout else [])
    if not given:
        return []
    what = f"the model's dropout in training ({', '.join(given)})"
    if profile(t) == "megatron":
        return [f"{what} is not sized: the Megatron export trains without it (--attention-dropout 0.0 "
                "--hidden-dropout 0.0), and Megatron's activations here keep no dropout masks"]
    if profile(t) == "torch":
        return [f"{what} is not sized: the fsdp profile's activations are the torch-native model's (torchtitan's "
                "Llama has no dropout); a transformers model under FSDP keeps a 1-byte mask a score under eager "
                "attention and 2 x hidden bytes a token a layer of residual-dropout masks more"]
    parts = []
    if m.attn_dropout:
        bf16 = " (3 with bf16 weights: its bf16 softmax keeps the dropped copy too)" \
            if m.family in BF16_SOFTMAX_FAMILIES else ""
        parts.append(f"the attention dropout's mask kept, 1 byte a score{bf16}, and its kernel timed (eager attention)"
                     if t.attention == "eager" else
                     f"the attention dropout taken inside the {t.attention} kernel, which keeps only its RNG seed and "
                     "offset (no memory; its in-kernel RNG work is not timed)")
    if m.resid_dropout:
        parts.append("the residual dropout's 1-byte masks of the attention's and the MLP's outputs kept (2 x hidden "
                     "bytes a token a layer) and their kernels timed")
    return [f"{what}: {'; '.join(parts)}"]


def window_flash_build(job: Job):
    """Where the answer rests on which kernel transformers runs sliding windows with, the
    flash-attn build it sized them for (kb/frameworks.flash_attn_build); None elsewhere. --attention
    flash (the default) and flash2 time and size them as flash-attn's window_size runs them, while
    the Trainer's own default, sdpa, builds a dense mask past the window and computes the whole
    square (memory.activations.dense_local_mask); --attention sdpa sizes that."""
    from .build import NO_SDPA
    from .frameworks import flash_attn_build
    from .memory.activations import dense_local_mask
    from .perf.compute import WINDOWED_KERNELS
    m, t = job.model, job.training
    # models transformers runs eager by default, with no SDPA path, are left out, as are chunked
    # layers (Llama 4): no flash-attn kernel runs those, "flash" is SDPA's dense mask already.
    # flash2 sizes flash-attn 2's window as flash does flash-attn 3's (compute.WINDOWED_KERNELS)
    if t.attention not in WINDOWED_KERNELS or m.family in NO_SDPA or m.attn_softcap or not m.sliding_layers \
            or not dense_local_mask(m, t.model_copy(update={"attention": "sdpa"})):
        return None
    return flash_attn_build(t.attention, job.cluster.gpu, m.hd)


def window_kernel(job: Job) -> list[str]:
    """The answer's line for the flash-attn build its sliding windows were sized for
    (window_flash_build); [] where the answer does not rest on one."""
    build = window_flash_build(job)
    if build is None:
        return []
    m, t = job.model, job.training
    kernel = f"attn_implementation {build.impl}" + (f", {build.no_fa3}" if build.no_fa3 else "") \
        + (f"; --attention flash2 for {build.other}" if build.other else "")
    return [f"attention {t.attention}: {m.name}'s {m.sliding_layers} sliding-window layers ({m.sliding_window:,} "
            f"tokens) are timed and sized as a flash-attn kernel runs them ({kernel}); transformers' "
            f"default, sdpa, masks them with a dense {t.seq_len:,} x {t.seq_len:,} mask and computes the whole "
            f"square: --attention sdpa for that"]


def grad_accum_for(gb: int, mbs: int, dp: int) -> int:
    if gb % (mbs * dp):
        raise InputError(f"global batch {gb} is not divisible by mbs x dp = {mbs} x {dp}; "
                         f"choose a global batch that is a multiple of {mbs * dp}")
    return gb // (mbs * dp)


def _layout_defaults(job: Job, lay: Layout, keys: set) -> list[str]:
    """The assumption line for the settings --layout left out that took a default and matter to
    this job: ZeRO 0 (no sharding: the full optimizer states on every replica) matters where
    there is more than one replica, VP where there is a pipeline, EP for an MoE model (ETP where
    it has EP), SP where there is TP."""
    t = job.training
    shown = [("tp", True), ("pp", True), ("vp", lay.pp > 1), ("cp", True), ("ep", job.model.is_moe),
             ("etp", job.model.is_moe and lay.ep > 1), ("zero", lay.dp * lay.cp > 1), ("sp", lay.tp > 1),
             ("mbs", not t.mbs), ("recompute", t.recompute in (None, "auto"))]
    left = [k for k, matters in shown if matters and k not in keys]
    if not left:
        return []
    value = lambda k: ("on" if lay.sp else "off") if k == "sp" else getattr(lay, k)  # noqa: E731
    return [f"--layout left out {', '.join(left)}: taken as {', '.join(f'{k}={value(k)}' for k in left)}"]


def resolve_layout(job: Job, text: str) -> tuple[Layout, list[str]]:
    lay, keys = parse_layout(text, job.cluster.gpus, job.training.framework)
    t = job.training
    for key, flag, given in (("mbs", "--mbs", t.mbs), ("recompute", "--recompute", t.recompute)):
        # both name the setting: one answer, or the user is told which they meant
        if key in keys and given not in (None, 0, "auto") and getattr(lay, key) != given:
            raise InputError(f"{flag} {given} and --layout {key}={getattr(lay, key)} disagree; give it in one place")
    if "mbs" not in keys and job.training.mbs:
        lay = lay.with_(mbs=job.training.mbs)
    if "recompute" not in keys and job.training.recompute not in ("auto",):
        lay = lay.with_(recompute=job.training.recompute)
    user_batch = bool(job.training.global_batch or job.training.global_batch_tokens)
    if "grad_accum" in keys and not user_batch:        # the layout's ga sets the batch: no default used
        notes = [n for n in assumptions(job) if n not in global_batch(job)[1]]
    else:
        notes = assumptions(job, lay)
        gb, _ = global_batch(job, layout=lay)
        if "grad_accum" not in keys:
            if gb < lay.mbs * lay.dp:
                raise InputError(f"global batch {gb} sequences is smaller than mbs x dp = {lay.mbs * lay.dp}; "
                                 "give a larger --global-batch(-tokens) or a layout with a smaller mbs x dp")
            lay = lay.with_(grad_accum=grad_accum_for(gb, lay.mbs, lay.dp))
        elif lay.global_batch != gb:
            raise InputError(f"layout ga={lay.grad_accum} gives a global batch of {lay.global_batch} sequences, "
                             f"not the {gb} of --global-batch{'-tokens' if job.training.global_batch_tokens else ''}")
    notes = notes + _layout_defaults(job, lay, keys)
    held = lay.canonical(job.model.is_moe)
    if held != lay:
        # as the search and the exports hold it, so that memory and export print the same layout
        notes = notes + [f"zero={lay.zero} over one data-parallel rank shards nothing: read as zero=0"]
        lay = held
    check_layout(job, lay)
    return lay, notes
