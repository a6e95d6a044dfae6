"""What PEFT's LoRA adapters change in what a layer keeps for backward: the frozen norms' and
linears' inputs no longer kept, each lora_A's input and lora_B's rank-r input, and the copies
fp32 adapters and lora_dropout keep of their own inputs."""
from __future__ import annotations

from ...defaults import ADAPTERS
from ...layout import Layout
from ...schema import ModelSpec, TrainingSpec
from ...vec import maximum, where
from .implementation import profile
from .norms import _linear_inputs, _normalised_bytes


def adapters_in_fp32(t: TrainingSpec, lay: Layout):
    """Whether PEFT's adapters run in fp32: only the Trainer's own data parallelism (ZeRO-0) keeps
    them so (PEFT's autocast_adapter_dtype). DeepSpeed's bf16 engine casts every parameter to
    bf16 (runtime/engine.py _cast_module_mixed_precision, "Cast params only"), FSDP2's
    MixedPrecisionPolicy gathers them in bf16, and Megatron's Float16Module holds the model in
    bf16."""
    return where(lay.zero == 0, t.framework == "hf", False)


def adapter_input_cast(t: TrainingSpec, lay: Layout):
    """Whether each adapter casts its input to its own fp32 dtype, keeping (through autocast's
    cast back for lora_A) a bf16 copy of its own: PEFT's Linear does wherever the adapters are
    fp32 (adapters_in_fp32; peft tuners/lora/layer.py Linear.forward, _cast_input_dtype). QLoRA's
    bitsandbytes layer casts only outside autocast (peft tuners/lora/bnb.py Linear4bit.forward:
    requires_conversion = not torch.is_autocast_enabled()), so under --precision bf16 its lora_A
    reads the bf16 input the other adapters share, as bf16 adapters do. Checked on CPU with the
    CUDA autocast test forced on (peft 0.21.2, bitsandbytes 0.50.2): three Linear4bit adapters
    reading one input keep no copy of it, three nn.Linear ones three bf16 copies."""
    if t.training == "qlora" and t.precision == "bf16":
        return False
    return adapters_in_fp32(t, lay)


def adapter_saved_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, moe: bool):
    """What PEFT's LoRA changes in what a transformers layer keeps for backward, bytes per token
    (all-linear targets): the attention's part (_attention_adapter_bytes) and the MLP's, a dense
    one's (_dense_mlp_adapter_bytes) or an MoE block's (peft_experts.moe_adapter_mlp_bytes).

    A frozen weight needs no input for its gradient, so autograd keeps less of the base: each
    norm's normalised value (kept by ``weight * hidden`` for the norm weight's gradient: 2 h a
    norm, 4 h where it is fp32) and the inputs of frozen linears no adapter reads. Each
    adapter's lora_A keeps its input instead, and lora_B the rank-r output of lora_A (2 r an
    adapter). With fp32 adapters (adapter_input_cast: PEFT's _cast_input_dtype to fp32, then
    autocast's cast back to bf16 for the matmul, cached for weights only) every adapter keeps
    its own bf16 copy of its input, where bf16 adapters keep the tensors the base would have.
    Measured: a Llama-shaped layer (h 512, F 3.5 h, GQA 4:1) on CPU with peft 0.21 and
    transformers 5.24 keeps +4.44 h a token over full fine-tuning (saved-tensor hooks, unique
    storages), which this gives, as it does for Qwen3's frozen q/k norms (-2.5 h there), Gemma's
    fp32-scaled ones (-4 h) and a DeepSeek-V3 dense layer (bf16 adapters exact; fp32 ones 2 h
    over, the attention output the CPU's math SDPA does not keep, cpu_lora_saved_tensors.jsonl);
    h200_hf_trainer_steps.jsonl t17 (LoRA 8B, 8K tokens, no checkpointing) read 4.0 h a token a
    layer low without it. None under full recompute (the layer keeps its input alone); on
    Megatron-Core, Megatron-Bridge's LoRA (megatron_adapters.megatron_adapter_saved_bytes); none
    on torchtitan's path (not sized)."""
    if t.training not in ADAPTERS or profile(t) == "torch":
        return 0.0
    if profile(t) == "megatron":
        from ..megatron_adapters import megatron_adapter_saved_bytes
        return megatron_adapter_saved_bytes(m, t, lay, moe)
    from ..peft_experts import moe_adapter_mlp_bytes  # it imports this package
    fp32 = adapter_input_cast(t, lay)
    mlp = moe_adapter_mlp_bytes(m, t, lay, fp32) if moe else _dense_mlp_adapter_bytes(m, t, lay, fp32)
    return _attention_adapter_bytes(m, t, lay, fp32) + mlp


def _attention_adapter_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, fp32) -> float:
    """The attention's part of adapter_saved_bytes, with both layer norms' (their normalised
    values; q/k norms, Qwen3 and Gemma 3, and MLA's inner norms are frozen too). Adapters on q,
    k, v and o (MLA: q_a or q, kv_a, q_b, kv_b, o). fp32 copies: q, k and v one each of the
    input norm's output, which the base kept and no longer does; MLA's q_b and kv_b one each of
    its inner norms' outputs, which they replace; o one of the attention output, which a fused
    kernel keeps anyway (2 x attention width more) and eager attention does not (it replaces
    what o_proj kept: measured on a CPU gpt-oss layer, cpu_peft_experts.jsonl)."""
    h = m.hidden
    attn_in, _ = _linear_inputs(m)
    inner_linears, inner_width = _mla_inner(m)
    n_norms = 4 if m.sandwich_norm else 2
    normalised = _normalised_bytes(m)
    frozen_norms = -normalised * (h * n_norms + inner_width)
    if m.qk_norm:
        frozen_norms -= normalised * (m.q_width / lay.tp + maximum(m.kv_width / lay.tp, m.hd))
    o_width = m.attn_out_width / lay.tp
    o_copy = 0.0 if t.attention == "eager" else o_width
    # the input norm's and the inner norms' outputs, and with eager attention o's input (a fused
    # kernel keeps its output for its own backward), were kept by the lora_As alone
    return (frozen_norms + 2.0 * t.lora_rank * (attn_in + inner_linears + 1)
            + own_input_copies(t, fp32, attn_in * h + inner_width + o_width, 2.0 * (h + inner_width + o_width - o_copy)))


def _dense_mlp_adapter_bytes(m: ModelSpec, t: TrainingSpec, lay: Layout, fp32) -> float:
    """A dense MLP's part of adapter_saved_bytes: adapters on gate, up and down (2 r each); with
    fp32 ones gate's and up's copies of the MLP norm's output, which replace the one the base
    kept, and down's of the product, which replaces it. The dense layers of a model whose MoE
    experts PEFT adapts fused and merges (DeepSeek's leading layers, peft_experts.merges_experts)
    have no MLP adapters: PEFT turns the names gate_proj, up_proj and down_proj into the
    experts' parameters, so their frozen MLP keeps neither the norm's output nor the product
    (2 h + 2 F less; the DeepSeek-V3 dense rows of cpu_lora_saved_tensors.jsonl)."""
    from ..peft_experts import merges_experts
    h = m.hidden
    if merges_experts(m, t):
        return -2.0 * (h + m.ffn / lay.tp)
    _, mlp_in = _linear_inputs(m)
    ffn = m.ffn / lay.tp
    # the MLP norm's output and the product down_proj reads were kept by the lora_As alone
    return 2.0 * t.lora_rank * (mlp_in + 1) + own_input_copies(t, fp32, mlp_in * h + ffn, 2.0 * (h + ffn))


def own_input_copies(t: TrainingSpec, fp32, inputs: float, released: float):
    """What adapters that keep a copy of their own input change in what a layer keeps, bytes per
    token. ``inputs``: the adapters' input widths summed; ``released``: the bytes of the inputs
    that, shared, the lora_As alone kept (the norms' outputs, the MLP product), which nothing
    keeps once each adapter keeps its own.

    - fp32 adapters (``fp32``: adapter_input_cast): PEFT's _cast_input_dtype to fp32, then
      autocast's cast back to bf16 for the matmul (cached for weights only), a bf16 copy each,
      2 bytes an element; bf16 adapters share the inputs the base would have kept: nothing.
    - lora_dropout > 0, either dtype: each adapter runs its own nn.Dropout on its input (peft
      tuners/lora/layer.py Linear.forward: lora_B(lora_A(dropout(x)))) and keeps its dropped-out
      copy, bf16 (with fp32 adapters autocast's cast of the fp32 dropped copy, which replaces the
      cast of the input), and the dropout's bool mask: 3 bytes an element (F.dropout on a CUDA
      tensor runs the fused native_dropout, which keeps its mask; aten/src/ATen/native/Dropout.cpp
      is_fused_kernel_acceptable).

    Measured on CPU layers (cpu_lora_saved_tensors.jsonl; the *-dropout modes through
    native_dropout: Llama, Qwen3, Gemma shapes and a DeepSeek-V3 dense layer): exact, and with a
    dropout the same bytes with fp32 and bf16 adapters, as this says."""
    if t.lora_dropout > 0:
        return 3.0 * inputs - released
    return where(fp32, 2.0 * inputs - released, 0.0)


def _mla_inner(m: ModelSpec) -> tuple[int, int]:
    """MLA's linears that read its inner norms' outputs (q_b after q_a_layernorm where queries
    are compressed, kv_b after kv_a_layernorm) and the norms' total width; none elsewhere."""
    if not m.is_mla:
        return 0, 0
    return (2 if m.q_lora_rank else 1), m.kv_lora_rank + m.q_lora_rank
