"""FSDP2 on the fake process group: our module builds its mesh and shards a small model over it."""
import importlib.util
import sys

import torch
import torch.distributed as dist
from torch.testing._internal.distributed.fake_pg import FakeStore

path, world = sys.argv[1], int(sys.argv[2])
dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
spec = importlib.util.spec_from_file_location("exported_fsdp", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
mesh = mod.build_mesh("cpu")
blocks = [torch.nn.Linear(64, 64) for _ in range(2)]
model = torch.nn.Sequential(*blocks)
mod.shard(model, blocks, mesh)
w = blocks[0].weight
print(f"OK fsdp: mesh {tuple(mesh.shape)} {mesh.mesh_dim_names}, placements {w.placements}")
