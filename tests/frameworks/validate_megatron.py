"""Megatron-LM's parse_args + validate_args + TransformerConfig on our pretrain_gpt.py script."""
import contextlib
import io
import os
import shlex
import sys

import shims

script, world = sys.argv[1], sys.argv[2]
shims.install(("megatron.",))
os.environ.update(WORLD_SIZE=world, RANK="0", LOCAL_RANK="0",
                  TOKENIZER="meta-llama/Llama-3.1-8B", DATA_PREFIX="/tmp/data_text_document")
text = open(script).read()
# the environment the script itself sets
os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
if "export CUDA_DEVICE_MAX_CONNECTIONS=1" in text:
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
body = os.path.expandvars(text.split("pretrain_gpt.py", 1)[1].replace("\\\n", " "))
# Transformer Engine is not installable on CPU; RoPE fusion is a TE kernel, so this machine
# turns it off (a GPU node with TE keeps the exported default)
sys.argv = ["pretrain_gpt.py"] + shlex.split(body, comments=True) + ["--no-rope-fusion"]

import megatron.training.arguments as A  # noqa: E402

A.get_device_arch_version = lambda: 9
# validate_args asks the GPU for its compute capability where grouped GEMM is on (MoE): a Hopper's
A.torch.cuda.get_device_capability = lambda *a: (9, 0)
with contextlib.redirect_stdout(io.StringIO()):
    args = A.parse_args()
    A.validate_args(args)
    cfg = A.core_transformer_config_from_args(args)
print(f"OK megatron: world {world}, TP {args.tensor_model_parallel_size}, PP {args.pipeline_model_parallel_size}, "
      f"VPP {args.virtual_pipeline_model_parallel_size}, CP {args.context_parallel_size}, "
      f"DP {args.data_parallel_size}, mbs {args.micro_batch_size}, gbs {args.global_batch_size}, "
      f"recompute {cfg.recompute_granularity}")
