"""Model states per GPU: weights, gradients, fp32 master weights, optimizer states.

Bytes per parameter depend on the framework's precision recipe (``recipe``) and on which of
them the ZeRO stage shards (``sharded``). Sources per recipe are in each docstring; the
ZeRO rule is Rajbhandari et al. 2020 (stage 1 shards optimizer states and master weights,
stage 2 adds gradients, stage 3 adds the parameters), applied over ``Layout.shard_group``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..params import adapter_params, attention_projections, layer_params, mlp_projections, total_params
from ..schema import ModelSpec, TrainingSpec
from ..vec import both, maximum, minimum, where
from . import optimizers as opt
from .peft_experts import (ADAPTED_EXPERT_FAMILIES, FUSED_EXPERT_FAMILIES, expert_adapter_params, experts_stay_bf16,
                           peft_on_transformers, shared_adapter_params)

@dataclass(frozen=True)
class Recipe:
    """Bytes per parameter of each model state before sharding.

    weights:   the parameter tensor the framework keeps (bf16 copy, or fp32 in FSDP/HF)
    grads:     gradient buffer the framework keeps through the step
    master:    fp32 master weights (when weights are not already fp32)
    moments:   optimizer moments
    compute_copy: bf16 copies made for compute when weights are fp32 (autocast / FSDP
               mixed-precision unshard), held from forward to backward
    fp8_cache: FP8 copies of GEMM weights (Transformer Engine keeps the weight and its
               transpose in FP8 on Hopper: 1 + 1 byte)
    persistent_grads: the gradient buffer lives for the whole run (Megatron, DeepSpeed ZeRO-0/3,
               and a PyTorch loop with --zero-grad zeros); False = created in backward and freed
               after the step (PyTorch set_to_none; DeepSpeed ZeRO-1/2: deepspeed_zero12_grads)
    loop_kept: the gradients live for the whole run only because the loop keeps them
               (--zero-grad zeros, grads_kept), not in a framework's own buffer
    state_dtype: bytes of one optimizer-state element (4 fp32; 2 under pure-bf16)
    main_grad_copy: bytes per parameter (before sharding) of an fp32 copy of the gradient
               made for the optimizer step only (Megatron's distributed optimizer with bf16 grads)
    """

    weights: float
    grads: float
    master: float
    moments: float
    compute_copy: float = 0.0
    fp8_cache: float = 0.0
    persistent_grads: bool = True
    loop_kept: bool = False
    state_dtype: float = 4.0
    main_grad_copy: float = 0.0


def recipe(t: TrainingSpec, zero) -> Recipe:
    """The recipe for ``zero`` -- a stage, or an array of them (the search): the Trainer's
    recipe changes with ZeRO, so an array gets each field chosen per element."""
    if t.framework != "hf" or not hasattr(zero, "shape"):
        return _recipe(t, "deepspeed" if t.framework == "hf" and zero > 0 else t.framework)
    plain, ds = _recipe(t, "hf"), _recipe(t, "deepspeed")
    return Recipe(**{f.name: where(zero > 0, getattr(ds, f.name), getattr(plain, f.name)) for f in fields(Recipe)})


def megatron_grad_bytes(t: TrainingSpec) -> float:
    """Bytes per parameter of Megatron's gradient buffer (kb/data/frameworks.yaml,
    megatron.grad_buffer_bytes, with its sources): fp32 when grads are reduced in fp32."""
    from ..frameworks import profile
    return float(profile("megatron")["grad_buffer_bytes"][t.precision])


def _recipe(t: TrainingSpec, fw: str) -> Recipe:
    """The precision recipe of a framework (optimizer states: kb/memory/optimizers.py).

    megatron: bf16 params 2 and a persistent gradient buffer of ``megatron_grad_bytes`` that the
      distributed optimizer does NOT shard: megatron/core/distributed/param_and_grad_buffer.py
      allocates grad_data = torch.zeros(self.numel, dtype=self.grad_dtype) for every parameter of
      the bucket group, grad_dtype = torch.float if ddp_config.grad_reduce_in_fp32 else the
      param dtype (distributed_data_parallel_config.py grad_reduce_in_fp32, default False;
      Megatron-LM's arguments.py turns it on for --bf16 unless told otherwise), and the
      reduce-scatter only writes this rank's range of it. fp32 master 4 + Adam 8, sharded
      (Megatron-LM docs/user-guide/features/dist_optimizer.md: 6 + 12/d with fp32 grads, 4 + 16/d
      with bf16 grads -- the extra 4/d is the fp32 main-grad shard that
      distrib_optimizer.py _copy_model_grads_to_main_grads makes with .float() for the step and
      zero_grad frees again).
    deepspeed (DeepSpeed 0.19 stage_1_and_2.py, stage3.py; its estimate_zero2_model_states_mem_needs
      says 2P + 18P/N at the step): bf16 params 2, bf16 grads 2 (ZeRO-1/2 grads_in_partition and
      ZeRO-3 grad_partitions_flat_buffer are in the model dtype, as the export sets no
      data_types.grad_accum_dtype), fp32 master 4, Adam 8; the fp32 gradient partition (4) exists
      only inside step() -- ZeRO-1/2 step: flat_grad_partition.to(fp32) per param group, deleted
      after its update; ZeRO-3 _prepare_fp32_grad_for_sub_group per sub-group; FP16_Optimizer at
      ZeRO-0 flattens p.grad.to(fp32) in step and drops it after -- so it is an optimizer-step
      temporary (fp32_grad_temporary), not a state. At ZeRO-0 under DeepSpeed's pipeline engine
      with bf16 the engine takes BF16_Optimizer instead (deepspeed_bf16_pipeline).
    fsdp (PyTorch FSDP2 / torchtitan with mixed_precision_param=bfloat16): sharded fp32 params
      4 double as master weights, fp32 reduced grads 4, Adam 8; bf16 unsharded copies for compute.
      The fp32 parameters stay sharded at ZeRO-2 as at ZeRO-3: reshard_after_forward=False keeps
      only the unsharded bf16 copies from forward to backward (torch 2.13
      _fully_shard.py fully_shard docstring: "keeps the unsharded parameters in memory after
      forward"), counted as compute copies.
    hf (transformers Trainer, bf16=True): fp32 weights 4, fp32 grads 4 (freed by zero_grad's
      set_to_none), AdamW 8, bf16 autocast copies of the weights 2 (saved for backward).
      With ZeRO stages 1-3 the Trainer hands the model to DeepSpeed: the deepspeed recipe.
    pure-bf16: weights 2, grads 2, bf16 states (torch.zeros_like(p)), no fp32 master; DeepSpeed's
      ZeRO optimizer (bf16_master_weights_and_grads, which the export sets) still steps a copy of
      its partition, in bf16: 2 (stage_1_and_2.py, weights_partition = ....clone().to(dtype=
      self.master_weights_and_grads_dtype); stage3.py fp32_partitioned_groups_flat likewise).
      Megatron has no such recipe (kb/build.py refuses it), nor DeepSpeed at ZeRO-0 (kb/validity.py).
    fp8: the bf16 recipe plus Transformer Engine's FP8 weight caches (weight + transpose, 1 + 1
      byte per GEMM weight) on deepspeed. Megatron as NVIDIA's recipes run it keeps its primary
      GEMM weights in FP8 instead (NeMo / Megatron-Bridge bf16_with_fp8_mixed:
      fp8_param_gather=True, i.e. fp8_params): 1 byte of FP8 weight + 1 byte of the transpose TE
      builds for the backward, the same 2 bytes as the bf16 weight they replace, and no cache on
      top -- with the distributed optimizer or Megatron-FSDP, which --fp8-param-gather needs
      (arguments.py validate_args); at ZeRO-0 the weights stay bf16 and TE caches its FP8 copy
      (full_training_states). torchao float8 in fsdp casts per GEMM and keeps no cache.
    """
    if t.precision == "pure-bf16":
        loop = grads_kept(t) and fw not in ("megatron", "deepspeed")
        return Recipe(weights=2, grads=2, master=2.0 if fw == "deepspeed" else 0.0, moments=opt.state_bytes(t, 2.0),
                      state_dtype=2.0,
                      persistent_grads=fw in ("megatron", "deepspeed") or loop, loop_kept=loop)
    mom = opt.state_bytes(t, 4.0)
    fp8 = 2.0 if t.precision == "fp8" and fw == "deepspeed" else 0.0
    if fw == "megatron":
        g = megatron_grad_bytes(t)
        return Recipe(weights=2, grads=g, master=4, moments=mom, fp8_cache=fp8, main_grad_copy=4.0 if g < 4 else 0.0)
    if fw == "deepspeed":
        return Recipe(weights=2, grads=2, master=4, moments=mom, fp8_cache=fp8)
    return Recipe(weights=4, grads=4, master=0, moments=mom, compute_copy=2, persistent_grads=grads_kept(t),
                  loop_kept=grads_kept(t))


# DeepSpeed ZeRO-3 sub_group_size default, 1e9 elements (deepspeed/runtime/zero/config.py): the
# step makes the fp32 gradient of one sub-group of the partition at a time
DEEPSPEED_SUB_GROUP_ELEMS = 1e9


def deepspeed_bf16_pipeline(t: TrainingSpec, zero, pp: int):
    """Whether DeepSpeed runs BF16_Optimizer: bf16 weights under its pipeline engine at ZeRO-0.
    engine.py _do_optimizer_sanity_check returns BFLOAT16 when the model and gradient-accumulation
    dtypes are both bf16 and pipeline parallelism is on (the export writes no data_types, so
    grad_accum_dtype is the model's). BF16_Optimizer (bf16_optimizer.py
    _setup_for_real_optimizer) keeps the fp32 master and the optimizer states on this rank's
    data-parallel partition only -- ZeRO-1's sharding -- and a full flat gradient buffer in
    grad_accum_dtype (bf16) beside the bf16 p.grad, which the pipeline engine zeroes in place
    (pipe/engine.py clear_lp_grads) rather than frees: two full bf16 gradients."""
    return both(both(t.framework == "deepspeed", pp > 1), both(zero == 0, t.precision in ("bf16", "fp8")))


def fp32_grad_temporary(t: TrainingSpec, zero, dense_opt, expert_opt, pp: int = 1):
    """Bytes of the fp32 gradient DeepSpeed makes inside its optimizer step (see _recipe,
    deepspeed), for the rank's optimizer partition (sharded already where ZeRO or BF16_Optimizer
    shards): ZeRO-1/2 make and delete it one parameter group at a time (stage_1_and_2.py step),
    and an MoE model's experts are a group of their own (DeepSpeed's MoE param groups), so the
    larger of the dense and expert parts (``dense_opt``, ``expert_opt``); ZeRO-3 one sub-group
    (DEEPSPEED_SUB_GROUP_ELEMS) at a time. ZeRO 1-3 first flatten the group's bf16 gradients
    into a new tensor and cast that: stage_1_and_2.py step, flat_grad_partition =
    self.flatten(self.averaged_gradients[i]) then .to(fp32) before del flat_grad_partition;
    stage3.py _prepare_fp32_grad_for_sub_group, self.flatten(...).to(fp32) in one expression --
    the bf16 copy (2 bytes) is alive beside the fp32 one (4): 6 bytes an element. Under pure-bf16
    the masters are bf16 (bf16_master_weights_and_grads, ZeRO 1-3 only) and the cast to their
    dtype returns the flattened copy itself: 2 bytes an element. Zero for other frameworks."""
    if t.framework not in ("deepspeed", "hf"):
        return 0.0 * dense_opt
    group = maximum(dense_opt, expert_opt)
    if t.precision == "pure-bf16":
        flat = 2.0 * where(zero == 3, minimum(group, DEEPSPEED_SUB_GROUP_ELEMS), group)
        # no ZeRO-0 under DeepSpeed at pure-bf16 (kb/validity.py), and the Trainer's is a plain loop
        return where(zero >= 1, flat, 0.0)
    # FP16_Optimizer (ZeRO-0 without the pipeline engine, with DeepSpeed's FusedAdam: the
    # framework's AdamW, engine._configure_fp16_optimizer) casts each p.grad to fp32 in a list and
    # flattens the list into a new tensor, both at once: 8 bytes. Any other optimizer gets
    # FP16_UnfusedOptimizer, which casts parameter by parameter: 4
    flat = 2.0 if opt.implementation(t) == "adamw-fused" else 1.0
    zero_flat = 4.0 + 2.0       # the fp32 group and the flattened bf16 copy it is cast from
    cast = where(zero == 3, zero_flat * minimum(group, DEEPSPEED_SUB_GROUP_ELEMS),
                 where(both(zero == 0, pp == 1), 4.0 * flat * (dense_opt + expert_opt),
                       where(zero >= 1, zero_flat, 4.0) * group))
    # the Trainer runs DeepSpeed only at ZeRO 1-3 (its ZeRO-0 is a plain PyTorch loop)
    return where(zero >= 1, cast, 0.0) if t.framework == "hf" else cast


def deepspeed_zero12_grads(t: TrainingSpec, zero, grads, partition, persistent):
    """DeepSpeed ZeRO-1/2's bf16 gradients (deepspeed 0.19 runtime/zero/stage_1_and_2.py, with
    the export's overlap_comm and contiguous_gradients), as States takes them: (persistent_grads,
    step_grads, second_grads) from the recipe's ``grads`` and ``persistent`` and ``partition``,
    the rank's share (2 bytes a parameter / the group).

    - Not persistent: independent_gradient_partition_epilogue keeps the partition's gradients
      (averaged_gradients, views of grads_in_partition) and sets every p.grad to None
      (_clear_param_grad_only), and step() drops the partition once it is cast
      (free_grad_in_param_list, averaged_gradients[i] = None): a step's first forward holds none.
    - ZeRO-1 reduces only at the accumulation boundary: earlier micro-batches accumulate whole
      p.grad (``grads``), which the boundary backward moves into the buckets as it reduces them;
      what that backward ends with, and the step casts, is the partition (``step_grads``).
    - ZeRO-2 reduces every backward into a new grads_in_partition (copy_grads_in_partition
      allocates one once _release_ipg_buffers has dropped the last) and adds it to the
      accumulated one at the epilogue (all_grad_tensors ... add_): a later micro-batch's backward
      holds a second partition (``second_grads``).
    Other stages and frameworks keep the recipe's gradients: (persistent, grads, 0)."""
    if t.framework not in ("deepspeed", "hf"):
        return persistent, grads, 0.0
    stage12 = (zero == 1) | (zero == 2)
    return where(stage12, False, persistent), where(stage12, partition, grads), where(zero == 2, partition, 0.0)


def grads_kept(t: TrainingSpec) -> bool:
    """Whether a PyTorch loop keeps its gradients between steps: optimizer.zero_grad(
    set_to_none=False) fills them with zeros in place (torch/optim/optimizer.py zero_grad), so
    they are allocated from the first backward to the end of the run, forward included.
    Measured: h200_torch_loops.jsonl L02, L05, L11, L13 (forward-phase peaks hold the gradients)."""
    return t.zero_grad == "zeros"


@dataclass(frozen=True)
class States:
    """Bytes on one GPU for each model state, after ZeRO sharding."""

    weights: float
    grads: float
    master: float
    optimizer: float
    compute_copy: float      # bf16 copies held from forward to backward (a transient, not a state)
    fp8_cache: float
    frozen: float            # frozen weights (LoRA base, RLHF reference/reward models)
    persistent_grads: bool
    optimizer_temp: float    # extra memory during the optimizer step (foreach temporaries)
    accumulated_grads: float = 0.0   # unsharded grads held across micro-batches (FSDP under PP)
    loop_kept_grads: bool = False    # persistent only because the loop keeps them (Recipe.loop_kept)
    copies_kept: bool = False        # compute copies FSDP keeps whatever the recomputation: its
                                     # unsharded parameters (ZeRO-0/2, and ZeRO-3 under pipelining)
    step_grads: object = None        # gradients left for the optimizer step and at the end of a
                                     # step's only backward; None: ``grads`` (deepspeed_zero12_grads)
    second_grads: float = 0.0        # gradients a later micro-batch's backward makes beside the
                                     # accumulated ones before adding them (deepspeed_zero12_grads)

    def at_step(self):
        """Bytes of gradients at the optimizer step: step_grads, or ``grads`` where unset."""
        return self.grads if self.step_grads is None else self.step_grads


def _shard(b: float, on, group):
    """``b`` bytes, or b / group where ``on``: ZeRO's partition of a state over its data-parallel
    group (Rajbhandari et al. 2020, section 5)."""
    return where(on, b / group, b)


def full_training_states(params_rank: float, gemm_rank: float, expert_rank: float, t: TrainingSpec,
                         zero: int, group: int, expert_group: int, pp: int = 1, largest: float = 0.0,
                         experts_cast: bool = False) -> States:
    """States of a fully trained model (pretrain / finetune): ZeRO-sharded per Rajbhandari et al.

    ``params_rank``: dense parameters on this rank after TP/PP; ``expert_rank``: routed expert
    parameters after EP x ETP, sharded over the expert-data-parallel group instead
    (Megatron-LM PR #4687). Stage 1 shards master + moments (+ DeepSpeed's fp32 grad
    partition), stage 2 adds grads, stage 3 adds weights.
    """
    r = recipe(t, zero)
    fsdp = t.framework == "fsdp"
    bf16_pipe = deepspeed_bf16_pipeline(t, zero, pp)

    def per(b_per_param: float, min_stage: int, also=False) -> float:
        """Bytes of a state of ``b_per_param`` a parameter: dense over ``group``, experts over
        ``expert_group``, sharded from ZeRO stage ``min_stage`` on (or where ``also``)."""
        on = (zero >= min_stage) | also
        return _shard(params_rank * b_per_param, on, group) + _shard(expert_rank * b_per_param, on, expert_group)

    weights = per(r.weights, 2 if fsdp else 3)
    grads = per(r.grads, 2) + where(bf16_pipe, per(r.grads, 2), 0.0)
    master = per(r.master, 1, bf16_pipe)
    moments = per(r.moments, 1, bf16_pipe)
    # fp32 weights double as master when the recipe keeps fp32 weights (fsdp/hf). Autocast casts
    # the weights of the ops on its bf16 list, the projections and the LM head (F.linear), not
    # the input embedding (F.embedding), the norms, or transformers' fp32 experts, whose matmuls
    # autocast does not cast (kb/perf/compute.expert_gemm_rate) -- but Llama 4's, whose bmm it
    # does (``experts_cast``: activations.experts_cast_by_autocast)
    compute_copy = where(zero < 3, (gemm_rank - (0.0 if experts_cast else expert_rank)) * r.compute_copy, 0.0)
    unsharded_kept = (zero == 2) | (zero == 0)
    if fsdp:
        # FSDP2 ZeRO-2 (reshard_after_forward=False): every parameter's unsharded bf16 copy, the
        # embedding and norms included (MixedPrecisionPolicy casts all), from its forward until
        # its layer's backward reshards it (reshard_after_backward, default True). ZeRO-0 too, as
        # the FSDP2 export runs it (fully_shard over a 1-wide dp_shard, reshard_after_forward=False,
        # export/fsdp.py), and torchtitan wherever CP turns FSDP on; torchtitan's ZeRO-0 without
        # CP is DDP under autocast, whose casts recomputation frees: read high there
        compute_copy = where(unsharded_kept, (params_rank + expert_rank) * 2.0, compute_copy)
    # Transformer Engine caches the FP8 copy (and transpose) of weights the rank holds; under
    # ZeRO-3 / Megatron-FSDP the rank holds only a shard and the gathered layer is transient
    # (counted with the gathered-layer buffers, overheads.framework_buffers)
    fp8 = where(zero >= 3, 0.0, gemm_rank * r.fp8_cache)
    if t.framework == "megatron" and t.precision == "fp8":
        fp8 = where(zero == 0, gemm_rank * 2.0, fp8)
    sharded_opt = (zero >= 1) | bf16_pipe
    dense_opt, expert_opt = _shard(params_rank, sharded_opt, group), _shard(expert_rank, sharded_opt, expert_group)
    opt_params = dense_opt + expert_opt
    unfactored = opt.adafactor_unfactored(t, zero, pp)
    moments = where(unfactored, per(r.state_dtype, 1, bf16_pipe), moments)
    temp = (opt.step_temporaries(t, opt_params, largest, r.state_dtype, unfactored) + r.main_grad_copy * opt_params
            + fp32_grad_temporary(t, zero, dense_opt, expert_opt, pp))
    accumulated = 0.0
    if t.framework == "fsdp" and pp > 1:
        # torch.distributed.pipelining runs every micro-batch but the last without FSDP
        # resharding or gradient sync (PipelineStage backward_maybe_with_nosync), and torchtitan
        # sets reshard_after_forward=False under PP: the stage's parameters stay unsharded in
        # bf16 and their gradients accumulate unsharded in fp32 (mixed_precision_reduce) -- under
        # ZeRO-2 (FSDP2 reshard_after_forward=False) as under ZeRO-3, since the stage turns the
        # gradient sync off either way (kb/perf/step._dp_time reduces once a step for both).
        compute_copy = where(zero == 3, (params_rank + expert_rank) * 2.0, compute_copy)
        accumulated = where(zero >= 2, (params_rank + expert_rank) * 4.0, 0.0)
    kept = both(fsdp, unsharded_kept | ((zero == 3) & (pp > 1)))
    persistent, step_grads, second = deepspeed_zero12_grads(t, zero, grads, per(r.grads, 1), r.persistent_grads)
    return States(weights, grads, master, moments, compute_copy, fp8, 0.0, persistent, temp, accumulated,
                  r.loop_kept, kept, step_grads, second)


def lora_params(m: ModelSpec, rank: int, t: TrainingSpec | None = None) -> int:
    """Trainable LoRA parameters with adapters on every linear layer of every block
    (PEFT target_modules="all-linear"): r x (in + out) per projection (Hu et al. 2021).

    MoE layers: one adapter per expert projection, as transformers 4's per-expert nn.Linear have
    them; Megatron-Bridge's LoRA is counted apart (megatron_lora_params, on one expert-parallel
    rank). Where the adapters are PEFT's (``t`` given, peft_on_transformers)
    transformers 5 fuses the experts, and PEFT 0.21 adapts what peft_experts describes. For
    ADAPTED_EXPERT_FAMILIES: the fused gate_up at rank 2r per expert with a dense block-diagonal
    B (r E (2h + 4F)), down_proj (r E (F + h)) and the router (r (h + E)); and since PEFT turns
    the names gate_proj / up_proj / down_proj into those parameters, no nn.Linear of that name
    keeps an adapter -- not the shared experts, not DeepSeek's leading dense layers' MLP. For
    the other fused families no routed expert: Qwen2-MoE's shared expert and its gate (r (h + 1))
    are adapted, GraniteMoeShared's fused shared MLP (peft_experts.shared_adapter_params),
    gpt-oss's and Granite MoE's MLP not at all. Attention: one adapter per projection
    (params.attention_projections; five for multi-latent attention). Counted on CPU models
    (benchmarks/calibration/measure_peft_experts.py)."""
    if t is not None and t.framework == "megatron":
        dense, moe, experts = megatron_lora_params(m, rank)
        return m.dense_layers * dense + m.moe_layers * (moe + experts)
    attn = adapter_params(rank, attention_projections(m))
    dense_mlp = adapter_params(rank, mlp_projections(m, m.ffn))      # Phi-3's gate_up_proj fused
    if not m.is_moe:
        return m.layers * (attn + dense_mlp)
    if t is not None and peft_on_transformers(t) and m.family in FUSED_EXPERT_FAMILIES:
        if m.family in ADAPTED_EXPERT_FAMILIES:
            dense_mlp, moe_mlp = 0, expert_adapter_params(m, rank) + adapter_params(rank, [(m.hidden, m.experts)])
        else:
            moe_mlp = shared_adapter_params(m, rank)     # Qwen2-MoE's shared expert and gate, GraniteMoeShared's
    else:
        shared = adapter_params(rank, mlp_projections(m, m.shared_width)) if m.shared_width else 0
        moe_mlp = m.experts * adapter_params(rank, mlp_projections(m, m.expert_ffn)) + shared
    return m.dense_layers * (attn + dense_mlp) + m.moe_layers * (attn + moe_mlp)


def megatron_adapter_linears(m: ModelSpec) -> tuple[list, list, list]:
    """The (in, out) features of the linears Megatron-Bridge's LoRA adapts (src/megatron/bridge/
    peft/lora.py @ 067f987: target_modules linear_qkv, linear_proj, linear_fc1, linear_fc2; one
    adapter per matched linear; share_expert_adapters=True): (a dense layer's, a MoE layer's
    outside its routed experts, the routed experts' one shared pair).

    - the fused linear_qkv, (h, q + 2 kv), and linear_proj, (q, h); MLA has no linear_qkv and the
      recipes that train it name its linears (recipes/glm/h100/glm5.py, moonlight_16b.py): one
      adapter each (params.attention_projections);
    - linear_fc1, gate and up fused, (h, 2F) ((h, F) ungated), and linear_fc2, (F, h); a shared
      expert's the same at its width;
    - the routed experts' grouped linears share one adapter pair over a rank's local experts
      (share_expert_adapters): (h, 2 F_e) and (F_e, h) a MoE layer, whatever its expert count;
      LoRALinear runs it on the grouped linear's input, every permuted token."""
    attention = attention_projections(m, fused=True)
    dense = attention + mlp_projections(m, m.ffn, fused=True)
    if not m.is_moe:
        return dense, [], []
    shared = mlp_projections(m, m.shared_width, fused=True) if m.shared_width else []
    return dense, attention + shared, mlp_projections(m, m.expert_ffn, fused=True)


def megatron_lora_params(m: ModelSpec, rank: int) -> tuple[int, int, int]:
    """Megatron-Bridge's LoRA, r (in + out) per adapter of megatron_adapter_linears: (a dense
    layer's adapters, a MoE layer's outside its routed experts, its routed experts' on one
    expert-parallel rank, whatever its expert count)."""
    dense, moe, experts = megatron_adapter_linears(m)
    return adapter_params(rank, dense), adapter_params(rank, moe), adapter_params(rank, experts)


def adapter_params_rank(m: ModelSpec, t: TrainingSpec, sp, tp=1, etp=1) -> float:
    """LoRA parameters one rank of a stage holds (``sp``, stages.StageParams). PEFT's: the rank's
    share of the model's, by parameters. Megatron-Bridge's: counted on the stage's own layers
    (megatron_lora_params; none on the embedding or the output layer), each adapter split over
    the tensor-parallel group of its linear (utils.py ParallelLinearAdapter: linear_in and
    linear_out are Column/RowParallelLinear on the base's tp_group, the expert-TP group for
    the routed experts' pair, _get_tensor_parallel_group(is_expert=True))."""
    if t.framework == "megatron":
        dense, moe, experts = megatron_lora_params(m, t.lora_rank)
        return (sp.dense_layers * dense + sp.moe_layers * moe) / tp + sp.moe_layers * experts / etp
    return lora_params(m, t.lora_rank, t) * sp.total / max(1.0, total_params(m))


# QLoRA NF4 with double quantisation: 4.127 bits per parameter (Dettmers et al. 2023, QLoRA,
# section 3: 4 bits + 0.127 bits of quantisation constants)
NF4_BYTES = 4.127 / 8


def adapter_states(m: ModelSpec, t: TrainingSpec, params_rank: float, block_linear_rank: float,
                   ad: float, zero: int, group: int, expert_rank: float = 0.0, expert_group: int = 1) -> States:
    """LoRA / QLoRA: a frozen base plus trainable adapters.

    Base: bf16 (2 B/param); QLoRA quantises the block linear layers to NF4 (embeddings, norms and
    the LM head stay bf16, as bitsandbytes does; so do transformers 5's fused routed experts where
    the adapters are PEFT's, no nn.Linear: peft_experts.experts_stay_bf16). ZeRO-3 shards the
    base as it shards trained weights: the routed experts (``expert_rank`` of the rank's ``params_rank``, all of them block
    linears) over the expert-data-parallel group only, the rest over the data-parallel group --
    with EP spanning the whole DP group there is nothing left to shard the experts over.
    Adapters are kept in fp32 by PEFT (autocast_adapter_dtype) with fp32 grads and AdamW:
    16 B/param, ZeRO-sharded like any trained parameter. ``ad``: the adapter parameters on this
    rank (adapter_params_rank). Megatron-Bridge's adapters are Megatron's, not PEFT's: the
    estimate replaces them with megatron_adapters.megatron_adapter_states.
    """
    linear = NF4_BYTES if t.training == "qlora" else 2.0
    # transformers 5's fused routed experts are no nn.Linear: bitsandbytes leaves them bf16
    expert_linear = 2.0 if experts_stay_bf16(m, t) else linear
    dense = params_rank - expert_rank
    dense_linear = maximum(block_linear_rank - expert_rank, 0.0)
    base = (_shard((dense - dense_linear) * 2.0 + dense_linear * linear, zero >= 3, group)
            + _shard(expert_rank * expert_linear, zero >= 3, expert_group))
    unfactored = opt.adafactor_unfactored(t, zero)
    mom = where(unfactored, 4.0, opt.state_bytes(t, 4.0))
    temp = opt.step_temporaries(t, _shard(ad, zero >= 1, group), adapter_largest(m, t), 4.0, unfactored)
    return States(weights=_shard(ad * 4, zero >= 3, group), grads=_shard(ad * 4, zero >= 2, group), master=0.0,
                  optimizer=_shard(ad * mom, zero >= 1, group), compute_copy=ad * 2, fp8_cache=0.0, frozen=base,
                  persistent_grads=grads_kept(t), optimizer_temp=temp, loop_kept_grads=grads_kept(t))


def adapter_largest(m: ModelSpec, t: TrainingSpec) -> float:
    """Elements of the largest adapter matrix, an A or B: r (h + max(F, q))."""
    return t.lora_rank * (m.hidden + max(m.ffn, m.q_width))


def frozen_bf16(params_rank: float, zero: int, group: int) -> float:
    """A frozen copy of a model in bf16 (RLHF reference and reward models), sharded by ZeRO-3."""
    return _shard(params_rank * 2.0, zero >= 3, group)


def block_linear_params(m: ModelSpec) -> float:
    """Parameters in the projection weights of the decoder blocks (what QLoRA quantises)."""
    d, mo = layer_params(m, False), layer_params(m, True) if m.is_moe else None
    return d.tp_sharded * m.dense_layers + ((mo.tp_sharded + mo.experts) * m.moe_layers if mo else 0)


def model_fraction(m: ModelSpec) -> float:
    """Share of all parameters in block projections (used to split a rank's params for QLoRA)."""
    return block_linear_params(m) / total_params(m)
