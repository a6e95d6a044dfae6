"""The run and its launch: the optimizer, the fine-tune's checkpoint, the vocabulary's rows and
the learning-rate placeholders, then launch_args (every flag in order), the torchrun script
export() writes, and script_args, which reads that script's arguments back."""
from __future__ import annotations

import shlex

from shardwise.kb.frameworks import megatron_ep_overlap_share

from ..optimizer import WHAT, named, runs_instead
from ..target import Export, Target, allocator_environment, shell_command, with_caveats
from .architecture import model_args
from .cuda_graphs import cuda_graph_args, graph_environment
from .parallel import needs_lines, parallel_args


def optimizer_args(tg: Target) -> tuple[list, list[str]]:
    """--optimizer (arguments.py: adam, sgd, muon, lion, soap, ...). Megatron's adam is AdamW
    (OptimizerConfig.decoupled_weight_decay defaults to True) run by Transformer Engine's FusedAdam,
    in place: the framework's own AdamW the estimate sizes for "adamw", left at the default. Its sgd
    is torch.optim.SGD with --sgd-momentum (0.9, written: the estimate sizes the momentum buffer).
    Megatron has no single-tensor or foreach AdamW, no 8-bit AdamW and no Adafactor: the nearest is
    its adam, said with the memory it runs in."""
    o = named(tg)
    if o is None:
        return [], []
    if o == "sgd":
        return ["--optimizer", "sgd", "--sgd-momentum", 0.9], []
    if o == "adamw-fused":
        return ["--optimizer", "adam"], []
    fused = "Megatron's adam (AdamW run by Transformer Engine's FusedAdam, in place)"
    if o in ("adamw-foreach", "adamw-single"):
        return ["--optimizer", "adam"], [runs_instead(tg, f"Megatron's adam has no {WHAT[o]} step", fused,
                                                      "adamw-fused")]
    return [], [runs_instead(tg, f"Megatron has no {WHAT[o]} (--optimizer takes adam, sgd, muon, lion, soap)",
                             fused, "adamw-fused")]


# a fine-tune (or RLHF's policy) starts from the model's checkpoint, named by this variable
CHECKPOINT_VAR = "CHECKPOINT_DIR"


def loads_checkpoint(tg: Target) -> bool:
    return tg.job.training.training in ("finetune", "rlhf")


def checkpoint_args(tg: Target) -> list[str]:
    """A fine-tune loads the model's weights (--load; --finetune: not its optimizer, RNG state or
    iteration, which start afresh) from the directory in $CHECKPOINT_DIR, which the shell refuses
    to leave unset (an empty --load trains from random weights); --exit-on-missing-checkpoint stops
    the run where the directory holds no checkpoint, where Megatron would otherwise warn and start
    from random weights (checkpointing.py _load_base_checkpoint). (No quote inside the ${...:?}
    message: bash would take it as one.)"""
    if not loads_checkpoint(tg):
        return []
    return ["--load", f"${{{CHECKPOINT_VAR}:?set {CHECKPOINT_VAR} to the Megatron checkpoint directory of the model}}",
            "--finetune", "--exit-on-missing-checkpoint"]


# --make-vocab-size-divisible-by's default (megatron/training/arguments.py line 2441, NVIDIA/Megatron-LM@d98e8a6)
MEGATRON_VOCAB_MULTIPLE = 128


def vocab_args(tg: Target) -> tuple[list, list[str]]:
    """--padded-vocab-size config.json's vocabulary, so that Megatron builds the embedding and output
    rows the estimate sized and a checkpoint of the model holds (NVIDIA/Megatron-LM@d98e8a6).
    Unset, Megatron pads the tokenizer's vocabulary to a multiple of --make-vocab-size-divisible-by
    x TP, ceil(V / (128 TP)) x 128 TP (core/tokenizers/utils/build_tokenizer.py line 133
    vocab_size_with_padding, which _set_padded_vocab_size runs only where padded_vocab_size is
    None): Llama 3's 128,256 becomes 129,024 rows at TP 8, and a tokenizer shorter than config.json's
    rows (Qwen's 151,665 tokens beside 151,936) builds fewer than the checkpoint holds. A given size
    is the model's as it is (training/argument_utils.py line 474: should_pad_vocab False), whatever
    the tokenizer type. VocabParallelEmbedding splits the rows evenly over TP (core/tensor_parallel/
    utils.py line 118, divide): a vocabulary TP does not divide keeps Megatron's padding, said."""
    m, tp = tg.job.model, tg.layout.tp
    if m.vocab % tp == 0:
        return ["--padded-vocab-size", m.vocab], []
    multiple = MEGATRON_VOCAB_MULTIPLE * tp
    padded = -(-m.vocab // multiple) * multiple
    said = (f"config.json's vocabulary of {m.vocab:,} does not split over TP {tp} (Megatron's vocab-parallel "
            f"embedding divides its rows evenly): Megatron pads the tokenizer's vocabulary to a multiple of "
            f"{MEGATRON_VOCAB_MULTIPLE} x TP, {padded:,} rows for {m.vocab:,} tokens, {padded - m.vocab:,} more than "
            "the estimate sized")
    if loads_checkpoint(tg):
        said += f", and more than the checkpoint's {m.vocab:,}-row embedding fills: pad it when converting it"
    return [], [said]


# the learning-rate schedule the script writes: framework-configs.md's verified pre-training example's,
# a placeholder that shardwise does not size (said in the script)
SCHEDULE = ["--lr", "1.5e-4", "--min-lr", "1.5e-5", "--lr-decay-style", "cosine"]


def launch_args(tg: Target) -> tuple[list[str], list[str]]:
    model, caveats = model_args(tg)
    par, more = parallel_args(tg)
    caveats += more
    par += cuda_graph_args(tg)
    opt, more = optimizer_args(tg)
    caveats += more
    vocab, more = vocab_args(tg)
    caveats += more
    rest = [*vocab, "--train-iters", tg.train_steps or 100000, *opt, *SCHEDULE,
            "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", "$TOKENIZER", "--data-path", "$DATA_PREFIX"]
    return [str(x) for x in model + par + rest + checkpoint_args(tg)], caveats


def connections_line(tg: Target) -> str:
    """One CUDA connection orders TP/CP communication before compute (Megatron asserts it on
    Hopper and Ampere when TP or CP > 1); Megatron-FSDP asserts the opposite, and the EP
    all-to-all overlap wants more (arguments.py: "overlap_moe_expert_parallel_comm requires
    setting a larger CUDA_DEVICE_MAX_CONNECTIONS"; 32 as NVIDIA's MoE launchers set it) -- which
    it gets where no TP or CP group needs the one."""
    lay = tg.layout
    if lay.zero >= 2:
        return "unset CUDA_DEVICE_MAX_CONNECTIONS"
    if megatron_ep_overlap_share(lay) > 0 and lay.tp == 1 and lay.cp == 1:
        return "export CUDA_DEVICE_MAX_CONNECTIONS=32"
    return "export CUDA_DEVICE_MAX_CONNECTIONS=1"


def export(tg: Target) -> Export:
    args, caveats = launch_args(tg)
    c = tg.job.cluster
    lines = with_caveats(tg.header(), caveats) + [
        "# set TOKENIZER (a Hugging Face tokenizer name or path)"
        + (", DATA_PREFIX (Megatron .bin/.idx prefix) and CHECKPOINT_DIR (the model's weights as a Megatron "
           "checkpoint, e.g. converted from Hugging Face with Megatron-Bridge; --finetune loads the weights alone"
           + (", and Megatron-FSDP reads it in its --ckpt-format fsdp_dtensor" if tg.layout.zero >= 2 else "") + ")"
           if loads_checkpoint(tg) else " and DATA_PREFIX (Megatron .bin/.idx prefix)"),
        tg.steps_comment(),
        f"# learning rate: {' '.join(SCHEDULE)}, placeholders that shardwise does not size: set your own"
        + (" (a fine-tune usually runs a lower one)" if loads_checkpoint(tg) else ""),
        connections_line(tg),
    ] + needs_lines(tg) + allocator_environment(tg.job) + graph_environment(tg) + (
        [f"# {c.nodes} nodes: run this on every node, with HEAD_NODE the first node's address (torchrun's c10d "
         "rendezvous gives each node its rank)"] if c.nodes > 1 else []) + shell_command(
        f"torchrun --nnodes {c.nodes} --nproc-per-node {c.gpus_per_node}"
        + (" --rdzv-backend c10d --rdzv-endpoint $HEAD_NODE:29500" if c.nodes > 1 else "") + " pretrain_gpt.py", args)
    return Export("megatron", {"megatron_pretrain.sh": "\n".join(lines) + "\n"}, caveats)


def script_args(text: str) -> list[str]:
    """The pretrain_gpt.py arguments of an exported script, environment variables left as names."""
    # the launch line's, not a comment's: the command starts at torchrun
    body = text[text.index("\ntorchrun "):].split("pretrain_gpt.py", 1)[1].replace("\\\n", " ")
    return shlex.split(body, comments=True)
