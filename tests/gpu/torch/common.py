"""Shared by the torch tests (issue 6): process group setup on the GPU of the local rank, which
NCCL library this process really runs (from /proc/self/maps: torch.cuda.nccl.version() is
compile-time and proves nothing), and checks that fail loudly with the rank in the message."""
import os
import sys

import torch
import torch.distributed as dist


def setup(timeout_s=120):
    """init_process_group("nccl") on cuda:LOCAL_RANK, eagerly (device_id), so that new_group
    goes through ncclCommSplit as ABI.md says torch does."""
    import datetime

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group(
        "nccl", device_id=dev, timeout=datetime.timedelta(seconds=timeout_s)
    )
    return dist.get_rank(), dist.get_world_size(), dev


def nccl_library():
    """Path of the libnccl this process mapped (Baton's when LD_PRELOAD put it first)."""
    paths = set()
    with open("/proc/self/maps") as f:
        for line in f:
            part = line.split()
            if len(part) >= 6 and "libnccl" in part[-1]:
                paths.add(part[-1])
    return sorted(paths)


def expect_library():
    """BATON_EXPECT=baton|nccl: fail unless the mapped library is the expected one."""
    want = os.environ.get("BATON_EXPECT")
    libs = nccl_library()
    rank = dist.get_rank() if dist.is_initialized() else -1
    if rank <= 0:
        print(f"# libnccl mapped: {libs}", flush=True)
    if want == "baton":
        check(any("/build" in p or "baton" in p.lower() for p in libs) and
              not any("nvidia/nccl" in p for p in libs), f"Baton is not the mapped NCCL: {libs}")
    elif want == "nccl":
        check(any("nvidia/nccl" in p for p in libs), f"NVIDIA's NCCL is not mapped: {libs}")


def check(cond, what):
    if not cond:
        rank = dist.get_rank() if dist.is_initialized() else -1
        print(f"FAIL rank {rank}: {what}", file=sys.stderr, flush=True)
        sys.exit(1)


def same(a, b, what, atol=0.0, rtol=0.0):
    """Exact (or within atol/rtol) comparison of two tensors, reporting the first difference."""
    a32 = a.detach().to("cpu")
    b32 = b.detach().to("cpu")
    if a32.dtype != b32.dtype:
        b32 = b32.to(a32.dtype)
    if a32.is_floating_point():
        a32, b32 = a32.double(), b32.double()
        ok = torch.allclose(a32, b32, atol=atol, rtol=rtol, equal_nan=True)
    else:
        ok = torch.equal(a32, b32)
    if not ok:
        diff = (a32 != b32).nonzero()
        i = tuple(diff[0].tolist()) if len(diff) else ()
        check(False, f"{what}: first difference at {i}: {a32[i].item() if i else '?'} vs "
              f"{b32[i].item() if i else '?'} (shape {tuple(a.shape)}, {a.dtype})")
