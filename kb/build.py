"""Build a Job from what a user typed (flags or a job file): names resolved in the catalogs,
counts parsed, every bad value refused with one line naming it and what is allowed."""
from __future__ import annotations

from typing import Any, Optional

from pydantic import ValidationError

from . import catalog, custom_gpu
from .errors import InputError
from .hf_config import read_hf_config
from .counts import parse_count, parse_seq_len
from .defaults import ADAPTERS, FRAMEWORK
from .frameworks import recompute_modes
from .infer import infer_model
from .job import Job
from .memory.peft_experts import PEFT_FAILS, merges_experts, peft_on_transformers
from .schema import ClusterSpec, ModelSpec, TrainingSpec

INTERCONNECTS = ("nvlink", "infiniband", "roce", "ethernet", "pcie")


def _first_error(e: ValidationError, prefix: str) -> InputError:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()) if x != "__root__")
    msg = err.get("msg", str(e)).removeprefix("Value error, ")
    if "input" in err and not isinstance(err["input"], dict) and err.get("type") != "value_error":
        msg = f"got {err['input']!r}; {msg[0].lower()}{msg[1:]}"
    return InputError(f"{prefix}{'--' + loc.replace('_', '-') + ': ' if loc else ''}{msg}")


def resolve_model(model: Optional[str], hf_config: Optional[str], params: Optional[str]) -> ModelSpec:
    for flag, v in (("--model", model), ("--hf-config", hf_config), ("--params", params)):
        if isinstance(v, str) and not v.strip():
            raise InputError(f"{flag}: empty; give a catalog model (`shardwise kb models`), a config.json path "
                             "or a parameter count such as 70B")
    given = [x for x in (model, hf_config, params) if x is not None]
    if len(given) != 1:
        raise InputError("give exactly one of --model NAME, --hf-config PATH or --params COUNT "
                         f"(got {len(given)}); e.g. --model llama-3-70b")
    if model is not None:
        return catalog.model(model)
    if hf_config is not None:
        return read_hf_config(hf_config)
    return infer_model(parse_count(params, "--params"))


def resolve_links(gpu_intra: str, interconnect: Optional[str], host_pcie: str = "pcie5") -> tuple:
    """(intra-node link, inter-node link, whether --interconnect named the inter-node one).
    --interconnect names the fabric: a word (nvlink|infiniband|roce|ethernet|pcie) or a
    catalog link (e.g. infiniband-hdr). nvlink/pcie set how GPUs inside a node talk (inter-node
    then defaults to InfiniBand NDR); infiniband/roce/ethernet set the inter-node fabric.
    ``host_pcie`` is the GPU's own PCIe generation (GPUSpec.host_pcie): what 'pcie' means for
    an NVLink GPU, and the fastest PCIe link it can be named on."""
    intra_name, inter_name = gpu_intra, "infiniband"
    # the GPU's own PCIe: a PCIe card's link, else its host interface's generation
    card_pcie = gpu_intra if gpu_intra.startswith("pcie") else host_pcie
    if interconnect is None:                 # the GPU's own intra-node link, InfiniBand between nodes
        return catalog.link(intra_name), catalog.link(inter_name), False
    word, inter_named = interconnect.strip().lower(), False
    if word == "nvlink":
        if gpu_intra.startswith("pcie"):
            raise InputError("--interconnect nvlink: this GPU has no NVLink between all GPUs of a node; "
                             "use --interconnect pcie")
        if not gpu_intra.startswith("nvlink"):
            # an AMD GPU's fabric is its own (kb/data/gpus.yaml intra_link): 'nvlink' named a link it lacks
            raise InputError(f"--interconnect nvlink: this GPU's link inside a node is {gpu_intra}, not NVLink; "
                             f"allowed: {gpu_intra}, pcie, or a link between nodes (infiniband, roce, ethernet)")
    elif word == "pcie":
        intra_name = card_pcie
    elif word in catalog.raw("links").get("aliases", {}) or word in catalog.link_names():
        ln = catalog.link(word)
        # a PCIe link trains at the lower generation of card and slot: a Gen4 card (kb/data/gpus.yaml
        # intra_link pcie4, or an A100's host_pcie) named on pcie5 would be timed at twice what it carries
        faster_pcie = ln.name.startswith("pcie") and ln.gbps > catalog.link(card_pcie).gbps
        if ln.kind == "intra" and ln.name != gpu_intra and (not ln.name.startswith("pcie") or faster_pcie):
            # a GPU's own fabric inside a node is what it has (kb/data/gpus.yaml intra_link):
            # NVLink 5 for an H100, or NVLink for a PCIe card, would time links it cannot have
            pcie = "pcie" if gpu_intra.startswith("pcie") else f"pcie ({host_pcie})"
            raise InputError(f"--interconnect {interconnect}: this GPU's link inside a node is {gpu_intra}; "
                             f"allowed: {gpu_intra}, {pcie}, or a link between nodes (infiniband, roce, ethernet)")
        if ln.kind == "intra":
            intra_name = ln.name
        else:
            inter_name, inter_named = ln.name, True
    else:
        raise InputError(f"--interconnect: unknown '{interconnect}'; allowed: {', '.join(INTERCONNECTS)} "
                         f"(infiniband is NDR, 400 Gb/s a GPU) or a link of `shardwise kb links`: "
                         f"{', '.join(catalog.link_names())}")
    return catalog.link(intra_name), catalog.link(inter_name), inter_named


def _in_range(flag: str, value, lo, hi, integer: bool = True, unit: str = ""):
    """A count or size given on its own: an integer (or number) from lo to hi, or one line naming both."""
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not lo <= value <= hi:
        raise InputError(f"{flag}: {value!r} must be {'an integer' if integer else 'a number'} from {lo} to {hi}"
                         + (f" {unit}" if unit else ""))
    return value


def check_setting(key: str, value) -> None:
    """Refuse a value that no job could take whatever its other settings: a name not in the
    catalogs, a count that does not parse, a number out of range, a choice not offered.
    `compare --vary` checks each of its values with this before building any variant; what
    depends on the rest of the job (an --mbs past the batch) is left to build_job, and is that
    variant's row."""
    if key in ("model", "hf_config", "params"):
        resolve_model(**{k: (value if k == key else None) for k in ("model", "hf_config", "params")})
    elif key == "gpu":
        catalog.gpu(value)
    elif key == "interconnect":
        resolve_links("nvlink4", value)
    elif key in RANGES:
        _in_range(f"--{key.replace('_', '-')}", value, *RANGES[key])
    elif key == "price_per_gpu_hour":
        try:
            ClusterSpec.model_validate({"gpu": catalog.gpu("h100-sxm"), "gpus": 8, "gpus_per_node": 8,
                                        "intra": catalog.link("nvlink4"), "inter": catalog.link("infiniband"),
                                        "price_per_gpu_hour": value})
        except ValidationError as e:
            raise _first_error(e, "")
    else:
        parsed = {"seq_len": lambda v: parse_seq_len(v), "token_budget": lambda v: parse_count(v, "--token-budget", example="100B"),
                  "global_batch_tokens": lambda v: parse_count(v, "--global-batch-tokens", binary=True)}
        try:
            TrainingSpec(**{key: parsed.get(key, lambda v: v)(value)})
        except ValidationError as e:
            raise _first_error(e, "")


# _in_range's (low, high[, integer, unit]) of the cluster sizes a value is checked against on its own
RANGES = {"gpus": (1, 16384), "gpus_per_node": (1, 72), **custom_gpu.RANGES}

# Settings a user may leave out whose default build_job states (kb/defaults.py).
STATED = ("gpu", "gpus", "interconnect", "seq_len", "precision", "optimizer", "attention", "lora_rank",
          "lora_dropout", "rl_algorithm", "allocator", "zero_grad", "loss_chunks")
# transformers model families that do not run attn_implementation="flash_attention_2": their
# PreTrainedModel's _supports_flash_attn is False, or it lists the flash kernels it runs
# (_compatible_flash_implementations) and PreTrainedModel swaps flash_attention_2 for the first of
# them (transformers 5.24 modeling_utils.py, "Automatically falling back to ...")
NO_FLASH_ATTENTION_2 = {"llama4": "modeling_llama4.py Llama4PreTrainedModel: _supports_flash_attn = False",
                        "gpt_oss": "modeling_gpt_oss.py GptOssPreTrainedModel: _compatible_flash_implementations "
                                   "lists kernels with attention sinks, which flash-attn 2 has not, and transformers "
                                   "runs kernels-community/vllm-flash-attn3 in its place"}
# transformers model families that refuse attn_implementation="sdpa" (_supports_sdpa is False:
# PreTrainedModel._sdpa_can_dispatch raises "does not support an attention implementation through
# torch.nn.functional.scaled_dot_product_attention", transformers 5.24 modeling_utils.py); they
# default to eager
NO_SDPA = {"gpt_oss": "modeling_gpt_oss.py GptOssPreTrainedModel: _supports_sdpa = False; SDPA has no attention sinks",
           "gemma2": "modeling_gemma2.py Gemma2PreTrainedModel: _supports_sdpa = False"}
# Frameworks that run QLoRA's 4-bit (bitsandbytes NF4) base weights: PEFT on transformers,
# also under DeepSpeed ZeRO-3 or FSDP (Hugging Face PEFT docs, "DeepSpeed" and "FSDP" guides;
# Answer.AI's FSDP + QLoRA). Megatron-Core has no 4-bit base-weight path.
QLORA_FRAMEWORKS = ("hf", "deepspeed", "fsdp")


def build_job(*, model=None, hf_config=None, params=None, gpu=None, gpu_memory=None, gpu_tflops=None,
              gpu_fp8_tflops=None, gpu_hbm_gbps=None, gpus=None, gpus_per_node=None, interconnect=None,
              price_per_gpu_hour=None, **training: Any) -> Job:
    """The Job for these settings. Settings left out get their defaults (per training type for
    the framework and the batch, kb/defaults.py), recorded in ``TrainingSpec.defaulted`` so that
    kb/resolve.assumptions can state each one; token counts are read binary for the batch and
    the sequence length, decimal for the budget (kb/counts.py)."""
    given = {k for k, v in dict(training, gpu=gpu, gpus=gpus, interconnect=interconnect).items() if v is not None}
    m = resolve_model(model, hf_config, params)
    g = custom_gpu.custom_gpu(catalog.gpu("h100-sxm" if gpu is None else gpu), gpu_memory, gpu_tflops,
                              gpu_fp8_tflops, gpu_hbm_gbps)
    gpus = _in_range("--gpus", 8 if gpus is None else gpus, *RANGES["gpus"])
    gpn = _in_range("--gpus-per-node", g.gpus_per_node if gpus_per_node is None else gpus_per_node,
                    *RANGES["gpus_per_node"])
    intra, inter, inter_named = resolve_links(g.intra_link, interconnect, g.host_pcie)
    if not inter_named:
        # a word for the link inside a node (nvlink, pcie) leaves the one between nodes at its
        # default, which the answer states like any other
        given.discard("interconnect")
    try:
        if gpus_per_node is not None and gpn > gpus:
            # a node the GPU's link cannot build is refused whatever the GPU count, not only where
            # the job fills it: 16 A100s a node was taken on 8 GPUs (capped to 8) and refused on 16
            ClusterSpec(gpu=g, gpus=gpn, gpus_per_node=gpn, intra=intra, inter=inter)
        cluster = ClusterSpec(gpu=g, gpus=gpus, gpus_per_node=min(gpn, gpus), intra=intra, inter=inter,
                              price_per_gpu_hour=price_per_gpu_hour, node_given=gpus_per_node)
    except ValidationError as e:
        raise _first_error(e, "")
    tb = training.pop("token_budget", None)
    if isinstance(tb, str):
        tb = parse_count(tb, "--token-budget", example="100B")
    clean = {k: v for k, v in training.items() if v is not None}
    if "seq_len" in clean:
        clean["seq_len"] = parse_seq_len(clean["seq_len"])
    gbt = clean.pop("global_batch_tokens", None)
    if gbt is not None:
        if "global_batch" in clean:
            raise InputError("give --global-batch (sequences) or --global-batch-tokens, not both")
        clean["global_batch_tokens"] = parse_count(gbt, "--global-batch-tokens", binary=True) \
            if isinstance(gbt, str) else gbt
    kind = clean.get("training", TrainingSpec.model_fields["training"].default)
    # --allocator default names no allocator: which one it is (the framework's own) is stated as
    # though it were left out, since it sets the fragmentation allowance that decides fits
    defaulted = [k for k in STATED if k not in given or (k == "allocator" and clean["allocator"] == "default")]
    if "framework" not in clean and kind in FRAMEWORK:
        clean["framework"] = FRAMEWORK[kind]
        defaulted.insert(0, "framework")
    try:
        tspec = TrainingSpec(token_budget=tb, defaulted=tuple(defaulted), **clean)
    except ValidationError as e:
        raise _first_error(e, "")
    if tspec.global_batch_tokens is not None and tspec.global_batch_tokens < tspec.seq_len:
        # a step holds whole sequences: taking it as one sequence would run seq_len / tokens times
        # the batch asked for (1 token at 4,096: +409,500%), not a rounding of it (kb/batch.py)
        tokens, text = tspec.global_batch_tokens, str(gbt).strip()
        plain = f"{tokens:.0f}" if tokens == int(tokens) else f"{tokens}"
        shown = text if text == plain else f"{text} = {tokens:,.0f}" if tokens == int(tokens) else f"{text} = {tokens:,}"
        raise InputError(f"--global-batch-tokens: {shown} is fewer tokens than one sequence (--seq-len "
                         f"{tspec.seq_len:,}); allowed: at least {tspec.seq_len:,} tokens a step, "
                         "or --global-batch in sequences")
    if "rl_algorithm" in given and tspec.training != "rlhf":
        raise InputError(f"--rl-algorithm: applies to --training rlhf only, and this job is {tspec.training}; "
                         "drop it, or set --training rlhf")
    if tspec.training == "rlhf" and tspec.rl_algorithm == "dpo" and (tspec.global_batch or 2) % 2:
        raise InputError(f"--global-batch {tspec.global_batch} under --rl-algorithm dpo: the batch counts sequences, "
                         "each preference pair two (chosen and rejected); allowed: an even count, twice the pairs")
    if "lora_rank" in given and tspec.training not in ADAPTERS:
        raise InputError(f"--lora-rank: applies to --training lora or qlora only, and this job is "
                         f"{tspec.training}; drop it, or set --training lora/qlora")
    if "lora_dropout" in given and tspec.training not in ADAPTERS:
        raise InputError(f"--lora-dropout: applies to --training lora or qlora only, and this job is "
                         f"{tspec.training}; drop it, or set --training lora/qlora")
    if tspec.training in ADAPTERS and tspec.lora_dropout > 0 and merges_experts(m, tspec):
        # peft tuners/lora/layer.py ParamWrapper.__init__: "lora.ParamWrapper does not work with
        # lora_dropout != 0" (dropout(x) cannot be factored out of a merged weight)
        raise InputError(f"--lora-dropout {tspec.lora_dropout!r}: PEFT adapts {m.name}'s fused MoE experts "
                         "through ParamWrapper, which refuses lora_dropout != 0 (peft tuners/lora/layer.py); "
                         "allowed for this model under PEFT: 0")
    if tspec.training in ADAPTERS and tspec.lora_rank > m.hidden:
        # a rank past the narrower side of every projection adds parameters without adding rank
        # (an r x (in + out) adapter has rank at most min(in, out); Hu et al. 2021 use r <= 64)
        raise InputError(f"--lora-rank: {tspec.lora_rank} is larger than the model's hidden size {m.hidden}, which "
                         f"bounds the rank of every adapter; allowed: 1 to {m.hidden} (typically 8-256)")
    check_training(m, g, tspec, given)
    job = Job(model=m, cluster=cluster, training=tspec)
    _check_micro_batch(job)
    _check_token_budget(job)
    return job


def _defaulted_framework(tspec) -> str:
    """' (the default for lora)' where the job did not name its framework, so that a refusal of
    what the framework cannot do says where that framework came from."""
    return f" (the default for {tspec.training})" if "framework" in tspec.defaulted else ""


def check_training(m, g, tspec: TrainingSpec, given=frozenset()) -> None:
    """What a training spec asks that its framework, model or GPU cannot run, refused in one line
    naming the flag and what is allowed: build_job's checks after the spec parses, and what
    search/sizing.frameworks_that_fit runs on the framework it would suggest instead."""
    if "loss_chunks" in given and tspec.loss_chunks == 0:
        raise InputError("--loss-chunks 0: the loss runs in at least one chunk; allowed: 1 (the whole sequence) "
                         "to 1024, or leave it out for the framework's own (torchtitan's 8)")
    if tspec.loss_chunks > 1 and tspec.framework != "fsdp":
        raise InputError(f"--loss-chunks {tspec.loss_chunks}: a chunked loss is torchtitan's (ChunkedLossWrapper); "
                         f"{tspec.framework}'s cross-entropy takes the whole logits; allowed: --framework fsdp, "
                         "or --loss-chunks 1")
    if tspec.loss_chunks > 1 and tspec.seq_len % tspec.loss_chunks:
        # each CP rank's share of the sequence divides it, so no layout could split the loss
        fits = [d for d in range(1, min(tspec.seq_len, 1024) + 1) if tspec.seq_len % d == 0]
        raise InputError(f"--loss-chunks {tspec.loss_chunks} does not divide --seq-len {tspec.seq_len}, so no CP "
                         f"rank's share of it splits into equal chunks; allowed: a divisor of the sequence per CP "
                         f"rank, e.g. {', '.join(map(str, fits[:8]))}")
    if m.attn_softcap and tspec.attention == "sdpa" and tspec.framework in ("hf", "deepspeed"):
        # transformers' Gemma 2 refuses attn_implementation="sdpa" ("does not support an
        # attention implementation through torch.nn.functional.scaled_dot_product_attention"):
        # SDPA has no soft-capping; eager and FlashAttention-2 (softcap=) have it
        raise InputError(f"--attention sdpa: transformers runs {m.name}'s soft-capped attention logits "
                         "(attn_logit_softcapping) eager or with a FlashAttention kernel, which soft-caps; "
                         "allowed: eager, flash, flash2")
    if tspec.attention == "sdpa" and tspec.framework in ("hf", "deepspeed") and m.family in NO_SDPA:
        raise InputError(f"--attention sdpa: transformers' {m.name} has no SDPA path ({NO_SDPA[m.family]}); "
                         f"allowed: eager (its default), flash{'' if m.family in NO_FLASH_ATTENTION_2 else ', flash2'}")
    if tspec.attention == "flash2" and tspec.framework in ("hf", "deepspeed") and m.family in NO_FLASH_ATTENTION_2:
        allowed = "flash, eager" if m.family in NO_SDPA else "flash, sdpa, eager"
        raise InputError(f"--attention flash2: transformers' {m.name} has no FlashAttention-2 path "
                         f"({NO_FLASH_ATTENTION_2[m.family]}); allowed: {allowed}")
    if tspec.training in ADAPTERS and peft_on_transformers(tspec) and m.family in PEFT_FAILS:
        raise InputError(f"--training {tspec.training} with --framework {tspec.framework}: PEFT's all-linear LoRA on "
                         f"{m.name} does not run: {PEFT_FAILS[m.family]}; allowed: --training pretrain or finetune, or "
                         "--training lora with --framework megatron (Megatron-Bridge's adapters)")
    if tspec.precision == "fp8" and not g.tflops_fp8:
        # pure-bf16 only where the framework has the recipe (below): each refusal names what the other allows
        also = "" if tspec.framework == "megatron" else ", pure-bf16"
        raise InputError(f"--precision fp8: {g.name} has no FP8 tensor cores; allowed here: bf16{also}")
    if tspec.training == "qlora" and tspec.framework not in QLORA_FRAMEWORKS:
        raise InputError(f"--framework {tspec.framework}: QLoRA's 4-bit base weights (bitsandbytes + PEFT) do not "
                         f"run on it; allowed for --training qlora: {', '.join(QLORA_FRAMEWORKS)} (default hf)")
    if tspec.training == "qlora" and tspec.precision == "fp8":
        # bitsandbytes' Linear4bit dequantizes NF4 to bnb_4bit_compute_dtype (bf16/fp16) for each
        # matmul; neither Transformer Engine nor torchao's float8 training converts a 4-bit layer
        raise InputError("--precision fp8 with --training qlora: QLoRA's 4-bit base weights are dequantized to bf16 "
                         "for their matmuls (bitsandbytes Linear4bit); no FP8 path runs them; allowed: bf16, "
                         "pure-bf16, or --training lora")
    if tspec.precision == "pure-bf16" and tspec.framework == "megatron":
        # Megatron-Core's optimizers step fp32 main params (Float16OptimizerWithFloat16Params, the
        # distributed optimizer); --main-params-dtype takes fp32 or fp16 only (megatron/training/
        # arguments.py, with --use-precision-aware-optimizer): no recipe keeps bf16 weights alone
        allowed = "bf16, fp8" if g.tflops_fp8 else "bf16"
        raise InputError(f"--precision pure-bf16: megatron{_defaulted_framework(tspec)} keeps fp32 main params and optimizer states "
                         f"(--main-params-dtype takes fp32 or fp16), so it has no pure-bf16 recipe; allowed with "
                         f"megatron here: {allowed}; pure-bf16 runs under --framework deepspeed, fsdp or hf")
    if tspec.zero_grad == "zeros" and tspec.framework not in ("hf", "fsdp"):
        # Megatron's main-grad buffer and DeepSpeed's gradient partitions live for the whole run
        # whatever zero_grad does (kb/memory/states.py): the setting would change nothing
        raise InputError(f"--zero-grad zeros: {tspec.framework}{_defaulted_framework(tspec)} keeps its gradient buffer for the whole run "
                         f"either way; the setting applies to --framework hf or fsdp (PyTorch loops)")
    if tspec.cuda_graphs == "full-iteration" and tspec.framework != "megatron":
        # full-iteration capture is Megatron-Core's (--cuda-graph-impl full_iteration); torch.compile's
        # CUDA graphs (torchtitan, the Trainer) stop at graph breaks and are not modelled
        raise InputError(f"--cuda-graphs full-iteration: only Megatron-Core captures a whole training step in one "
                         f"CUDA graph; allowed with --framework {tspec.framework}: none (or --framework megatron)")
    if tspec.cuda_graphs == "full-iteration" and m.is_moe and not (tspec.precision == "fp8" and g.mxfp8):
        # a captured MoE layer needs the fused grouped MLP (the unfused GroupedLinear syncs its
        # split sizes to the host), and Transformer Engine fuses it only for MXFP8 on Blackwell
        # (fuse_grouped_mlp_ops; the CuTe DSL kernel needs sm100) -- as NVIDIA runs it
        blackwell = [n for n in catalog.gpu_names() if catalog.gpu(n).mxfp8]
        raise InputError(f"--cuda-graphs full-iteration with {m.name}: a captured MoE layer needs Megatron's fused "
                         f"grouped MLP, which Transformer Engine runs in MXFP8 on Blackwell only; allowed: --precision "
                         f"fp8 with --gpu {', '.join(blackwell)}, or --cuda-graphs none")
    modes = recompute_modes(tspec.framework)
    if tspec.recompute != "auto" and tspec.recompute not in modes:
        raise InputError(f"--recompute {tspec.recompute}: --framework {tspec.framework} cannot run it; allowed: "
                         f"{', '.join(modes)}, or auto")
    if tspec.optimizer == "adafactor" and tspec.framework == "fsdp":
        # transformers' Adafactor keeps its factored moments as plain tensors and fails on FSDP2's
        # DTensor parameters ("aten.add_.Tensor got mixed torch.Tensor and DTensor"); torch's
        # Adafactor needs a placement change it refuses (fake process group, torch 2.13): and
        # torchtitan's and the FSDP2 export's layouts are DTensors even at one shard
        raise InputError("--optimizer adafactor with --framework fsdp: Adafactor cannot step FSDP2's DTensor "
                         "parameters (torchtitan and the FSDP2 export hold every layout's parameters as DTensors); "
                         "allowed: another --optimizer, or --framework hf or deepspeed")


def _check_token_budget(job: Job) -> None:
    """A --token-budget smaller than one step's tokens trains no whole step: the time to train
    (budget / tokens per second) would read as a fraction of one step ('0.0 h', '$0'), a run that
    cannot be launched, and the exports would count one step of more tokens than the budget.
    Refused, naming the step's tokens, as a token batch smaller than one sequence is."""
    from .resolve import global_batch
    t = job.training
    if not t.token_budget:
        return
    gb, _ = global_batch(job)
    step = gb * t.seq_len
    if t.token_budget < step:
        given = f"{t.token_budget:,.0f}" if t.token_budget == int(t.token_budget) else f"{t.token_budget:,}"
        raise InputError(f"--token-budget: {given} tokens is less than one step of this job, "
                         f"{gb:,} sequences of {t.seq_len:,} tokens = {step:,} tokens; allowed: at least {step:,} "
                         "tokens, or a smaller global batch (--global-batch, --global-batch-tokens)")


def _check_micro_batch(job: Job) -> None:
    """A given --mbs must divide the global batch, or no layout can take it (every data-parallel
    degree fails batch-divides): refused here, naming the flag, instead of an empty search."""
    from .resolve import global_batch
    mbs = job.training.mbs
    if not mbs:
        return
    gb, _ = global_batch(job)
    if mbs > gb or gb % mbs:
        fits = [d for d in range(1, gb + 1) if gb % d == 0]
        shown = ", ".join(map(str, fits[:8])) + (", ..." if len(fits) > 8 else "")
        raise InputError(f"--mbs {mbs} {'exceeds' if mbs > gb else 'does not divide'} the global batch of {gb:,} "
                         f"sequences; allowed: a divisor of it ({shown}), or a global batch (--global-batch, "
                         "--global-batch-tokens) that it divides")
