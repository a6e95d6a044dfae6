"""Accelerate's own launch path on our config: ClusterConfig, launch args, then the plugin and
ParallelismConfig (FSDP2) or the DeepSpeed plugin over the ds_config.json beside it (DEEPSPEED)."""
import os
import sys

import yaml
from accelerate.commands.config.config_args import ClusterConfig
from accelerate.commands.launch import _validate_launch_command, launch_command_parser
from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env

path = sys.argv[1]
os.chdir(os.path.dirname(os.path.abspath(path)))    # deepspeed_config_file is relative to the launch
ClusterConfig.from_yaml_file(path)
parser = launch_command_parser()
dests = {a.dest for a in parser._actions}
raw = yaml.safe_load(open(path))
for section in ("fsdp_config", "parallelism_config", "deepspeed_config"):
    for k in raw.get(section, {}):
        assert k in dests, f"{section}.{k} is not an accelerate launch option"
args = parser.parse_args(["--config_file", path, "--main_process_port", "0", "train.py"])
args, defaults, mp_from_config = _validate_launch_command(args)
if raw["distributed_type"] == "DEEPSPEED":
    # what launch_command hands the DeepSpeed launcher: the config's own deepspeed keys, and
    # mixed_precision where it came from the file (the plugin refuses both beside a JSON file)
    fields = list(defaults.deepspeed_config) + (["mixed_precision"] if mp_from_config else [])
    args.deepspeed_fields_from_accelerate_config = ",".join(fields)
    _, env = prepare_deepspeed_cmd_env(args)
    os.environ.update(env)
    from accelerate.utils import DeepSpeedPlugin  # noqa: E402

    plugin = DeepSpeedPlugin()
    cfg = plugin.deepspeed_config
    assert cfg["train_batch_size"] == cfg["train_micro_batch_size_per_gpu"] * cfg["gradient_accumulation_steps"] \
        * raw["num_processes"], "train_batch_size != micro-batch x accumulation x processes"
    print(f"OK accelerate: {raw['num_processes']} processes, DeepSpeed ZeRO-{plugin.zero_stage}")
    sys.exit(0)
if raw["distributed_type"] in ("MULTI_GPU", "NO"):
    # torch DDP (one process: none), the Trainer's own: torchrun's process count is the config's
    if raw["distributed_type"] == "MULTI_GPU":
        prepare_multi_gpu_env(args)          # sets the torchrun arguments it launches with
        started = int(args.nproc_per_node) * args.num_machines
    else:
        started = 1
    assert started == raw["num_processes"], f"launches {started} processes, not {raw['num_processes']}"
    assert "fsdp_config" not in raw and "parallelism_config" not in raw
    print(f"OK accelerate: {raw['num_processes']} processes, {raw['distributed_type']}")
    sys.exit(0)
env = prepare_multi_gpu_env(args)
os.environ.update(env)
from accelerate import ParallelismConfig  # noqa: E402
from accelerate.utils import FullyShardedDataParallelPlugin  # noqa: E402

FullyShardedDataParallelPlugin()
pc = ParallelismConfig()
assert pc.total_size == raw["num_processes"], f"parallelism sizes {pc.total_size} != {raw['num_processes']} processes"
print(f"OK accelerate: {raw['num_processes']} processes, {pc}")
