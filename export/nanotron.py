"""Nanotron: a YAML config for GitHub main's schema (nanotron.config.Config, loaded by dacite strict).

docs/reference/framework-configs.md section 3. Nanotron has no interleaved pipeline, no
selective recomputation (recompute_layer is full per-layer recompute) and ZeRO-1 only; it has
no MoE and no context parallelism in its Llama config. Global batch = micro_batch_size x batch_accumulation_per_replica x dp.
"""
from __future__ import annotations

import re

import yaml

from shardwise.kb.errors import InputError

from .optimizer import WHAT, named, runs_instead
from .target import Export, Target, memory_as_run, with_caveats


def config(tg: Target) -> tuple[dict, list[str]]:
    lay, m, t = tg.layout, tg.job.model, tg.job.training
    if m.is_moe:
        raise InputError(f"--to nanotron: {m.name} is a mixture of experts; Nanotron's Llama/Qwen2 configs have no "
                         "experts (use megatron or torchtitan)")
    if lay.cp > 1:
        # nanotron main: models/llama.py takes no CP group (only models/qwen.py's ring attention
        # does), and trainer.py _load_model_checkpoint raises NotImplementedError("Init with Context
        # parallel size > 1 not supported yet") for the random init this config writes
        raise InputError(f"--to nanotron: cp={lay.cp}: Nanotron's Llama has no context parallelism (only its Qwen2 "
                         "model's ring attention takes a CP group) and its trainer cannot initialise a model with "
                         "context_parallel_size > 1; use cp=1, or megatron or torchtitan")
    if m.kv_heads % lay.tp:
        # nanotron main config/config.py Config.__post_init__ asserts num_key_value_heads >= tp at
        # load, models/llama.py CausalSelfAttention num_key_value_heads % tp == 0 at build
        raise InputError(f"--to nanotron: tp={lay.tp} does not divide {m.name}'s {m.kv_heads} key/value heads; "
                         "Nanotron's Llama splits whole KV heads over TP (num_key_value_heads % tp == 0); "
                         f"use a tp that divides {m.kv_heads}, or megatron or torchtitan")
    caveats = []
    if lay.vp > 1:
        caveats.append(f"vp={lay.vp}: Nanotron has no interleaved schedule (pp_engine 1f1b, larger bubble)")
    if lay.recompute == "selective":
        caveats.append("selective recomputation: Nanotron has none; recompute_layer false keeps all activations "
                       "(the nearest), tp_recompute_allgather true")
    if lay.zero >= 2:
        caveats.append(f"zero={lay.zero}: Nanotron implements ZeRO-1 only (zero_stage 1; gradients and weights "
                       f"stay unsharded, {memory_as_run(tg, zero=1, shard=0)})")
    if lay.shard:
        caveats.append("HSDP shard group: Nanotron shards ZeRO-1 over all DP ranks")
    if t.precision == "fp8":
        caveats.append("fp8: Nanotron's release trains in bfloat16 (dtype bfloat16)")
    # optimizer and schedule as in framework-configs.md's verified Nanotron example; rms_norm_eps is
    # the model's (nanotron config/models_config.py LlamaConfig.rms_norm_eps, its every
    # TritonRMSNorm's eps: models/llama.py), not one number for every model
    cfg = {
        "general": {"project": "shardwise", "run": f"{_run_name(m.name)}-{lay.tp}tp{lay.pp}pp{lay.dp}dp", "seed": 42,
                    "ignore_sanity_checks": True},
        "checkpoints": {"checkpoint_interval": 1000, "checkpoints_path": "checkpoints", "save_initial_state": False},
        "parallelism": {
            "dp": lay.dp, "tp": lay.tp, "pp": lay.pp, "pp_engine": "1f1b",
            "tp_mode": "REDUCE_SCATTER" if lay.sp else "ALL_REDUCE",
            "tp_linear_async_communication": bool(lay.sp),
            "tp_recompute_allgather": True,
            "recompute_layer": lay.recompute == "full",
            "context_parallel_size": lay.cp, "expert_parallel_size": lay.ep,
        },
        "model": {
            "dtype": "bfloat16", "ddp_bucket_cap_mb": 25, "make_vocab_size_divisible_by": 1,
            "init_method": {"std": 0.02},
            "model_config": {
                "is_llama_config": True, "hidden_size": m.hidden, "intermediate_size": m.ffn,
                "num_hidden_layers": m.layers, "num_attention_heads": m.heads, "num_key_value_heads": m.kv_heads,
                "max_position_embeddings": t.seq_len, "vocab_size": m.vocab, "rms_norm_eps": float(m.norm_eps),
                "rope_theta": float(m.rope_theta), "tie_word_embeddings": bool(m.tied),
                "hidden_act": GLU_ACTIVATION.get(m.mlp, "silu"),
            },
        },
        "optimizer": {
            # fp32 gradient accumulation is nanotron's fp32 master copy (FP32GradientAccumulator, which the
            # optimizer steps: helpers.py init_optimizer_and_grad_accumulator); pure-bf16 has none
            "zero_stage": min(lay.zero, 1), "accumulate_grad_in_fp32": t.precision != "pure-bf16", "clip_grad": 1.0, "weight_decay": 0.1,
            "learning_rate_scheduler": {"learning_rate": 0.00015, "lr_warmup_steps": 2000, "lr_warmup_style": "linear",
                                        "lr_decay_style": "cosine", "min_decay_lr": 1.5e-05},
            "optimizer_factory": dict(ADAMW),
        },
        "tokens": {"sequence_length": t.seq_len, "micro_batch_size": lay.mbs,
                   "batch_accumulation_per_replica": lay.grad_accum, "train_steps": tg.train_steps or 100000, "val_check_interval": -1},
    }
    factory, more = optimizer_factory(tg)
    cfg["optimizer"]["optimizer_factory"] = factory
    caveats += more
    caveats += llama_shape_caveats(m)
    if m.rope_scaling:
        # longrope (Phi-3.5, Phi-4-mini) scales by per-dimension factor lists, with no one factor
        factor = f" (factor {m.rope_factor:g})" if m.rope_factor else ""
        caveats.append(f"RoPE scaling {m.rope_scaling}{factor}: not written; Nanotron trains "
                       "with unscaled RoPE at this rope_theta")
    if m.window_masks(t.seq_len):
        caveats.append(f"sliding-window attention ({m.sliding_window} tokens on {m.sliding_layers} of {m.layers} "
                       "layers): Nanotron's Llama has none; every layer attends over the whole sequence, a "
                       "different model and slower than the estimate")
    if m.family not in ("llama", "mistral", "ministral", "qwen2", "qwen2.5"):
        caveats.append(f"{m.name} is exported as a Llama-architecture config (is_llama_config); check its "
                       "normalisation and activation")
    return cfg, caveats


def llama_shape_caveats(m) -> list[str]:
    """What Nanotron's Llama builds otherwise than the model, whatever its family (nanotron main,
    src/nanotron/models/llama.py CausalSelfAttention): each head hidden_size // num_attention_heads
    wide (d_qk; LlamaConfig has no head_dim), qkv_proj and o_proj without biases (bias=False;
    LlamaConfig.attention_bias is read by no layer; so none for Seed-OSS's o_proj bias alone,
    ModelSpec.o_bias, either), no q/k norms, RoPE over the whole head (its
    RotaryEmbedding dim=d_qk). A head width or bias the model has is another model, with the
    parameter count said; the rest are other numerics on the same shapes."""
    from shardwise.kb.params import total_params
    built = {}
    if m.head_dim and m.head_dim != m.hidden // m.heads:
        built["head_dim"] = 0
    if m.qkv_bias or m.linear_bias or m.o_bias:
        built.update(qkv_bias=False, linear_bias=False, o_bias=False)
    out = []
    if built:
        what = [f"each head {m.hidden // m.heads} wide (hidden_size / num_attention_heads), not {m.head_dim}"
                ] if "head_dim" in built else []
        what += ["no attention biases"] if "qkv_bias" in built else []
        more = total_params(m.model_copy(update=built)) - total_params(m)
        out.append(f"Nanotron's Llama builds {' and '.join(what)}: a different model, {abs(more):,} parameters "
                   f"{'more' if more > 0 else 'fewer'} than {m.name}'s {total_params(m):,} that the estimate sized")
    if m.qk_norm or m.qk_l2_norm_layers:
        out.append("q/k norms: Nanotron's Llama has none; same shapes, other numerics")
    if m.rotary_fraction != 1:
        out.append(f"partial RoPE ({m.rotary_fraction:g} of each head, partial_rotary_factor): Nanotron's Llama "
                   "rotates every dimension of the head; same shapes, other numerics")
    return out


# The activation Nanotron's Llama MLP gates with (GLUActivation over its ACT2FN, transformers'
# names): SiLU for a SwiGLU, the tanh GELU Gemma's GeGLU uses (config.json's hidden_act)
GLU_ACTIVATION = {"swiglu": "silu", "geglu": "gelu_pytorch_tanh"}


def _run_name(name: str) -> str:
    """The model's name as a run name: a Hugging Face id's '/' (Qwen/Qwen2.5-7B) and any other
    character outside letters, digits, '.', '_' and '-' become '-' (the run name names folders)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"


# the optimizer's numbers are framework-configs.md's verified example's, not sized by shardwise
SCHEDULE_COMMENT = ("# learning_rate_scheduler, weight_decay and the Adam betas: placeholders that shardwise does not "
                    "size: set your own")
ADAMW = {"name": "adamW", "adam_beta1": 0.9, "adam_beta2": 0.95, "adam_eps": 1.0e-08, "torch_adam_is_fused": True}


def optimizer_factory(tg: Target) -> tuple[dict, list[str]]:
    """optimizer_factory (nanotron main's OptimizerArgs: adamW or sgd): adamW is torch.optim.AdamW
    with fused=torch_adam_is_fused, so unfused it runs torch's default, foreach on CUDA; sgd is
    torch.optim.SGD with no momentum (helpers.init_optimizer_and_grad_accumulator). The single-tensor
    AdamW, 8-bit AdamW and Adafactor are not Nanotron's, nor SGD's momentum buffer: what runs
    instead is said, with its memory."""
    o = named(tg)
    if o is None or o == "adamw-fused":
        return dict(ADAMW), []
    if o in ("adamw-foreach", "adamw-single"):
        caveats = [] if o == "adamw-foreach" else [runs_instead(
            tg, "Nanotron's adamW has no single-tensor step", "torch's foreach AdamW (torch_adam_is_fused false), "
            "with a temporary of every parameter at the step", "adamw-foreach")]
        return dict(ADAMW, torch_adam_is_fused=False), caveats
    if o == "sgd":
        return {"name": "sgd"}, [runs_instead(tg, "Nanotron's sgd is torch.optim.SGD without momentum",
                                             "SGD with no momentum buffer, less memory than the estimate, which "
                                             "sized one", None)]
    return dict(ADAMW), [runs_instead(tg, f"Nanotron builds adamW and sgd only, no {WHAT[o]}",
                                      "fused AdamW (adamW)", "adamw-fused")]


def export(tg: Target) -> Export:
    cfg, caveats = config(tg)
    head = "\n".join(with_caveats(tg.header(), caveats) + [tg.steps_comment(), SCHEDULE_COMMENT])
    return Export("nanotron", {"nanotron.yaml": head + "\n" + yaml.safe_dump(cfg, sort_keys=False)}, caveats)
