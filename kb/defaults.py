"""What shardwise assumes for a setting the user left out, per training type, and the text
that says so. Every default that can change the answer is stated in the output
(kb/resolve.assumptions); none is applied silently.
"""
from __future__ import annotations

# The framework profile a job runs under when --framework is not given.
# pretrain: Megatron-Core, the stack of 297 of the 337 published training runs in
#   benchmarks/calibration/published_runs.yaml (NeMo, Megatron-Bridge, Megatron-LM).
# finetune, lora, qlora, rlhf: transformers model code ("hf"), as fine-tuning recipes run it:
#   Stanford Alpaca and Vicuna fine-tune with the Hugging Face Trainer (tatsu-lab/stanford_alpaca,
#   lm-sys/FastChat), LoRA/QLoRA through PEFT + bitsandbytes (Dettmers et al. 2023, QLoRA;
#   LLaMA-Factory, Axolotl), RLHF through TRL.
FRAMEWORK = {"pretrain": "megatron", "finetune": "hf", "lora": "hf", "qlora": "hf", "rlhf": "hf"}
_FRAMEWORK_WHY = {
    "megatron": "Megatron-Core, the stack of most published pre-training runs",
    "hf": "transformers model code with the Hugging Face Trainer / PEFT / TRL, as fine-tuning recipes run it",
}

# Settings whose defaults do not depend on the training type, as the output names them.
# The interconnect is stated only where the job leaves the NVLink domain: inside it, no byte
# crosses the inter-node link and its default cannot change the answer.
_PLAIN = (("gpu", "GPU {gpu}"), ("gpus", "{gpus} GPUs"), ("interconnect", "{inter} between nodes"),
          ("seq_len", "sequence length {seq_len:,} tokens"),
          ("precision", "precision {precision}"), ("optimizer", "optimizer {optimizer}"),
          ("attention", "attention {attention}"), ("lora_rank", "LoRA rank {lora_rank}"),
          ("lora_dropout", "LoRA dropout {lora_dropout:g} (PEFT's and Megatron-Bridge's default)"),
          ("rl_algorithm", "RL algorithm ppo (policy, value, reference and reward models)"),
          ("allocator", "allocator {allocator}"), ("zero_grad", "zero_grad {zero_grad} (PyTorch's default)"),
          ("loss_chunks", "{loss_chunks}"))
ADAPTERS = ("lora", "qlora")


def _allocator_text(t) -> str:
    """The CUDA allocator the estimate assumed (kb/memory/overheads.allocator), which sets the
    fragmentation allowance that decides fits near capacity."""
    from .memory.overheads import allocator
    if allocator(t) == "expandable":
        return "expandable segments (torchtitan's run_train.sh sets them)"
    return "caching (PyTorch's default)"


def _loss_chunks_text(t) -> str:
    """The loss's chunking the estimate assumed under fsdp (kb/memory/logits.loss_chunks)."""
    from .memory.logits import loss_chunks
    n = loss_chunks(t)
    return (f"loss in {n} sequence chunks (torchtitan's ChunkedLossWrapper)" if n > 1 else
            "loss over the whole sequence (your script's, not torchtitan's)")


def default_texts(job) -> list[str]:
    """The texts for the settings build_job filled in (``TrainingSpec.defaulted``), batch aside."""
    t, c = job.training, job.cluster
    out = []
    if "framework" in t.defaulted:
        out.append(f"framework not given: {t.framework} for {t.training} ({_FRAMEWORK_WHY[t.framework]}); "
                   "--framework to set it")
    values = {"gpu": c.gpu.name, "gpus": c.gpus, "inter": c.inter.name, "seq_len": t.seq_len,
              "precision": t.precision, "optimizer": t.optimizer, "attention": t.attention, "lora_rank": t.lora_rank,
              "lora_dropout": t.lora_dropout, "allocator": _allocator_text(t), "zero_grad": t.zero_grad,
              "loss_chunks": _loss_chunks_text(t)}
    plain = [form.format(**values) for key, form in _PLAIN
             if key in t.defaulted and (key not in ("lora_rank", "lora_dropout") or t.training in ADAPTERS)
             and (key != "rl_algorithm" or t.training == "rlhf")
             and (key != "interconnect" or c.gpus > c.nvlink_domain)
             # zero_grad is a PyTorch loop's call (Megatron's and DeepSpeed's buffers live on either
             # way: kb/build.py refuses zeros there); the loss's chunking is torchtitan's
             and (key != "zero_grad" or t.framework in ("hf", "fsdp")) and (key != "loss_chunks" or t.framework == "fsdp")]
    if plain:
        out.append(f"defaults used for settings not given: {', '.join(plain)}")
    return out
