"""FSDP2 on the fake process group: our module builds its meshes, checkpoints and shards a small
model over them, and a forward and backward run through the checkpointing it wrote.

Args: path WORLD SHARD -- SHARD is how many ranks the estimate shards the parameters over (1 for
plain replication)."""
import importlib.util
import sys

import torch
import torch.distributed as dist
from torch.testing._internal.distributed.fake_pg import FakeStore

path, world, shard = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
spec = importlib.util.spec_from_file_location("exported_fsdp", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
mesh = mod.build_mesh("cpu")
fsdp_mesh = mod.build_fsdp_mesh("cpu")
assert fsdp_mesh.shape[-1] == shard, f"FSDP2 shards over {fsdp_mesh.shape[-1]} ranks, the estimate over {shard}"
assert fsdp_mesh.size() * mesh["pp"].size() * mesh["tp"].size() == world


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(64, 128, bias=False), torch.nn.Linear(128, 64, bias=False)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


blocks = [Block() for _ in range(2)]
model = torch.nn.Sequential(*blocks)
mod.shard(model, blocks, fsdp_mesh)
calls = []
if hasattr(mod, "_keep_half_the_matmuls"):
    policy = mod._keep_half_the_matmuls
    mod._keep_half_the_matmuls = lambda *a, **k: calls.append(a[2]) or policy(*a, **k)
model(torch.randn(4, 64)).float().sum().backward()
assert bool(calls) == (mod.ACTIVATION_CHECKPOINTING == "selective"), "the selective policy did not run"
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper  # noqa: E402
wrapped = [isinstance(b, CheckpointWrapper) for b in model]
assert all(wrapped) == (mod.ACTIVATION_CHECKPOINTING != "none") and len(set(wrapped)) == 1, wrapped
w = blocks[0].up.weight
print(f"OK fsdp: mesh {tuple(mesh.shape)} {mesh.mesh_dim_names}, FSDP over {tuple(fsdp_mesh.shape)}, "
      f"placements {w.placements}, checkpointing {mod.ACTIVATION_CHECKPOINTING}")
