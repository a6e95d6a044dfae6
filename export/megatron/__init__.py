"""Megatron-LM: a pretrain_gpt.py launch script (megatron-core 0.19 flags).

Flags from the live parser (docs/reference/framework-configs.md section 2): VPP is
--num-virtual-stages-per-pipeline-rank (the old --virtual-pipeline-model-parallel-size is
gone); DP is never passed (WORLD_SIZE / (TP x PP x CP)); ZeRO-1 is the distributed optimizer,
ZeRO-2/3 are Megatron-FSDP's optim_grads / optim_grads_params; the global batch must divide
by micro-batch x DP, accumulation is implicit.

One concept a module: architecture.py (the model: model_args), rope.py, moe.py, llama4.py,
attention.py (the kernel), family_caveats.py (what the command line cannot build),
parallel.py (the layout), cuda_graphs.py, run.py (optimizer, checkpoint, vocabulary and the
launch script). This file only names what the package exports.
"""
from __future__ import annotations

from .family_caveats import GEMMA_FAMILIES
from .moe import GROUP_SCORE_TOP
from .run import export, script_args

__all__ = ["export", "script_args", "GEMMA_FAMILIES", "GROUP_SCORE_TOP"]
