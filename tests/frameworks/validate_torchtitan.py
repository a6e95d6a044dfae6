"""torchtitan 0.3's ConfigManager + ParallelDims on our run_train.sh command."""
import re
import shlex
import sys

import shims

script, world = sys.argv[1], int(sys.argv[2])
shims.install(("torchtitan.",))
text = open(script).read()
module = re.search(r"MODULE=(\S+)", text).group(1)
config = re.search(r"CONFIG=(\S+)", text).group(1)
flags = shlex.split(text.split("./run_train.sh", 1)[1].replace("\\\n", " "), comments=True)

from torch.distributed.pipelining.schedules import get_schedule_class  # noqa: E402
from torchtitan.config.manager import ConfigManager  # noqa: E402
from torchtitan.distributed.parallel_dims import ParallelDims  # noqa: E402

cfg = ConfigManager().parse_args(["--module", module, "--config", config] + flags)
p, t = cfg.parallelism, cfg.training
pd = ParallelDims.from_config(p, world)
if p.pipeline_parallel_degree > 1:
    get_schedule_class(p.pipeline_parallel_schedule)
    assert t.local_batch_size % p.pipeline_parallel_microbatch_size == 0, "local batch % PP micro-batch"
dp = p.data_parallel_replicate_degree * (p.data_parallel_shard_degree if p.data_parallel_shard_degree > 0 else 1)
assert t.global_batch_size % (t.local_batch_size * dp) == 0, "global batch % (local batch x DP)"
print(f"OK torchtitan: world {world}, dims dp_rep {p.data_parallel_replicate_degree} dp_shard "
      f"{p.data_parallel_shard_degree} cp {p.context_parallel_degree} tp {p.tensor_parallel_degree} "
      f"pp {p.pipeline_parallel_degree}; grad accum {t.global_batch_size // (t.local_batch_size * dp)}")
