"""PyTorch symmetric memory on the NCCL backend (torch.distributed._symmetric_memory,
set_backend("NCCL")): symm_mem.empty (ncclMemAlloc), rendezvous (ncclCommWindowRegister and
ncclDevCommCreate), then torch's own kernels, compiled against NVIDIA's device API headers:
one_shot_all_reduce, and two_shot_all_reduce_ in place, at several sizes and dtypes; every
element against the sum computed on the host. Prints which ops this torch offers."""
import os

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

from common import check, expect_library, same, setup

rank, world, dev = setup()
expect_library()
symm_mem.set_backend("NCCL")
group = dist.group.WORLD.group_name
ops = torch.ops.symm_mem
ran = []
# bf16: sizes torch's kernels take (a multiple of 4 bytes; of 16 for the two-shot)
SIZES = {torch.float32: (1, 7, 1024, 4096 + 3, 1 << 20), torch.bfloat16: (8, 1024, 4096 + 8, 1 << 20)}
for dtype in (torch.float32, torch.bfloat16):
    for n in SIZES[dtype]:
        t = symm_mem.empty(n, device=dev, dtype=dtype)
        symm_mem.rendezvous(t, group)
        base = torch.arange(n, device=dev, dtype=torch.float32) % 23  # sums exact in bf16
        t.copy_((base + rank).to(dtype))
        want = (base * world + sum(range(world))).to(dtype)
        dist.barrier()
        if hasattr(ops, "one_shot_all_reduce"):
            out = ops.one_shot_all_reduce(t, "sum", group)
            torch.cuda.synchronize()
            same(out, want, f"one_shot_all_reduce n={n} {dtype}")
            ran.append("one_shot_all_reduce")
        dist.barrier()
        if hasattr(ops, "two_shot_all_reduce_"):
            ops.two_shot_all_reduce_(t, "sum", group)
            torch.cuda.synchronize()
            same(t, want, f"two_shot_all_reduce_ n={n} {dtype}")
            ran.append("two_shot_all_reduce_")
        dist.barrier()
check(ran, "no symmetric-memory all-reduce op ran")
if rank == 0:
    print(f"test_symm_mem: ok, world {world}: {sorted(set(ran))} exact "
          f"({len(ran)} calls per rank)", flush=True)
dist.destroy_process_group()
