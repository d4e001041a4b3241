"""Shared by the torch tests (issue 6): process group setup on the GPU of the local rank, which
NCCL library this process really runs (from /proc/self/maps: torch.cuda.nccl.version() is
compile-time and proves nothing), and checks that fail loudly with the rank in the message."""
import os
import sys

import torch
import torch.distributed as dist


def setup(timeout_s=120):
    """init_process_group("nccl") on cuda:LOCAL_RANK, eagerly (device_id), so that new_group
    goes through ncclCommSplit, as torch does once its default group is bound to a device."""
    import datetime

    # SAME_GPU=1: every rank on cuda:0 (processes sharing one GPU under CUDA MPS)
    local = 0 if os.environ.get("SAME_GPU") == "1" else int(os.environ.get("LOCAL_RANK", "0"))
    # HOST_PER_RANK=1: every process its own host (NCCL_HOSTID): NVIDIA's NCCL then accepts
    # ranks sharing one GPU (sockets between them), for a figure to set Baton's beside
    if os.environ.get("HOST_PER_RANK") == "1":
        os.environ["NCCL_HOSTID"] = "host" + os.environ.get("RANK", "0")
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group(
        "nccl", device_id=dev, timeout=datetime.timedelta(seconds=timeout_s)
    )
    return dist.get_rank(), dist.get_world_size(), dev


def nccl_library():
    """Paths of every libnccl this process mapped. With LD_PRELOAD both are mapped: torch's own
    dependency on NVIDIA's library is still loaded, only no symbol resolves to it."""
    paths = set()
    with open("/proc/self/maps") as f:
        for line in f:
            part = line.split()
            if len(part) >= 6 and "libnccl" in part[-1]:
                paths.add(part[-1])
    return sorted(paths)


def nccl_provider():
    """The file that defines the ncclCommInitRankConfig torch calls: the global symbol lookup
    (dlsym in the default scope, LD_PRELOAD first, as torch's own references resolve), then
    dladdr for the object that holds it."""
    import ctypes

    class DlInfo(ctypes.Structure):
        _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                    ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]

    addr = ctypes.cast(ctypes.CDLL(None).ncclCommInitRankConfig, ctypes.c_void_p).value
    info = DlInfo()
    if not ctypes.CDLL(None).dladdr(ctypes.c_void_p(addr), ctypes.byref(info)):
        return "?"
    return os.path.realpath(info.fname.decode())


def expect_library():
    """BATON_EXPECT=baton|nccl: fail unless the NCCL functions torch calls are the expected
    library's."""
    want = os.environ.get("BATON_EXPECT")
    libs = nccl_library()
    used = nccl_provider()
    rank = dist.get_rank() if dist.is_initialized() else -1
    if rank <= 0:
        print(f"# libnccl mapped: {libs}; ncclCommInitRankConfig from {used}", flush=True)
    if want == "baton":
        check("nvidia/nccl" not in used and used in [os.path.realpath(p) for p in libs],
              f"Baton does not provide the NCCL functions: {used} (mapped: {libs})")
    elif want == "nccl":
        check("nvidia/nccl" in used, f"NVIDIA's NCCL does not provide the NCCL functions: {used}")


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
