"""Megatron-LM's parse_args + validate_args + TransformerConfig on one of our pretrain_gpt.py
scripts, as a Hopper node would run them (used by validate_megatron.py and megatron_model.py)."""
import contextlib
import io
import os
import shlex
import sys

import shims

shims.install(("megatron.",))

import megatron.training.arguments as A  # noqa: E402

A.get_device_arch_version = lambda: 9
# validate_args asks the GPU for its compute capability where grouped GEMM is on (MoE): a Hopper's
A.torch.cuda.get_device_capability = lambda *a: (9, 0)


def parse(script: str, world: str):
    """(args, TransformerConfig) of the script, with the environment the script itself sets."""
    os.environ.update(WORLD_SIZE=world, RANK="0", LOCAL_RANK="0",
                      TOKENIZER="meta-llama/Llama-3.1-8B", DATA_PREFIX="/tmp/data_text_document")
    text = open(script).read()
    os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
    if "export CUDA_DEVICE_MAX_CONNECTIONS=1" in text:
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    if "--fp8-format" in text:
        # any FP8 script runs on Transformer Engine: TransformerConfig refuses MoE FP8 below TE 1.7
        # and the norms' recompute in FP8 below 2.6, and TE does not install on CPU (its version
        # reads 0.0.0 here), so the checks are told the TE of NVIDIA's container for Hopper's FP8-CS
        # runs as for Blackwell's MXFP8 ones (NeMo 26.06: TE 2.16)
        import megatron.core.utils as U
        from packaging.version import Version
        U._te_version = Version("2.16")
    if "--fp8-recipe mxfp8" in text:
        # an MXFP8 script is for Blackwell, where NVIDIA runs it with Transformer Engine 2.16 (NeMo
        # 26.06, Megatron-Bridge docs/releases/software-versions.md); TE does not install on CPU, so
        # its version checks are told that one, and the GPU checks a Blackwell's compute capability
        import megatron.core.utils as U
        from packaging.version import Version
        U._te_version = Version("2.16")
        A.get_device_arch_version = lambda: 10
        A.torch.cuda.get_device_capability = lambda *a: (10, 0)
    body = os.path.expandvars(text[text.index("\ntorchrun "):].split("pretrain_gpt.py", 1)[1].replace("\\\n", " "))
    # Transformer Engine is not installable on CPU; RoPE fusion is a TE kernel, so this machine
    # turns it off (a GPU node with TE keeps the exported default)
    sys.argv = ["pretrain_gpt.py"] + shlex.split(body, comments=True) + ["--no-rope-fusion"]
    with contextlib.redirect_stdout(io.StringIO()):
        args = A.parse_args()
        A.validate_args(args)
        cfg = A.core_transformer_config_from_args(args)
    return args, cfg
