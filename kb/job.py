"""A job: model, cluster and training spec together, and the checks a layout must pass for it."""
from __future__ import annotations

from dataclasses import dataclass

from .errors import InputError
from .layout import Layout
from .schema import ClusterSpec, ModelSpec, TrainingSpec


@dataclass(frozen=True)
class Job:
    model: ModelSpec
    cluster: ClusterSpec
    training: TrainingSpec


def check_layout(job: Job, lay: Layout) -> None:
    """Refuse a layout this job cannot run, with the reason and what is allowed.

    These are hard limits of the frameworks (Megatron-Core TransformerConfig and
    validate_args, torchtitan ParallelDims), not preferences; preferences are rules.
    """
    m, c, t = job.model, job.cluster, job.training
    if lay.world != c.gpus:
        raise InputError(f"layout: tp x pp x cp x dp = {lay.tp}x{lay.pp}x{lay.cp}x{lay.dp} = {lay.world} "
                         f"but --gpus is {c.gpus}; the product must equal the GPU count")
    if m.heads % lay.tp:
        raise InputError(f"layout: tp={lay.tp} does not divide the {m.heads} attention heads of {m.name}; "
                         f"allowed tp: {', '.join(str(d) for d in divisors(m.heads) if d <= c.gpus)}")
    if m.kv_heads % lay.tp and lay.tp % m.kv_heads:
        raise InputError(f"layout: tp={lay.tp} and the {m.kv_heads} KV heads of {m.name} do not divide one another")
    if lay.pp > m.layers:
        raise InputError(f"layout: pp={lay.pp} exceeds the {m.layers} layers of {m.name}")
    if lay.chunks > m.layers:
        raise InputError(f"layout: pp x vp = {lay.chunks} model chunks exceed the {m.layers} layers")
    if lay.vp > 1 and t.framework not in ("megatron", "fsdp"):
        raise InputError(f"layout: vp={lay.vp} but --framework {t.framework} has no interleaved pipeline schedule; "
                         "use vp=1, or megatron/fsdp")
    if lay.pp > 1 and lay.zero >= 2 and t.framework in ("deepspeed", "hf"):
        raise InputError(f"layout: DeepSpeed's pipeline engine runs ZeRO-0/1 only; zero={lay.zero} with pp={lay.pp} "
                         "is refused by DeepSpeed (use zero=1, or pp=1)")
    if t.seq_len % lay.cp or (lay.cp > 1 and t.seq_len % (2 * lay.cp)):
        raise InputError(f"layout: cp={lay.cp} needs --seq-len {t.seq_len} divisible by 2 x cp "
                         "(load-balanced ring attention splits each sequence into 2 x cp chunks)")
    if lay.ep > 1 and not m.is_moe:
        raise InputError(f"layout: ep={lay.ep} but {m.name} has no experts; use ep=1")
    if m.is_moe and m.experts % lay.ep:
        raise InputError(f"layout: ep={lay.ep} does not divide the {m.experts} experts of {m.name}")
    if lay.etp > 1 and not m.is_moe:
        raise InputError(f"layout: etp={lay.etp} but {m.name} has no experts; use etp=1")
    if m.is_moe and m.expert_ffn % lay.etp:
        raise InputError(f"layout: etp={lay.etp} does not divide the expert FFN width {m.expert_ffn}")
    if t.training in ("lora", "qlora") and lay.zero > 0 and t.framework == "megatron":
        raise InputError("layout: LoRA/QLoRA with Megatron's distributed optimizer is not modelled; use "
                         "--framework hf, deepspeed or fsdp for adapter training")


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]
