"""Megatron-LM's parse_args + validate_args + TransformerConfig on our pretrain_gpt.py script."""
import sys

from megatron_args import parse

script, world = sys.argv[1], sys.argv[2]
args, cfg = parse(script, world)
print(f"OK megatron: world {world}, TP {args.tensor_model_parallel_size}, PP {args.pipeline_model_parallel_size}, "
      f"VPP {args.virtual_pipeline_model_parallel_size}, CP {args.context_parallel_size}, "
      f"DP {args.data_parallel_size}, mbs {args.micro_batch_size}, gbs {args.global_batch_size}, "
      f"recompute {cfg.recompute_granularity}")
