"""Named validity rules: the layouts a framework can run, written once.

Each rule is a predicate over a layout's settings given as a dict of numbers *or* of arrays
(``a["tp"]``, ``a["pp"]`` ... ``a["rc"]`` indexes kb/layout.RECOMPUTE), so the same rule refuses
one ``--layout`` (``check_layout``) and filters the search's whole space (search/space.py, which
reports how many candidates each rule removed). These are hard limits of the frameworks
(Megatron-Core TransformerConfig and validate_args, torchtitan ParallelDims, DeepSpeed's pipeline
engine), not preferences; the playbook's preferences and house policies are rules (rules/*.yaml).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .defaults import ADAPTERS
from .errors import InputError
from .frameworks import ULYSSES_FRAMEWORKS, autoep_families, megatron_cp_a2a, autoep_preset, has_sequence_parallel, recompute_modes
from .layout import RECOMPUTE, Layout
from .memory.activations import torchtitan_runs
from .stages import takes_slots

ALWAYS = "always"


@dataclass(frozen=True)
class Validity:
    id: str
    why: str                    # the framework limit, with its source
    ok: Callable                # (job, a) -> bool or bool array
    refusal: Callable           # (job, lay) -> the one-line refusal for a single layout


def _all(a):
    return np.ones_like(a["tp"], dtype=bool)


def tp_divides_heads(job, a):
    m = job.model
    return (m.heads % a["tp"] == 0) & ((m.kv_heads % a["tp"] == 0) | (a["tp"] % m.kv_heads == 0))


def _tp_heads_refusal(job, lay):
    m = job.model
    if m.heads % lay.tp:
        allowed = ", ".join(str(d) for d in range(1, min(m.heads, job.cluster.gpus) + 1) if m.heads % d == 0)
        return f"tp={lay.tp} does not divide the {m.heads} attention heads of {m.name}; allowed tp: {allowed}"
    return f"tp={lay.tp} and the {m.kv_heads} KV heads of {m.name} do not divide one another"


def _pp_layers(job, a):
    return a["pp"] <= job.model.layers


def _cp_sequence(job, a):
    s = job.training.seq_len
    return (a["cp"] == 1) | (s % (2 * a["cp"]) == 0)


def _loss_chunks(job, a):
    """torchtitan's ChunkedLossWrapper splits each rank's sequence (the CP shard) into equal
    chunks (components/loss.py _chunk_local: torch._check(seq_len % num_chunks == 0))."""
    from .memory.logits import loss_chunks
    n = loss_chunks(job.training)
    if n == 1:
        return _all(a)
    s = job.training.seq_len
    local = s // np.maximum(a["cp"], 1)
    return (s % np.maximum(a["cp"], 1) == 0) & (local % n == 0)


def _pipeline_slots(job, a):
    """Layers' places in the pipeline split: L, or L + 2 where the embedding and the loss take a
    place each (kb/stages.takes_slots)."""
    return job.model.layers + 2 * takes_slots(job.model.layers, a["pp"])


def _vp_chunks(job, a):
    return (a["vp"] == 1) | ((a["pp"] > 1) & (a["pp"] * a["vp"] <= _pipeline_slots(job, a)))


def _vp_microbatches(job, a):
    """Megatron-Core's interleaved schedule runs micro-batches in groups of pp per model chunk and
    refuses a count that leaves a last group smaller than pp (schedules.py
    forward_backward_pipelining_with_interleaving: microbatch_group_size_per_vp_stage, pp by
    default, and "The remainder of M ... should be 0, or larger than or equal to the
    pipeline-parallel size"): the micro-batches per step must be a multiple of pp. torch's
    ScheduleInterleaved1F1B (torchtitan) runs max(1, m // pp) rounds and refuses an m they do not
    divide (torch/distributed/pipelining/schedules.py)."""
    m, p, fw = a["grad_accum"], a["pp"], job.training.framework
    if fw == "megatron":
        fits = m % p == 0
    elif fw == "fsdp":
        fits = m % np.maximum(1, m // p) == 0
    else:
        return _all(a)          # no interleaved schedule at all: vp-framework says so
    return (a["vp"] == 1) | fits


def _vp_microbatches_refusal(job, lay):
    if job.training.framework == "megatron":
        return (f"vp={lay.vp} with pp={lay.pp} needs the micro-batches per step (grad_accum={lay.grad_accum}) "
                f"to be a multiple of pp: Megatron-Core's interleaved schedule runs them in groups of pp; "
                f"change the global batch or micro-batch, or use vp=1")
    rounds = max(1, lay.grad_accum // lay.pp)
    return (f"vp={lay.vp} with pp={lay.pp}: torch's interleaved 1F1B runs grad_accum={lay.grad_accum} "
            f"micro-batches in {rounds} rounds, which must divide them; change the global batch or "
            f"micro-batch, or use vp=1")


def _vp_framework(job, a):
    return (a["vp"] == 1) | (job.training.framework in ("megatron", "fsdp"))


def _torch_stage_split(job, a):
    """torchtitan builds ceil((L + 2) / k) virtual stages of k layers each (the embedding and the
    output count as one each; pipeline_parallel_layers_per_stage, generate_llm_fqn_per_model_part)
    and refuses a count PP does not divide: an interleaved layout must be one that some k builds,
    k = ceil((L + 2) / (PP x VP))."""
    if job.training.framework != "fsdp":
        return _all(a)
    slots, stages = job.model.layers + 2, a["pp"] * a["vp"]
    per = -(-slots // stages)
    return (a["vp"] == 1) | (-(-slots // per) == stages)


def _torch_stage_refusal(job, lay):
    slots, stages = job.model.layers + 2, lay.pp * lay.vp
    per = -(-slots // stages)
    ok = [v for v in range(2, 17) if -(-slots // -(-slots // (lay.pp * v))) == lay.pp * v]
    return (f"pp={lay.pp} x vp={lay.vp} = {stages} virtual stages, but torchtitan splits {job.model.layers} layers + "
            f"embedding + output into stages of {per}, which makes {-(-slots // per)}; vp that work at pp={lay.pp}: "
            f"{', '.join(map(str, ok)) or 'none'} (or vp=1)")


def _ulysses_heads(job, a):
    """DeepSpeed's Ulysses (the CP of the Trainer and DeepSpeed) splits the attention heads over
    the CP ranks: UlyssesSPAttentionHF refuses heads CP does not divide, and KV heads that
    neither divide CP nor are divided by it (fewer are replicated)."""
    if job.training.framework not in ULYSSES_FRAMEWORKS:
        return _all(a)
    m, cp = job.model, a["cp"]
    heads, kv = m.heads // a["tp"], np.maximum(m.kv_heads // a["tp"], 1)
    return (cp == 1) | ((heads % cp == 0) & ((kv % cp == 0) | (cp % kv == 0)))


def _megatron_a2a_heads(job, a):
    """Megatron's CP on a masking sliding window or attention sinks is TE's all-to-all
    (kb/frameworks.megatron_cp_a2a), which splits a rank's query and KV heads over the CP ranks
    and asserts CP divides both (no replication of fewer KV heads)."""
    m, t = job.model, job.training
    if t.framework != "megatron" or not megatron_cp_a2a(m, t.seq_len):
        return _all(a)
    cp = a["cp"]
    heads, kv = m.heads // a["tp"], np.maximum(m.kv_heads // a["tp"], 1)
    return (cp == 1) | ((heads % cp == 0) & (kv % cp == 0))


def _megatron_a2a_refusal(job, lay):
    m = job.model
    why = "attention sinks" if m.attn_sinks else f"{m.sliding_window}-token sliding window"
    return (f"cp={lay.cp} with tp={lay.tp}: {m.name}'s {why} needs Megatron's --cp-comm-type a2a (Transformer Engine's "
            f"ring refuses it), which splits the {m.heads // lay.tp} query and {max(m.kv_heads // lay.tp, 1)} KV heads "
            "of a rank over the CP ranks; use a cp that divides both (or a smaller tp)")


def _ep_experts(job, a):
    m = job.model
    if not m.is_moe:
        return a["ep"] == 1
    return m.experts % a["ep"] == 0


def _ep_stage(job, a):
    return (a["tp"] * a["cp"] * a["dp"]) % a["ep"] == 0


def _sp_tp(job, a):
    return (a["sp"] == 0) | (a["tp"] > 1)


def _sp_sequence(job, a):
    """Megatron's sequence parallelism scatters each CP rank's seq / cp tokens over the TP ranks
    (the embedding's scatter_to_sequence_parallel_region; megatron/core/tensor_parallel/mappings.py
    _split_along_first_dim asserts "First dimension of the tensor should be divisible by tensor
    parallel size"), so they must divide by TP; the micro-batch does not help ([s, b, h]). torch's
    SequenceParallel (fsdp) shards with DTensor, which pads an uneven shard."""
    if job.training.framework != "megatron":
        return _all(a)
    s, cp = job.training.seq_len, np.maximum(a["cp"], 1)
    return (a["sp"] == 0) | ((s % cp == 0) & ((s // cp) % a["tp"] == 0))


def _megatron_moe_sp(job, a):
    """Megatron-Core's MoE layer refuses to train with TP > 1 and sequence parallelism off:
    MoELayer.forward raises ValueError("... MoE and tensor parallelism are enabled without also
    enabling sequence parallelism") when training with an attention TP group of more than one rank
    (megatron/core/transformer/moe/moe_layer.py, megatron-core 0.19), at the first forward."""
    if job.training.framework != "megatron" or not job.model.is_moe:
        return _all(a)
    return (a["tp"] == 1) | (a["sp"] == 1)


def _sp_refusal(job, lay):
    # sp=off is no way out for an MoE model under Megatron (megatron-moe-tp-needs-sp)
    off = "" if job.model.is_moe else "sp=off, "
    return (f"sp=on with tp={lay.tp} needs each CP rank's {job.training.seq_len // lay.cp} tokens "
            f"(--seq-len {job.training.seq_len} / cp {lay.cp}) divisible by tp: Megatron's sequence "
            f"parallelism splits them over the TP ranks; use {off}another tp or cp, or a "
            f"--seq-len divisible by tp x cp = {lay.tp * lay.cp}")


def _sp_framework(job, a):
    return (a["sp"] == 0) | has_sequence_parallel(job.training.framework)


def _batch(job, a):
    gb = a["mbs"] * a["grad_accum"] * a["dp"] if "gb" not in a else a["gb"]
    return gb % (a["mbs"] * a["dp"]) == 0


def _dpo_pairs(job, a):
    t = job.training
    return (a["mbs"] % 2 == 0) | (t.training != "rlhf") | (t.rl_algorithm != "dpo")


def _under(framework: str, ok: Callable) -> Callable:
    """A limit of one framework: ``ok(a)`` under it, every layout elsewhere."""
    return lambda job, a: ok(a) if job.training.framework == framework else _all(a)


_deepspeed_pipeline = _under("deepspeed", lambda a: (a["pp"] == 1) | (a["zero"] <= 1))
_hf_pipeline = _under("hf", lambda a: a["pp"] == 1)
_fsdp_zero = _under("fsdp", lambda a: a["zero"] != 1)


def _deepspeed_pure_bf16(job, a):
    """DeepSpeed keeps bf16 master weights and optimizer states only in its ZeRO optimizers
    (bf16_master_weights_and_grads, bf16_optimizer_states: runtime/precision_config.py, which
    config.py asserts for ZeRO 1-3); at ZeRO-0 its bf16 wrapper keeps fp32 masters and fp32 states
    whatever the JSON says (engine.py _configure_optimizer), which is not pure-bf16."""
    t = job.training
    if t.framework == "deepspeed" and t.precision == "pure-bf16":
        return a["zero"] >= 1
    return _all(a)


def _deepspeed_moe(job, a):
    """DeepSpeed without an AutoEP preset for the model: the MoE layer is deepspeed.moe.layer.MoE
    in the model code, which ZeRO-3 refuses."""
    if job.training.framework != "deepspeed" or autoep_preset(job.model.family):
        return _all(a)
    return (a["ep"] == 1) | (a["zero"] <= 2)


def _hf_experts(job, a):
    """The Trainer has expert parallelism only through DeepSpeed's AutoEP (a ds_config with ZeRO):
    for a family AutoEP has a preset for, at ZeRO >= 1 (at ZeRO-0 the estimate is the Trainer on
    plain DDP, fp32 weights under autocast, which has none)."""
    if job.training.framework != "hf":
        return _all(a)
    return (a["ep"] == 1) | ((a["zero"] >= 1) & bool(autoep_preset(job.model.family)))


def expert_parallel_runs(job) -> bool:
    """Whether the job's framework can run expert parallelism for its model at all: an MoE model,
    not LoRA / QLoRA outside Megatron (_adapter_experts), and under the Trainer a family DeepSpeed
    AutoEP has a preset for (_hf_experts). The job fact train.expert_parallel, which
    rules/ep.yaml reads so as not to prefer what no layout can do."""
    m, t = job.model, job.training
    if not m.is_moe or (t.training in ADAPTERS and t.framework != "megatron"):
        return False
    return t.framework != "hf" or bool(autoep_preset(m.family))


def _autoep_limits(job, a):
    """AutoEP's limits (deepspeed 0.19.8, frameworks.yaml autoep): TP 1 (the TP these exports
    write is an mpu's, which AutoEP refuses), expert TP 1, under ZeRO-3 no Ulysses (cp) and no hpZ
    partition."""
    ok = (a["tp"] == 1) & ((a["etp"] if "etp" in a else 1) == 1)
    return ok & ((a["zero"] <= 2) | ((a["cp"] == 1) & (a["shard"] == 0)))


def _autoep(job, a):
    """AutoEP's limits for hf and deepspeed jobs whose model has a preset; under the Trainer no CP
    either (its CP is Accelerate's, not DeepSpeed's)."""
    fw = job.training.framework
    if fw not in ("hf", "deepspeed") or not autoep_preset(job.model.family):
        return _all(a)
    ok = _autoep_limits(job, a)
    if fw == "hf":
        ok = ok & (a["cp"] == 1)
    return (a["ep"] == 1) | ok


def autoep_runs(job, lay: Layout) -> bool:
    """Whether DeepSpeed AutoEP can run this layout's expert parallelism (the DeepSpeed export
    writes its expert_parallel section then, whatever the job's framework)."""
    return lay.ep > 1 and bool(autoep_preset(job.model.family)) and bool(_autoep_limits(job, settings_of(lay)))


def _autoep_refusal(job, lay):
    hf = job.training.framework == "hf"
    if lay.tp > 1:
        broken, fix = (f"tp={lay.tp}: AutoEP refuses tensor parallelism from an mpu "
                       + ("and the Trainer's TP is Accelerate's, outside DeepSpeed" if hf else
                          "(Megatron-DeepSpeed's TP, the one these exports write)"), "tp=1")
    elif lay.etp > 1:
        broken, fix = f"etp={lay.etp}: AutoEP runs expert tensor parallelism 1 only", "etp=1"
    elif hf and lay.cp > 1:
        broken, fix = f"cp={lay.cp}: the Trainer's context parallelism is Accelerate's, outside DeepSpeed", "cp=1"
    else:
        setting = f"cp={lay.cp}" if lay.cp > 1 else f"shard={lay.shard}"
        broken, fix = (f"zero=3 with {setting}: AutoEP under ZeRO-3 refuses Ulysses sequence parallelism and "
                       "hpZ partitions", "zero=2 or lower, or " + ("cp=1" if lay.cp > 1 else "no shard"))
    return f"ep={lay.ep} runs as DeepSpeed AutoEP, and {broken}; use {fix}, or ep=1"


def _recompute_framework(job, a):
    allowed = [RECOMPUTE.index(r) for r in recompute_modes(job.training.framework)]
    return np.isin(a["rc"], allowed)


def _offload(job, a):
    """Megatron-Core's activation offloading (TransformerConfig.cpu_offloading, Transformer
    Engine's get_cpu_offload_context): Megatron only; its __post_init__ refuses it with pipeline
    parallelism, with recomputation, with CUDA graphs other than a full-iteration one ("if
    self.cpu_offloading and self.cuda_graph_impl != 'full_iteration'"), with the paged stash a
    graphed MoE layer runs on ("moe_paged_stash cannot be enabled with cpu_offloading";
    export/megatron/cuda_graphs.py), and unless cpu_offloading_num_layers < num_layers
    (megatron-core 0.19.2 transformer_config.py; Megatron-Bridge docs/training/cpu-offloading.md,
    written before the full-iteration exception, says CUDA graphs of any kind)."""
    off = a["offload"]
    allowed = (job.training.framework == "megatron") & (not graphed_moe(job))
    return (off == 0) | (allowed & (a["pp"] == 1) & (a["rc"] == 0) & (off < job.model.layers))


def graphed_moe(job) -> bool:
    """A MoE model under a full-iteration CUDA graph: Megatron runs its routed activations in the
    paged stash (export/megatron/cuda_graphs.cuda_graph_args: --moe-paged-stash), which
    TransformerConfig refuses with cpu_offloading."""
    return job.model.is_moe and job.training.cuda_graphs == "full-iteration"


def _offload_refusal(job, lay):
    t = job.training
    if t.framework != "megatron":
        return (f"offload={lay.offload} is Megatron's activation offloading (--cpu-offloading-num-layers); "
                f"--framework {t.framework} has none: use offload=0, or --framework megatron")
    if graphed_moe(job):
        return (f"offload={lay.offload} with --cuda-graphs {t.cuda_graphs}: {job.model.name}'s graphed MoE layers "
                "keep their routed activations in Megatron's paged stash, which it refuses with CPU offloading; "
                "use offload=0, or --cuda-graphs none")
    return (f"offload={lay.offload}: Megatron offloads fewer layers than the {job.model.layers} of "
            f"{job.model.name} (cpu_offloading_num_layers < num_layers), with pp=1 and recompute=none; "
            f"use offload from 1 to {job.model.layers - 1}")


def _hsdp(job, a):
    n = a["dp"] * a["cp"]
    s = a["shard"]
    # the experts' shard group is shard x tp / (ep x etp) ranks (Layout.expert_shard_group)
    experts = (s * a["tp"]) % (a["ep"] * a.get("etp", 1)) == 0
    return (s == 0) | ((a["zero"] == 3) & (s > 1) & (s < n) & (n % np.maximum(s, 1) == 0) & experts)


# torchtitan forms its expert-parallel groups inside dp_shard x cp x tp ranks, never across the
# replicate dimension: ParallelDims._validate raises "expert_parallel_degree must divide
# dp_shard * cp * tp" (torchtitan 0.3 distributed/parallel_dims.py, sparse_region; the sparse mesh
# is pp x dp_replicate x efsdp x ep). Its ZeRO-0 is pure replication (export/target.dp_dims:
# dp_replicate = DP, dp_shard 1), so there EP must divide CP x TP; the HSDP rule covers a shard
# group (hsdp-shard-group), and ZeRO-2/3 shard over all of DP.
_torchtitan_ep_replicas = _under("fsdp", lambda a: (a["ep"] == 1) | (a["zero"] != 0)
                                 | ((a["cp"] * a["tp"]) % a["ep"] == 0))
# torchtitan 0.3 has no expert tensor parallelism: its experts sit on the sparse mesh
# pp x dp_replicate x efsdp x ep, EP borrowing the FSDP and TP ranks (efsdp = dp_shard x cp x tp / ep:
# config/configs.py ParallelismConfig.expert_parallel_degree, distributed/parallel_dims.py), and no
# flag sets an expert TP degree. Only where torchtitan runs the job (activations.torchtitan_runs):
# an adapter or RLHF job under fsdp is the user's own script


def _torchtitan_no_etp(job, a):
    if not torchtitan_runs(job.training):
        return _all(a)
    return np.asarray(a.get("etp", 1)) == 1


def _megatron_moe_bias_etp(job, a):
    """Megatron-Core builds no expert tensor parallelism for biased experts: TransformerConfig
    asserts "Bias in Moe is only supported when ETP==1" wherever num_moe_experts and
    add_bias_linear are both set (transformer_config.py __post_init__), and the export turns
    add_bias_linear on for a model whose linears are biased (gpt-oss)."""
    m = job.model
    if job.training.framework != "megatron" or not (m.is_moe and m.linear_bias):
        return _all(a)
    return np.asarray(a.get("etp", 1)) == 1


# torchtitan turns FSDP on whenever context parallelism is on (ParallelDims.fsdp_enabled:
# dp_shard_enabled or cp_enabled, torchtitan distributed/parallel_dims.py @ b5bcd76) and shards
# over the dp_shard x cp ranks, so a ZeRO-0 layout (pure replication) with CP is not what it runs:
# it would shard the weights over the CP ranks the estimate keeps whole.
_torchtitan_cp_shards = _under("fsdp", lambda a: (a["cp"] == 1) | (a["zero"] != 0))


def _torchtitan_tied_pipeline(job, a):
    """torchtitan refuses weight tying with pipeline parallelism at start (models/common/decoder.py
    Decoder.Config.update_from_config: "Weight tying is not supported with Pipeline Parallel",
    torchtitan 0.3): a tied model (Llama 3.2, Gemma, Qwen2.5 small) runs unpipelined under fsdp."""
    if job.training.framework != "fsdp" or not job.model.tied:
        return _all(a)
    return a["pp"] == 1


def _adapter_megatron(job, a):
    t = job.training
    if t.training in ADAPTERS and t.framework == "megatron":
        return a["zero"] == 0
    return _all(a)


def _adapter_experts(job, a):
    """PEFT's adapters wrap transformers' own MoE layer (kb/memory/peft_experts); expert
    parallelism replaces it (DeepSpeed AutoEP or its MoE layer, torchtitan's), and what PEFT
    then adapts is not modelled: EP 1 for LoRA / QLoRA outside Megatron."""
    t = job.training
    if t.training in ADAPTERS and t.framework != "megatron":
        return a["ep"] == 1
    return _all(a)


def _adapter_pipeline(job, a):
    """PEFT's adapters sit in a transformers model, which DeepSpeed's pipeline engine does not
    take: it needs a PipelineModule the model is not (hf-no-pipeline's reason; the Trainer, which
    the DeepSpeed export's PEFT script runs under, never builds one): PP 1 for LoRA / QLoRA under
    DeepSpeed. (The Trainer has no pipeline at all; an FSDP2 script may split its PEFT model with
    torch.distributed.pipelining, as the fsdp export's mesh leaves to it.)"""
    t = job.training
    if t.training in ADAPTERS and t.framework == "deepspeed":
        return a["pp"] == 1
    return _all(a)


def _pipelining_frameworks(job) -> str:
    """The other frameworks a refusal of pp > 1 may name for this job: not DeepSpeed for LoRA /
    QLoRA (adapters-pipeline), only build.QLORA_FRAMEWORKS for QLoRA (Megatron has no 4-bit base)."""
    from .build import QLORA_FRAMEWORKS
    t = job.training
    names = [f for f in ("deepspeed", "megatron", "fsdp") if f != t.framework
             and not (t.training in ADAPTERS and f == "deepspeed") and (t.training != "qlora" or f in QLORA_FRAMEWORKS)]
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


def _loss_chunks_refusal(job, lay) -> str:
    from .memory.logits import loss_chunks
    n, s = loss_chunks(job.training), job.training.seq_len
    where = f"each rank's {s // lay.cp} tokens (--seq-len {s} over cp={lay.cp})" if lay.cp > 1 else f"--seq-len {s}"
    return (f"torchtitan's loss runs in {n} equal sequence chunks and {where} does not divide by {n}; "
            f"use a sequence or cp that does, or --loss-chunks 1 (or another divisor)")


def _cp_fused_attention(job, a):
    """Context parallelism runs ring attention over a fused kernel: Transformer Engine's
    (Megatron), torch's context_parallel over SDPA (torchtitan, Accelerate). Eager attention,
    which materialises the score matrix, has no CP path."""
    if job.training.attention == "eager":
        return a["cp"] == 1
    return _all(a)


def _ulysses_local_attention(job, a):
    """DeepSpeed's Ulysses (cp > 1 under hf and deepspeed) sets transformers' attention mask to
    None before the core attention runs (deepspeed/runtime/sequence_parallel/ulysses_sp.py,
    register_with_transformers: uattn_wrapper), so where the model's sliding-window or chunked
    layers reach attention through that mask -- transformers' SDPA (memory.activations
    .dense_local_mask), which runs them causal without it -- every layer attends over the whole
    sequence: another model. flash-attn takes the window from the module (flash_attention_forward
    sliding_window=), and below the window or chunk the mask is the causal one anyway."""
    from .memory.activations import dense_local_mask
    m, t = job.model, job.training
    span = m.sliding_window or m.attn_chunk
    if t.framework not in ULYSSES_FRAMEWORKS or t.seq_len <= span or not dense_local_mask(m, t):
        return _all(a)
    return a["cp"] == 1


def _ulysses_local_refusal(job, lay) -> str:
    m = job.model
    kind, span = (("sliding-window", m.sliding_window) if m.sliding_layers else ("chunked", m.attn_chunk))
    layers = m.sliding_layers or m.chunked_layers
    fix = "use cp=1" + (", or --attention flash or flash2 (flash-attn applies the window itself)"
                        if m.sliding_layers else "")
    return (f"cp={lay.cp} under --framework {job.training.framework} is DeepSpeed's Ulysses, which drops "
            f"transformers' attention mask: {m.name}'s {layers} {kind} layers ({span:,} tokens) would attend over the "
            f"whole {job.training.seq_len:,}-token sequence under --attention {job.training.attention}; {fix}")


def _qlora_tp(job, a):
    if job.training.training == "qlora":
        return (a["tp"] == 1) & (np.asarray(a.get("etp", 1)) == 1)
    return _all(a)


VALIDITY = [
    Validity("tp-divides-heads", "TP must divide the attention heads, and the KV heads must divide TP or it "
             "them (Megatron-Core TransformerConfig)", tp_divides_heads, _tp_heads_refusal),
    Validity("pp-within-layers", "every pipeline stage needs at least one layer",
             _pp_layers, lambda job, lay: f"pp={lay.pp} exceeds the {job.model.layers} layers of {job.model.name}"),
    Validity("cp-splits-sequence", "CP needs the sequence divisible by 2 x CP (load-balanced ring attention)",
             _cp_sequence, lambda job, lay: f"cp={lay.cp} needs --seq-len {job.training.seq_len} divisible by 2 x cp "
                                            "(load-balanced ring attention splits each sequence into 2 x cp chunks)"),
    Validity("loss-chunks-split-sequence", "torchtitan's chunked loss (ChunkedLossWrapper) splits each rank's "
             "sequence into equal chunks", _loss_chunks, _loss_chunks_refusal),
    Validity("cp-fused-attention", "CP shards a fused attention kernel with ring attention (Transformer Engine, torch "
             "context_parallel over SDPA); eager attention has no CP path", _cp_fused_attention,
             lambda job, lay: f"cp={lay.cp} with --attention eager: context parallelism rings a fused attention kernel "
                              f"(Transformer Engine, or torch's context_parallel over SDPA); use cp=1 or --attention "
                              f"sdpa/flash"),
    Validity("vp-chunks", "interleaving needs PP > 1 and at least one layer per chunk (PP x VP <= layers, the embedding and "
             "loss counting as one each where they take a place in the split, kb/stages.pipeline_slots; "
             "uneven chunks as Megatron-Core's --pipeline-model-parallel-layout builds them, export/megatron/parallel.py)",
             _vp_chunks,
             lambda job, lay: f"pp x vp = {lay.chunks} model chunks exceed the {job.model.layers} layers"
                              f"{' + embedding + loss' if _pipeline_slots(job, {'pp': lay.pp}) > job.model.layers else ''} "
                              f"of {job.model.name}; each chunk needs at least one"),
    Validity("vp-framework", "only Megatron and torch pipelining (fsdp) have an interleaved schedule; "
             "DeepSpeed's pipeline engine has none", _vp_framework,
             lambda job, lay: f"vp={lay.vp} but --framework {job.training.framework} has no interleaved pipeline "
                              "schedule; use vp=1, or megatron/fsdp"),
    Validity("torch-stage-split", "torchtitan's interleaved pipeline builds virtual stages of equal layer "
             "counts (the embedding and the output as a layer each) and needs PP x VP of them",
             _torch_stage_split, _torch_stage_refusal),
    Validity("ulysses-splits-heads", "DeepSpeed's Ulysses (the Trainer's and DeepSpeed's CP) splits the "
             "attention heads over the CP ranks: CP must divide them, and divide the KV heads or be divided by them",
             _ulysses_heads,
             lambda job, lay: f"cp={lay.cp} under --framework {job.training.framework} is DeepSpeed's Ulysses, which "
                              f"splits the {job.model.heads // lay.tp} attention heads (and {job.model.kv_heads} KV heads) "
                              "of a rank over the CP ranks; use a cp that divides them"),
    Validity("ulysses-keeps-local-attention", "DeepSpeed's Ulysses drops transformers' attention mask, which "
             "carries the sliding windows and chunks of SDPA's local layers: with them past the window it would "
             "train another model", _ulysses_local_attention, _ulysses_local_refusal),
    Validity("megatron-cp-a2a-heads", "Megatron's CP on a masking sliding window or attention sinks runs "
             "Transformer Engine's all-to-all (its ring refuses them), which needs CP to divide a rank's query and "
             "KV heads (context_parallel.py attn_forward_func_with_cp, AttnFuncWithCPAndQKVOA2A)",
             _megatron_a2a_heads, _megatron_a2a_refusal),
    Validity("ep-divides-experts", "EP splits the experts of an MoE model: it must divide them (and is 1 for a "
             "dense model)", _ep_experts,
             lambda job, lay: (f"ep={lay.ep} does not divide the {job.model.experts} experts of {job.model.name}"
                               if job.model.is_moe else f"ep={lay.ep} but {job.model.name} has no experts; use ep=1")),
    Validity("ep-divides-stage", "EP must divide the TP x CP x DP ranks of a stage (Megatron-Core expert "
             "data parallelism)", _ep_stage,
             lambda job, lay: f"ep={lay.ep} must divide tp x cp x dp = {lay.tp * lay.cp * lay.dp}"),
    Validity("sp-needs-tp", "sequence parallelism shards what TP replicates: it needs TP > 1", _sp_tp,
             lambda job, lay: "sp=on needs tp > 1"),
    Validity("sp-framework", "sequence parallelism exists in Megatron-LM and torch's TP plans only "
             "(kb/data/frameworks.yaml: sequence_parallel)", _sp_framework,
             lambda job, lay: f"sp=on but --framework {job.training.framework} has no sequence parallelism; "
                              "use sp=off, or megatron/fsdp"),
    Validity("sp-splits-sequence", "Megatron's sequence parallelism splits each CP rank's sequence over the TP "
             "ranks: seq / cp must divide by TP (tensor_parallel/mappings.py _split_along_first_dim)", _sp_sequence,
             _sp_refusal),
    Validity("megatron-moe-tp-needs-sp", "Megatron-Core's MoE layer trains with TP > 1 only under sequence "
             "parallelism (moe/moe_layer.py MoELayer.forward raises ValueError otherwise)", _megatron_moe_sp,
             lambda job, lay: f"tp={lay.tp} with sp=off under --framework megatron: Megatron-Core's MoE layer refuses "
                              f"to train {job.model.name} with tensor parallelism and no sequence parallelism "
                              "(MoELayer.forward raises ValueError at the first step); use sp=on, or tp=1"),
    Validity("batch-divides", "the global batch must be a multiple of micro-batch x DP", _batch,
             lambda job, lay: f"the global batch is not a multiple of mbs x dp = {lay.mbs * lay.dp}"),
    Validity("dpo-pairs", "DPO runs each preference pair as two sequences, chosen and rejected, in one forward "
             "(trl/trainer/dpo_trainer.py DataCollatorForPreference.torch_call: input_ids = prompt_chosen_ids + "
             "prompt_rejected_ids): a micro-batch of sequences holds whole pairs, an even count", _dpo_pairs,
             lambda job, lay: f"mbs={lay.mbs} under --rl-algorithm dpo: a micro-batch counts sequences, and each "
                              "preference pair is two (chosen and rejected, one forward); use an even mbs"),
    Validity("vp-microbatches", "an interleaved pipeline runs its micro-batches in groups of PP: Megatron-Core "
             "needs their count a multiple of PP, torch's Interleaved1F1B a multiple of its rounds "
             "(max(1, m // PP))", _vp_microbatches, _vp_microbatches_refusal),
    Validity("deepspeed-pipeline-zero", "DeepSpeed's pipeline engine runs ZeRO-0/1 only "
             "(ZeRO-2/3 are incompatible with pipeline parallelism)", _deepspeed_pipeline,
             lambda job, lay: f"DeepSpeed's pipeline engine runs ZeRO-0/1 only; zero={lay.zero} with pp={lay.pp} is "
                              "refused by DeepSpeed (use zero=1, or pp=1)"),
    Validity("deepspeed-pure-bf16-zero", "DeepSpeed keeps bf16 master weights and optimizer states only under "
             "ZeRO 1-3 (bf16_master_weights_and_grads, bf16_optimizer_states); at ZeRO-0 its bf16 optimizer wrapper "
             "keeps fp32 masters and states", _deepspeed_pure_bf16,
             lambda job, lay: "zero=0 with --precision pure-bf16 under --framework deepspeed: DeepSpeed's ZeRO-0 bf16 "
                              "optimizer wrapper keeps fp32 master weights and optimizer states whatever the JSON "
                              "says; use zero=1 or higher (bf16_master_weights_and_grads), or --precision bf16"),
    Validity("fsdp-no-zero1", "FSDP2 (torchtitan, an FSDP2 script) shards optimizer states only with the "
             "gradients or parameters it owns: it replicates (ZeRO-0), keeps the parameters gathered from forward "
             "to backward (reshard_after_forward=False, ZeRO-2) or reshards them (ZeRO-3); it has no ZeRO-1",
             _fsdp_zero,
             lambda job, lay: "zero=1 but --framework fsdp (FSDP2) has no ZeRO-1; use zero=2 (reshard_after_forward "
                              "False) or zero=3, or --framework megatron or deepspeed"),
    Validity("hf-no-pipeline", "the transformers Trainer runs no pipeline schedule: neither Accelerate's "
             "ParallelismConfig (dp, fsdp, tp, cp) nor its DeepSpeed integration, whose pipeline engine needs "
             "a PipelineModule the Trainer never builds (transformers docs, perf_train_gpu_many: no model "
             "supports full PP)", _hf_pipeline,
             lambda job, lay: f"pp={lay.pp} but --framework hf (the transformers Trainer) has no pipeline schedule; "
                              "use pp=1 (ZeRO-3 shards a model too big for one GPU), or --framework "
                              f"{_pipelining_frameworks(job)}"),
    Validity("deepspeed-moe-zero3", "without an AutoEP preset for the model, DeepSpeed's expert parallelism is "
             "its MoE layer (deepspeed.moe.layer.MoE) in the model code, which runs under ZeRO-0/1/2 only: "
             "the engine raises \"Native DeepSpeed MoE is not supported with ZeRO Stage 3\" "
             "(deepspeed/runtime/engine.py, _validate_zero3_moe_compatibility)", _deepspeed_moe,
             lambda job, lay: f"ep={lay.ep} with zero={lay.zero}: DeepSpeed has no AutoEP preset for "
                              f"{job.model.family} models, and its MoE layer refuses ZeRO-3 (\"Native DeepSpeed MoE "
                              "is not supported with ZeRO Stage 3\"); use zero=2 or lower, or ep=1 (ZeRO-3 then "
                              "shards the experts with the rest of the model)"),
    Validity("hf-expert-parallel", "the transformers Trainer has no expert parallelism of its own (Accelerate's "
             "ParallelismConfig is dp_replicate, dp_shard, tp and cp); it gets it from DeepSpeed's AutoEP, "
             "through the ds_config its DeepSpeed integration passes to deepspeed.initialize, for the model "
             "families AutoEP has a preset for (kb/data/frameworks.yaml: autoep), with ZeRO >= 1 here "
             "(at ZeRO-0 the estimate is the Trainer on plain DDP)", _hf_experts,
             lambda job, lay: (f"ep={lay.ep} under --framework hf needs DeepSpeed's ZeRO (zero >= 1): the "
                               "Trainer's expert parallelism is DeepSpeed AutoEP; use zero=1 or higher, or ep=1"
                               if autoep_preset(job.model.family) else
                               f"ep={lay.ep} but --framework hf (the transformers Trainer) has expert parallelism "
                               f"only through DeepSpeed AutoEP, which has no preset for {job.model.family} models "
                               f"(it has: {', '.join(autoep_families())}); use ep=1 (ZeRO-3 / FSDP shards the "
                               "experts with the rest of the model), or --framework megatron or fsdp (torchtitan)")),
    Validity("autoep-limits", "DeepSpeed AutoEP (the expert parallelism of --framework hf and deepspeed for the "
             "families it has a preset for) refuses tensor parallelism from an mpu and expert tensor parallelism, "
             "and under ZeRO-3 Ulysses sequence parallelism and hpZ partitions (deepspeed 0.19.8 engine.py "
             "_configure_autoep and _validate_zero3_moe_compatibility; docs autoep.rst)", _autoep,
             _autoep_refusal),
    Validity("recompute-framework", "each framework runs only its own recomputation modes: Megatron all four, "
             "torchtitan (fsdp) none, selective (per-op) and full, a transformers model under the Trainer or "
             "DeepSpeed none or full (whole decoder layers) -- kb/data/frameworks.yaml: recompute",
             _recompute_framework,
             lambda job, lay: f"recompute={lay.recompute} but --framework {job.training.framework} runs only "
                              f"{', '.join(recompute_modes(job.training.framework))}"),
    Validity("offload-megatron", "activation offloading to host memory is Megatron-Core's (cpu_offloading, "
             "Transformer Engine's CPU offload): it needs pp=1, no recomputation, no CUDA graphs but a dense model's "
             "full-iteration one, and fewer offloaded layers than the model has (transformer_config.py __post_init__)",
             _offload, _offload_refusal),
    Validity("hsdp-shard-group", "an HSDP shard group (the ranks of one node) needs ZeRO-3, must "
             "divide DP x CP into more than one replica, and with TP must hold whole expert-parallel groups "
             "(shard x tp a multiple of ep x etp)", _hsdp,
             lambda job, lay: f"shard={lay.shard} (HSDP) needs zero=3, must split dp x cp = {lay.dp * lay.cp} "
                              f"into more than one replica, and shard x tp = {lay.shard * lay.tp} must be a "
                              f"multiple of ep x etp = {lay.ep * lay.etp}"),
    Validity("torchtitan-ep-in-shard", "torchtitan builds its expert-parallel groups from the dp_shard x cp x tp "
             "ranks, never from replicas (ParallelDims: EP must divide dp_shard x cp x tp): under ZeRO-0, which it "
             "runs as pure replication, EP must divide CP x TP", _torchtitan_ep_replicas,
             lambda job, lay: f"ep={lay.ep} with zero=0 under --framework fsdp: torchtitan replicates over all "
                              f"{lay.dp} DP ranks (data_parallel_shard_degree 1) and builds expert parallelism from "
                              f"dp_shard x cp x tp = {lay.cp * lay.tp} ranks only, which ep={lay.ep} does not divide; "
                              "use zero=2 or 3 (FSDP over DP), or an ep that divides cp x tp"),
    Validity("torchtitan-no-etp", "torchtitan has no expert tensor parallelism: EP borrows the FSDP and TP ranks "
             "(ParallelDims' sparse mesh pp x dp_replicate x efsdp x ep)", _torchtitan_no_etp,
             lambda job, lay: f"etp={lay.etp} under --framework fsdp: torchtitan keeps each expert whole on its EP "
                              "rank (sparse mesh pp x dp_replicate x efsdp x ep, no expert-TP dimension); use etp=1, "
                              "or --framework megatron"),
    Validity("megatron-moe-bias-etp", "Megatron-Core runs biased experts (gpt-oss) with expert tensor "
             "parallelism 1 only (TransformerConfig: Bias in Moe is only supported when ETP==1)",
             _megatron_moe_bias_etp,
             lambda job, lay: f"etp={lay.etp} under --framework megatron: {job.model.name}'s experts carry biases, "
                              "which Megatron-Core shards over no expert-TP ranks (TransformerConfig asserts "
                              "ETP==1 for biased experts); use etp=1"),
    Validity("torchtitan-cp-shards", "torchtitan shards over the CP ranks whenever CP is on (ParallelDims: "
             "fsdp_enabled = dp_shard or cp), so ZeRO-0's pure replication has no CP", _torchtitan_cp_shards,
             lambda job, lay: f"cp={lay.cp} with zero=0 under --framework fsdp: torchtitan applies FSDP over the CP "
                              "ranks whenever CP is on (ParallelDims.fsdp_enabled), so the weights would not be "
                              "replicated as zero=0 says; use zero=2 or 3, or cp=1"),
    Validity("torchtitan-tied-pipeline", "torchtitan refuses weight tying with pipeline parallelism "
             "(Decoder.Config.update_from_config)", _torchtitan_tied_pipeline,
             lambda job, lay: f"pp={lay.pp} under --framework fsdp: {job.model.name} ties its input and output "
                              "embeddings, and torchtitan raises 'Weight tying is not supported with Pipeline "
                              "Parallel' at start; use pp=1, or --framework megatron"),
    Validity("qlora-no-tp", "QLoRA's 4-bit base weights (bitsandbytes Linear4bit: NF4 values packed two to a "
             "byte, with per-block scales) have no tensor-parallel sharding; they are sharded by ZeRO-3/FSDP only "
             "(Answer.AI's FSDP + QLoRA, with bnb_4bit_quant_storage in bf16), so TP 1 and expert TP 1", _qlora_tp,
             lambda job, lay: f"tp={lay.tp}, etp={lay.etp} with --training qlora: bitsandbytes' 4-bit weights have no "
                              "tensor-parallel sharding; use tp=1 and etp=1 (zero=3 shards them), or --training lora"),
    Validity("adapters-expert-parallel", "PEFT's LoRA wraps transformers' own MoE layer, which expert "
             "parallelism replaces (DeepSpeed AutoEP, torchtitan's EP): LoRA/QLoRA with EP is modelled under "
             "Megatron only", _adapter_experts,
             lambda job, lay: f"ep={lay.ep} with --training {job.training.training} under --framework "
                              f"{job.training.framework}: PEFT's adapters wrap transformers' own MoE layer, which "
                              "expert parallelism replaces; use ep=1 (ZeRO-3 shards the experts), or --framework "
                              "megatron"),
    Validity("adapters-pipeline", "PEFT's LoRA sits in a transformers model, which DeepSpeed's pipeline engine "
             "does not take (it needs a PipelineModule): LoRA/QLoRA under DeepSpeed runs PP 1", _adapter_pipeline,
             lambda job, lay: f"pp={lay.pp} with --training {job.training.training} under --framework deepspeed: "
                              "PEFT's adapters sit in a transformers model, which DeepSpeed's pipeline engine (a "
                              "PipelineModule) does not take; use pp=1 (ZeRO-3 shards the model), or --framework "
                              f"{_pipelining_frameworks(job)}"),
    Validity("adapters-megatron-zero", "LoRA with Megatron's distributed optimizer is not modelled",
             _adapter_megatron,
             lambda job, lay: "LoRA/QLoRA with Megatron's distributed optimizer is not modelled; use --framework hf, "
                              "deepspeed or fsdp for adapter training"),
]


def settings_of(lay: Layout) -> dict:
    """A layout as the dict of numbers the validity rules read."""
    return dict(lay.as_dict(), rc=RECOMPUTE.index(lay.recompute), sp=int(lay.sp))


def check_layout(job, lay: Layout) -> None:
    """Refuse a layout this job cannot run: the GPU count, then the first validity rule it breaks."""
    if lay.world != job.cluster.gpus:
        raise InputError(f"layout: tp x pp x cp x dp = {lay.tp}x{lay.pp}x{lay.cp}x{lay.dp} = {lay.world} "
                         f"but --gpus is {job.cluster.gpus}; the product must equal the GPU count")
    if job.model.is_moe and job.model.expert_ffn % lay.etp:
        raise InputError(f"layout: etp={lay.etp} does not divide the expert FFN width {job.model.expert_ffn}")
    if lay.etp > 1 and not job.model.is_moe:
        raise InputError(f"layout: etp={lay.etp} but {job.model.name} has no experts; use etp=1")
    if job.training.cuda_graphs == "full-iteration" and job.model.is_moe and lay.etp > 1:
        # the padded per-rank capacity that lets the graph capture the MoE layer needs the fused
        # grouped MLP, which runs without expert TP (Megatron-Core moe/experts.py
        # _is_fused_impl_supported: "Tensor parallelism is not supported")
        raise InputError(f"layout: etp={lay.etp} with --cuda-graphs full-iteration: the padded expert capacity "
                         "runs on Megatron's fused grouped MLP, which has no expert tensor parallelism; use etp=1, "
                         "or --cuda-graphs none")
    a = settings_of(lay)
    for rule in VALIDITY:
        if not bool(rule.ok(job, a)):
            raise InputError(f"layout: {rule.refusal(job, lay)} [{rule.id}]")


def first_failure(job, a: dict, shape: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For arrays of candidates: the index in VALIDITY of the first rule each breaks, -1 if none,
    and how many of the rules each breaks (what says which invalid candidates are nearest to
    valid: search/space._forbidding). ``shape``: the candidates' shape where ``a``'s arrays
    broadcast to it (the search's sparse grid); else they are all len(a["tp"]) long."""
    shape = shape or (len(a["tp"]),)
    out = np.full(shape, -1, dtype=np.int8)
    count = np.zeros(shape, dtype=np.int8)
    for k, rule in enumerate(VALIDITY):
        # negated before it is spread: a rule's verdict has the few values of what it reads;
        # most rules are another framework's and break nothing, which changes neither array
        broken = ~np.asarray(rule.ok(job, a), dtype=bool)
        if not broken.any():
            continue
        broken = np.broadcast_to(broken, shape)
        out[(out == -1) & broken] = k
        count += broken
    return out, count
