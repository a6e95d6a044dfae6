"""DeepSpeedConfig on our ds_config.json, counting DP ranks the way an mpu makes it count them,
and where there is no TP or PP also without one, as the transformers Trainer runs it.

    validate_deepspeed.py ds_config.json DP [WORLD PP TP FAMILY FRAMEWORK]

For a job on the transformers Trainer (FRAMEWORK hf), the Trainer's own check of the JSON against
its TrainingArguments (integrations/deepspeed.py trainer_config_process) must find no mismatch.

With an expert_parallel section (AutoEP), the rest of the layout checks it as deepspeed.initialize
would: validate_autoep_config over the world, PP, TP and Ulysses sizes at the JSON's ZeRO stage, the
preset's hf_model_types against the model family, and the ZeRO-3 limits the engine asserts when it
builds the stage-3 optimizer (engine.py _validate_zero3_moe_compatibility: no Ulysses, no hpZ,
expert TP 1).
"""
import json
import os
import sys

os.environ.setdefault("DS_ACCELERATOR", "cpu")
import deepspeed.comm as dscomm  # noqa: E402
from deepspeed.runtime.config import DeepSpeedConfig  # noqa: E402


class FakeMPU:
    def __init__(self, dp):
        self.dp = dp

    def get_data_parallel_world_size(self):
        return self.dp


path, dp = sys.argv[1], int(sys.argv[2])
raw = json.load(open(path))
dscomm.get_rank = lambda *a, **k: 0
c = DeepSpeedConfig(raw, mpu=FakeMPU(dp))
print(f"OK deepspeed: batch {c.train_batch_size} = {c.train_micro_batch_size_per_gpu} x "
      f"{c.gradient_accumulation_steps} x {dp}, zero {c.zero_optimization_stage}")
if len(sys.argv) > 5 and int(sys.argv[4]) == int(sys.argv[5]) == 1:
    # no TP or PP: also as the Trainer runs it, without an mpu, where DeepSpeed counts
    # world / sequence_parallel_size data-parallel ranks
    dscomm.get_world_size = lambda *a, **k: int(sys.argv[3])
    bare = DeepSpeedConfig(raw)
    assert bare.world_size == dp, f"without an mpu DeepSpeed counts {bare.world_size} DP ranks, not {dp}"
    print(f"OK deepspeed without an mpu: {bare.world_size:g} DP ranks")
if "expert_parallel" in raw:
    from deepspeed.module_inject.auto_ep_config import validate_autoep_config
    from deepspeed.module_inject.auto_ep_presets.registry import PRESET_MODELS
    world, pp, tp, family = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    ep = c.expert_parallel_config
    sp = raw.get("sequence_parallel_size", 1)
    validate_autoep_config(ep, world, pp, tp, sp, zero_stage=c.zero_optimization_stage)
    preset = PRESET_MODELS[ep.preset_model]
    assert family in preset.hf_model_types, (family, ep.preset_model, preset.hf_model_types)
    if c.zero_optimization_stage == 3:
        assert sp == 1 and c.zero_config.zero_hpz_partition_size == 1 and ep.expert_tensor_parallel_size == 1
    print(f"OK deepspeed AutoEP: preset {ep.preset_model}, autoep_size {ep.autoep_size}, world {world}")
if len(sys.argv) > 7 and sys.argv[7] == "hf":
    import tempfile

    from transformers import TrainingArguments
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig
    world = int(sys.argv[3])
    TrainingArguments.world_size = property(lambda self: world)      # the launch's processes
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=c.train_micro_batch_size_per_gpu,
                             gradient_accumulation_steps=c.gradient_accumulation_steps, bf16=True, use_cpu=True,
                             report_to=[])
    hf = HfTrainerDeepSpeedConfig(json.load(open(path)))
    hf.trainer_config_process(args)
    assert not hf.mismatches, hf.mismatches
    print(f"OK transformers Trainer: the JSON agrees with its arguments over {world} processes")
