"""Accelerate's own launch path on our config: ClusterConfig, launch args, plugin and ParallelismConfig."""
import os
import sys

import yaml
from accelerate.commands.config.config_args import ClusterConfig
from accelerate.commands.launch import _validate_launch_command, launch_command_parser
from accelerate.utils.launch import prepare_multi_gpu_env

path = sys.argv[1]
ClusterConfig.from_yaml_file(path)
parser = launch_command_parser()
dests = {a.dest for a in parser._actions}
raw = yaml.safe_load(open(path))
for section in ("fsdp_config", "parallelism_config"):
    for k in raw.get(section, {}):
        assert k in dests, f"{section}.{k} is not an accelerate launch option"
args = parser.parse_args(["--config_file", path, "--main_process_port", "0", "train.py"])
_validate_launch_command(args)
env = prepare_multi_gpu_env(args)
os.environ.update(env)
from accelerate import ParallelismConfig  # noqa: E402
from accelerate.utils import FullyShardedDataParallelPlugin  # noqa: E402

FullyShardedDataParallelPlugin()
pc = ParallelismConfig()
assert pc.total_size == raw["num_processes"], f"parallelism sizes {pc.total_size} != {raw['num_processes']} processes"
print(f"OK accelerate: {raw['num_processes']} processes, {pc}")
