"""DeepSpeedConfig on our ds_config.json, counting DP ranks the way an mpu makes it count them."""
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
dscomm.get_rank = lambda *a, **k: 0
c = DeepSpeedConfig(json.load(open(path)), mpu=FakeMPU(dp))
print(f"OK deepspeed: batch {c.train_batch_size} = {c.train_micro_batch_size_per_gpu} x "
      f"{c.gradient_accumulation_steps} x {dp}, zero {c.zero_optimization_stage}")
