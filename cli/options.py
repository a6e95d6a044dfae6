"""The job flags every command shares (DESIGN.md's command-line contract), and job files.

A job file (``-f job.yaml``) holds the same settings as the flags, with underscores:
``model: llama-3-70b``, ``gpus: 32``, ``seq_len: 32k`` ... Flags given on the command line
override the file. Counts are read as kb/counts.py says: ``seq_len`` and
``global_batch_tokens`` binary (32k = 32,768; 4M = 4 x 2^20), ``params`` and ``token_budget``
decimal (100B = 10^11); numbers only as plain decimals, no exponent (kb/user_yaml.JobYamlLoader: YAML 1.1
reads ``010`` as 8). Choices take any case, as the flags do. A relative ``hf_config`` is read
from the job file's folder (an absolute one as it is), so a job file and its config.json move
together.
"""
from __future__ import annotations

import difflib
import functools
import itertools
import math
import os
import re
from typing import get_args

import click

from shardwise.kb.choices import (RECOMPUTE_CHOICES, Attention, CudaGraphs, Framework, Optimizer, Precision,
                                   RlAlgorithm, TrainingType, ZeroGrad, Allocator)
from shardwise.kb.counts import exponent_refusal
from shardwise.kb.errors import InputError

from .other_names import other_name_hint
from .progress import search_progress

JOB_KEYS = {
    "model": str, "hf_config": str, "params": str, "gpu": str, "gpu_memory": float, "gpu_tflops": float,
    "gpu_fp8_tflops": float, "gpu_hbm_gbps": float, "gpus": int,
    "gpus_per_node": int, "interconnect": str, "seq_len": str, "mbs": int, "global_batch": int,
    "global_batch_tokens": str, "training": str, "precision": str, "optimizer": str, "recompute": str,
    "attention": str, "cuda_graphs": str, "framework": str, "token_budget": str, "price_per_gpu_hour": float,
    "lora_rank": int, "lora_dropout": float, "rl_algorithm": str, "zero_grad": str, "allocator": str, "loss_chunks": int,
}


def _choice(values):
    return click.Choice(values, case_sensitive=False)


class _Plain(click.ParamType):
    """A number in the digits 0-9 (a sign; for a decimal a point): Python's int() and float()
    also read '1_6' as 16 and full-width or other scripts' digits, which no one means on a
    command line, and float() '1e2', which the counts and job files do not take either
    (kb/counts.exponent_refusal). (A job file also refuses leading zeros, which YAML 1.1 reads
    as octal; on a command line 02 is 2.)"""

    def __init__(self, kind):
        self.kind = kind
        self.name = "integer" if kind is int else "number"
        self.pattern = re.compile(r"[+-]?[0-9]+" if kind is int else r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")

    def convert(self, value, param, ctx):
        if isinstance(value, self.kind) and not isinstance(value, bool):
            return value
        text = str(value).strip()
        refusal = exponent_refusal(param.opts[0] if param else "a number", text)
        if refusal:
            raise refusal
        if not self.pattern.fullmatch(text):
            if self.kind is float and text.lower().lstrip("+-") in ("inf", "infinity", "nan"):
                self.fail(f"{value!r} is not a finite number", param, ctx)
            self.fail(f"{value!r} is not {'an integer' if self.kind is int else 'a number'} in the digits 0-9", param, ctx)
        number = self.kind(text)
        if self.kind is float and not math.isfinite(number):
            self.fail(f"{value!r} is out of range", param, ctx)
        return number + 0 if self.kind is float else number     # -0 is 0: a row or line never reads '-0.0'


PLAIN_INT, PLAIN_FLOAT = _Plain(int), _Plain(float)


# the job's counts (kb/counts.py): True where K/M/B/T are binary
COUNTS = {"seq_len": True, "global_batch_tokens": True, "params": False, "token_budget": False}

LOWERCASE = ("precision", "training", "framework", "recompute", "attention", "cuda_graphs", "optimizer", "zero_grad",
             "allocator")


# Settings that exclude each other: one of them names the model, one the batch. A later source
# (a flag over the job file, a --vary value over the base job) that gives one replaces the others.
EXCLUSIVE = (("model", "hf_config", "params"), ("global_batch", "global_batch_tokens"))


def override(settings: dict, given: dict) -> None:
    """Put ``given`` over ``settings``, dropping from ``settings`` what a given key excludes
    (EXCLUSIVE); two keys of ``given`` that exclude each other stay both, for build_job to refuse."""
    for key in given:
        for group in EXCLUSIVE:
            if key in group:
                for other in group:
                    settings.pop(other, None)
    settings.update(given)


def variant_settings(settings: dict, varied: list):
    """Each combination of the parsed --vary values (parse_vary), in the order compare's rows take
    them: (the combination, a copy of ``settings`` with it put over them by override)."""
    keys = [k for k, _ in varied]
    for combo in itertools.product(*[values for _, values in varied]):
        variant = dict(zip(keys, combo))
        given = dict(settings)
        override(given, variant)
        yield variant, given


def job_options(f=None, *, raw: bool = False):
    """Decorate a click command with the job flags; the command receives ``job`` (a kb.Job), or
    with ``raw`` the checked ``settings`` dict (for commands that vary them) and ``given``, each
    setting as its refusal names it ('--gpus 64', or 'job.yaml: gpus 64')."""
    if f is None:
        return lambda g: job_options(g, raw=raw)
    opts = [
        click.option("-f", "--job-file", type=click.Path(dir_okay=False),
                     help="YAML job file, the job flags' names as keys: model: llama-3-8b, gpus: 64, "
                          "seq_len: 32k (flags override it)"),
        click.option("--model", help="catalog model name, e.g. llama-3-70b (shardwise kb models)"),
        click.option("--hf-config", help="path to a Hugging Face config.json, or its folder"),
        click.option("--params", help="parameter count, e.g. 70B (a standard shape is inferred)"),
        click.option("--gpu", help="catalog GPU, e.g. h100-sxm (shardwise kb gpus; default h100-sxm)"),
        click.option("--gpu-memory", type=PLAIN_FLOAT, help="override GPU memory, GiB: the total nvidia-smi reports in MiB, divided by 1024 (8-320)"),
        click.option("--gpu-tflops", type=PLAIN_FLOAT, help="a GPU the catalog lacks, built on --gpu: its dense BF16 "
                     "TFLOP/s (10-10000; FP8 and FP32 follow in --gpu's ratio unless --gpu-fp8-tflops is given)"),
        click.option("--gpu-fp8-tflops", type=PLAIN_FLOAT, help="its dense FP8 TFLOP/s (10-20000)"),
        click.option("--gpu-hbm-gbps", type=PLAIN_FLOAT, help="its memory bandwidth, GB/s (100-20000; 4.8 TB/s = 4800)"),
        click.option("--gpus", type=PLAIN_INT, help="GPU count (1-16384; default 8)"),
        click.option("--gpus-per-node", type=PLAIN_INT, help="GPUs per node (default: the GPU's usual server)"),
        click.option("--interconnect", help="infiniband|roce|ethernet: the link between nodes (infiniband is NDR, "
                                             "400 Gb/s a GPU; 200 Gb/s HDR is infiniband-hdr); nvlink|pcie: the "
                                             "link inside a node (between nodes then stays InfiniBand NDR); or a "
                                             "link of `kb links` (inside a node: the GPU's own, or PCIe); "
                                             "default: the GPU's own link inside a node, InfiniBand NDR between"),
        click.option("--seq-len", help="sequence length, tokens: 8192, 32k (= 32,768), 128K (default 4096)"),
        click.option("--mbs", type=PLAIN_INT, help="micro-batch size (default: the advisor chooses)"),
        click.option("--global-batch", type=PLAIN_INT,
                     help="global batch, sequences; in tokens: --global-batch-tokens 4M (default: about 4M "
                          "tokens for pretrain, 128 sequences otherwise)"),
        click.option("--global-batch-tokens", help="global batch, tokens; K/M/B binary: 4M = 4,194,304"),
        click.option("--training", type=_choice(list(get_args(TrainingType))),
                     help="pretrain (default): every weight, from scratch; finetune: every weight, from a "
                          "checkpoint; lora / qlora: a frozen (qlora: 4-bit) base with PEFT adapters; rlhf: a policy "
                          "trained beside the models --rl-algorithm names (default PPO's value, reference and reward)"),
        click.option("--precision", type=_choice(list(get_args(Precision))),
                     help="bf16 (default): bf16 compute with fp32 master weights and optimizer states; pure-bf16: "
                          "weights, gradients and optimizer states all bf16; fp8: FP8 GEMMs (GPUs with FP8 "
                          "tensor cores)"),
        click.option("--optimizer", type=_choice(list(get_args(Optimizer))),
                     help="adamw (default): the framework's own fused AdamW; the others name one implementation: "
                          "torch.optim.AdamW fused / foreach / single-tensor, bitsandbytes' 8-bit AdamW, "
                          "Adafactor, SGD with momentum"),
        click.option("--recompute", type=_choice(list(RECOMPUTE_CHOICES)),
                     help="auto lets the advisor choose; modules = Megatron's --recompute-modules"),
        click.option("--attention", type=_choice(list(get_args(Attention))),
                     help="flash (default): a FlashAttention-3 / cuDNN-class fused kernel; sdpa: PyTorch SDPA, "
                          "transformers' default (timed as flash, but a sliding-window or chunked model under hf or "
                          "deepspeed computes the whole dense-masked square past the window); flash2: "
                          "FlashAttention-2; eager: unfused matmul-softmax-matmul"),
        click.option("--cuda-graphs", type=_choice(list(get_args(CudaGraphs))),
                     help="full-iteration: Megatron-Core captures each training step in one CUDA graph "
                          "(default none)"),
        click.option("--framework", type=_choice(list(get_args(Framework))),
                     help="megatron: Megatron-Core; deepspeed; fsdp: torchtitan / FSDP2; hf: the transformers "
                          "Trainer (with PEFT / TRL); default megatron for pretrain, hf for the rest"),
        click.option("--zero-grad", type=_choice(list(get_args(ZeroGrad))),
                     help="hf/fsdp loops: set-to-none frees the gradients between steps (PyTorch's default), "
                          "zeros keeps them (zero_grad(set_to_none=False))"),
        click.option("--allocator", type=_choice(list(get_args(Allocator))),
                     help="PyTorch's CUDA allocator as the run sets it: caching (PyTorch's default) or expandable "
                          "(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which the exports then set); default: "
                          "the framework's own (expandable where torchtitan runs the job, caching elsewhere)"),
        click.option("--token-budget", help="tokens to train, decimal: 100B = 10^11"),
        click.option("--price-per-gpu-hour", type=PLAIN_FLOAT, help="price of one GPU-hour in dollars, e.g. 2.5, for cost"),
        click.option("--lora-rank", type=PLAIN_INT, help="LoRA rank (default 16)"),
        click.option("--lora-dropout", type=PLAIN_FLOAT,
                     help="PEFT's lora_dropout, 0 to <1 (default 0, PEFT's): above 0 each adapter keeps its own "
                          "dropped-out input and mask"),
        click.option("--rl-algorithm", type=_choice(list(get_args(RlAlgorithm))),
                     help="--training rlhf: ppo (default): policy and value trained, reference and reward frozen; "
                          "grpo: the policy and a frozen reference, the reward a function; dpo: the policy and a "
                          "frozen reference, each preference pair two sequences (batch and mbs count sequences)"),
        click.option("--loss-chunks", type=PLAIN_INT,
                     help="fsdp: the loss in N sequence chunks (torchtitan's ChunkedLossWrapper; default 8 for "
                          "pre-training and fine-tuning, 1 = the whole logits at once)"),
    ]

    @functools.wraps(f)
    def wrapper(*args, job_file=None, **kwargs):
        from shardwise.kb.build import build_job     # pydantic and NumPy: not for --help

        with search_progress():                      # a bar on a terminal when the search is long
            settings = load_job_file(job_file) if job_file is not None else {}
            flags = {}
            for k in JOB_KEYS:
                v = kwargs.pop(k, None)
                if v is not None:
                    flags[k] = v.lower() if isinstance(v, str) and k in LOWERCASE else v
            override(settings, flags)
            from_file = {k for k in settings if k not in flags} if job_file is not None else set()
            try:
                if raw:
                    # refuse a bad base job before any variant; a --lora-rank or --lora-dropout waits for the variants,
                    # which may vary the training type into one that takes it, and a job without a
                    # model for a --vary that names one (compare_variants refuses it if none does)
                    if any(k in settings for k in EXCLUSIVE[0]):
                        base = {k: v for k, v in settings.items() if k not in ("lora_rank", "lora_dropout")}
                        try:
                            build_job(**base)
                        except InputError as e:
                            # refused for a default a --vary replaces (the 8 GPUs of `--gpus-per-node
                            # 6 --vary gpus=6,12`): not the job's fault while some variant builds
                            refusal = _refusal_no_variant_escapes(base, kwargs.get("vary") or (), e)
                            if refusal is not None:
                                raise refusal from None
                    kwargs["settings"] = settings
                    # where each setting was given, as a refusal names it: its flag, or the job file's key
                    kwargs["given"] = {k: f"{job_file}: {k} {v}" if k in from_file else
                                       f"--{k.replace('_', '-')} {v}" for k, v in settings.items()}
                else:
                    kwargs["job"] = build_job(**settings)
            except InputError as e:
                raise named_in_file(e, job_file, from_file) from None
            return f(*args, **kwargs)

    for o in reversed(opts):
        wrapper = o(wrapper)
    return wrapper


def _refusal_no_variant_escapes(base: dict, vary: tuple, refused: InputError) -> InputError | None:
    """None where some combination of the --vary values (compare) makes ``base``, which build_job
    refused, a job it takes; else the job's refusal, worded as the first combination's: a value
    the user varied, not the default it replaces (`--gpus-per-node 6 --vary gpus=7,9` is refused
    for --gpus 7, not for the 8 GPUs the user never gave), and a setting no value varies the same
    either way. A --vary that does not parse builds none: its own refusal, which names what the
    user typed (the base job's, ``refused``, may name a default the --vary was to replace)."""
    from shardwise.kb.build import build_job
    try:
        varied = parse_vary(vary)
    except InputError as bad:
        return bad
    first = None
    for _, job in variant_settings(base, varied):
        try:
            build_job(**job)
            return None
        except InputError as e:
            first = first or e
    return first or refused


def named_in_file(e: InputError, path: str | None, from_file: set) -> InputError:
    """A setting's refusal, which names its flag (build_job reads flags and job files alike),
    named as the job file's key where the value came from the file: 'j.yaml: 'gpu': unknown
    gpu '8'', not '--gpu: ...', which the user never typed."""
    text = str(e)
    for key in sorted(from_file, key=len, reverse=True):
        flag = "--" + key.replace("_", "-")
        if text.startswith(flag + ":"):           # the value itself, not how it combines with others
            return InputError(f"{path}: '{key}'{text[len(flag):]}")
    return e


def load_job_file(path: str) -> dict:
    from shardwise.kb.errors import read_input_file, refuse_empty_path
    from shardwise.kb.user_yaml import JobYamlLoader, load_user_yaml
    refuse_empty_path(path, "-f", "a YAML job file")
    text = read_input_file(path, "-f")
    data = load_user_yaml(text, path, JobYamlLoader)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: a job file must be a mapping of settings, e.g. 'model: llama-3-70b'")
    return job_settings(data, path)


def job_settings(data: dict, path: str, where: str | None = None) -> dict:
    """The settings of a job file's mapping (or of a policy test case's ``job:``), each read as
    its flag reads it: keys with - or _, choices in any case, hf_config beside the file ``path``.
    A refusal names ``where`` (the file, or the file and the case)."""
    where = where or path
    out = {}
    for k, v in data.items():
        key = str(k).replace("-", "_")
        if key not in JOB_KEYS:
            near = difflib.get_close_matches(key, list(JOB_KEYS), n=3, cutoff=0.6)
            hint = other_name_hint(key, JOB_KEYS, as_flag=False) or \
                (f"did you mean {', '.join(near)}?" if near else f"allowed: {', '.join(sorted(JOB_KEYS))}")
            raise InputError(f"{where}: unknown setting '{k}'; {hint}")
        if key in out:          # seq_len and seq-len name one setting: the second would win silently
            raise InputError(f"{where}: '{k}' given twice (as {key} and {key.replace('_', '-')} are one setting)")
        want = JOB_KEYS[key]
        if want is not str or key in COUNTS:
            # YAML reads 1e4 as text: refused as on the command line, for a number and a count alike
            refusal = exponent_refusal(f"{path}: '{k}'", v, COUNTS.get(key))
            if refusal:
                raise refusal
        if want is float and isinstance(v, (int, float)) and not isinstance(v, bool):
            v = float(v) + 0.0          # YAML's -0.0 is 0, as on the command line
        if want is str and isinstance(v, (int, float)) and not isinstance(v, bool):
            v = str(v)
        if isinstance(v, bool):
            raise InputError(_yaml_boolean(where, k, key, v))
        if not isinstance(v, want):
            raise InputError(f"{where}: '{k}' must be {want.__name__}, got {v!r}{WANT_HINTS.get(key, '')}")
        out[key] = _as_flag_reads(key, v, path)
    for group in EXCLUSIVE:             # a flag may replace one of these; two in the file are a conflict
        both = [k for k in group if k in out]
        if len(both) > 1:
            raise InputError(f"{where}: {' and '.join(both)} name the same thing; give one of {', '.join(group)}")
    return out


# the values of each setting that is a choice, as its flag offers them
CHOICES = {"training": get_args(TrainingType), "precision": get_args(Precision), "optimizer": get_args(Optimizer),
           "recompute": RECOMPUTE_CHOICES, "attention": get_args(Attention), "cuda_graphs": get_args(CudaGraphs),
           "framework": get_args(Framework), "zero_grad": get_args(ZeroGrad), "allocator": get_args(Allocator),
           "rl_algorithm": get_args(RlAlgorithm)}


def _yaml_boolean(where: str, k, key: str, v: bool) -> str:
    """The refusal of a boolean where no setting takes one: YAML 1.1 reads an unquoted yes, no,
    on, off, true or false so, and `recompute: off` would otherwise be told only "must be str"."""
    said = f"{where}: '{k}' reads as {str(v).lower()}, a YAML boolean (an unquoted yes, no, on, off, true or false)"
    if key in CHOICES:
        return f"{said}; allowed: {', '.join(CHOICES[key])}"
    if JOB_KEYS[key] is not str or key in COUNTS:
        return f"{said}; give {COUNT_HINTS.get(key, 'a number')}"
    return f"{said}; give a name, quoted if it is one of those words"


# what a value of the wrong type is told to write instead, where the key is often taken for another
WANT_HINTS = {"global_batch": " (sequences; a token count is global_batch_tokens: 4M)"}

# what a boolean in place of a count is told to give instead (the counts: COUNTS)
COUNT_HINTS = {"seq_len": "a count of tokens, e.g. 32k", "global_batch_tokens": "a count of tokens, e.g. 4M",
               "token_budget": "a count of tokens, e.g. 100B", "params": "a parameter count, e.g. 70B"}


def _as_flag_reads(key: str, v, path: str):
    """A job file's value as the same flag's value would be read: choices in any case (click's
    case_sensitive=False, then lower-cased in job_options), and hf_config beside the job file."""
    if key in LOWERCASE:
        return v.lower()
    if key == "hf_config" and v.strip():   # an empty one stays empty, for resolve_model to refuse, not the folder
        return os.path.join(os.path.dirname(path), os.path.expanduser(v))   # an absolute (or ~) one as it is
    return v


def _same_value(key: str, v):
    """What a --vary value means, to find one given twice: a count as the job reads it (seq_len
    and token batches binary, budgets and parameter counts decimal), a name in any case."""
    from shardwise.kb.counts import parse_count, parse_seq_len
    try:
        if key == "seq_len":
            return parse_seq_len(v)
        if key in ("global_batch_tokens", "token_budget", "params"):
            return parse_count(v, binary=key == "global_batch_tokens")
    except InputError:
        return v
    return v.lower() if isinstance(v, str) else v


def parse_vary(texts: tuple) -> list[tuple[str, list]]:
    """--vary gpu=h100-sxm,h200 --vary gpus=64,128 -> [("gpu", [...]), ("gpus", [64, 128])]."""
    out = []
    for text in texts:
        key, sep, values = text.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in JOB_KEYS:
            raise InputError(f"--vary {text!r}: expected SETTING=V1,V2 with SETTING one of {', '.join(sorted(JOB_KEYS))}")
        items = [v.strip() for v in values.split(",")]
        if not any(items):
            raise InputError(f"--vary {text!r}: no values after '='")
        if "" in items:         # 'h100-sxm,,h200' or a trailing comma: a value left out, not one row fewer
            raise InputError(f"--vary {text!r}: an empty value (two commas in a row, or one at an end); give "
                             "each value once, separated by single commas (SETTING=V1,V2)")
        want = JOB_KEYS[key]
        if want is not str or key in COUNTS:
            for v in items:
                refusal = exponent_refusal(f"--vary {key}", v, COUNTS.get(key))
                if refusal:
                    raise refusal
        plain = {int: PLAIN_INT, float: PLAIN_FLOAT}.get(want)
        try:
            items = [plain.convert(v, None, None) if plain else want(v) for v in items]
        except (ValueError, click.BadParameter):
            raise InputError(f"--vary {key}: values must be {want.__name__} in the digits 0-9, got {values!r}")
        if key in LOWERCASE:
            items = [v.lower() for v in items]
        same = [_same_value(key, v) for v in items]      # 4k and 4096, H100-SXM and h100-sxm are one value
        twice = sorted({str(v) for v, k in zip(items, same) if same.count(k) > 1})
        if twice:
            raise InputError(f"--vary {key}: {', '.join(twice)} name one value more than once; each value makes one row")
        from shardwise.kb.build import check_setting
        for v in items:
            try:
                check_setting(key, v)
            except InputError as e:
                raise InputError(f"--vary {key}={v}: {e}")
        if any(k == key for k, _ in out):
            raise InputError(f"--vary {key} given twice; list all its values in one --vary")
        out.append((key, items))
    return out
