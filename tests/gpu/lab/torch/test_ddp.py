"""DDP training of a small MLP on synthetic data, fixed seeds, 200 steps (issue 6). Writes the
loss of every step and the steps per second to $OUT/ddp-<tag>.txt on rank 0, for
run_torch.sh to compare Baton's run with NCCL's: with 2 ranks each gradient element is the
sum of two numbers, which is the same in either order, so the losses must be equal.

Steps per second: after the 200 checked steps, TIMED_CHUNKS x 100 more, synchronized at each
chunk's ends; the median chunk's rate. A step is ~3.5 ms, ~0.2 ms of it AllReduce: one
180-step window moved by more than the libraries differ (a preempted step, a clock change).

REPLICA=1 (for runs no other library can share, e.g. every rank on cuda:0 under MPS): no
timing; every rank also trains a single-process replica of the model on all ranks' batches
(each rank's loss divided by the world size, backward one batch after the other) and the DDP
parameters must equal the replica's within REPLICA_RTOL at step REPLICA_STEP (default: 200 at 2
ranks, where a sum of two gradients is the same in either order, so equal up to DDP's
division; 10 at more ranks, whose sums round in another order than the replica's: SGD with
momentum grows those last-bit differences step by step, so the check is made while they are
still rounding, and a wrong sum would be off by far more). The difference at steps 1, 10, 50
and 200 is printed."""
import copy
import os
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS, before CUDA
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from common import expect_library, setup

rank, world, dev = setup()
expect_library()
torch.manual_seed(1234)
torch.use_deterministic_algorithms(True)
model = torch.nn.Sequential(
    torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
    torch.nn.Linear(2048, 10)).to(dev)
replica_on = os.environ.get("REPLICA") == "1"
replica = copy.deepcopy(model) if replica_on else None  # the same initial parameters
ddp = DDP(model, device_ids=[dev.index], bucket_cap_mb=4)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
gen = torch.Generator(device="cpu").manual_seed(99 + rank)
if replica_on:
    ropt = torch.optim.SGD(replica.parameters(), lr=0.05, momentum=0.9)
    rgens = [torch.Generator(device="cpu").manual_seed(99 + r) for r in range(world)]


def replica_step():
    """What DDP computes, in one process: every rank's batch, gradients averaged."""
    ropt.zero_grad(set_to_none=True)
    for g in rgens:
        x = torch.randn(256, 512, generator=g).to(dev)
        y = torch.randint(0, 10, (256,), generator=g).to(dev)
        (torch.nn.functional.cross_entropy(replica(x), y) / world).backward()
    ropt.step()


def step():
    x = torch.randn(256, 512, generator=gen).to(dev)
    y = torch.randint(0, 10, (256,), generator=gen).to(dev)
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()


def replica_difference():
    """The largest |DDP - replica| of any parameter tensor, over that tensor's largest |value|."""
    worst = 0.0
    for p, q in zip(model.parameters(), replica.parameters()):
        d = (p.detach() - q.detach()).abs().max().item()
        scale = q.detach().abs().max().item()
        worst = max(worst, d / max(scale, 1e-30))
    return worst


check_step = int(os.environ.get("REPLICA_STEP", "200" if world <= 2 else "10"))
diffs = {}
losses = []
for i in range(1, 201):
    losses.append(step())
    if replica_on:
        replica_step()
        if i in (1, 10, 50, 200, check_step):
            diffs[i] = replica_difference()
if replica_on:
    rtol = float(os.environ.get("REPLICA_RTOL", "1e-4"))
    worst = diffs[check_step]
    ok = worst <= rtol
    trail = ", ".join(f"step {k}: {v:.2e}" for k, v in sorted(diffs.items()))
    print(f"test_ddp: rank {rank}: DDP against a single-process replica after {check_step} steps: "
          f"largest difference {worst:.3e} of the parameter's scale: {'ok' if ok else 'FAIL'} "
          f"({trail})", flush=True)
    assert ok, f"rank {rank}: DDP parameters differ from the replica's by {worst:.3e}"
rates = []
for _ in range(0 if replica_on else int(os.environ.get("TIMED_CHUNKS", "7"))):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(100):
        step()
    torch.cuda.synchronize()
    rates.append(100 / (time.perf_counter() - t0))
sps = sorted(rates)[len(rates) // 2] if rates else 0.0
# every rank's parameters must agree after training
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
ref = flat.clone()
dist.broadcast(ref, src=0)
assert torch.equal(flat, ref), f"rank {rank}: parameters differ from rank 0's"
if rank == 0:
    out = os.environ.get("OUT", ".")
    with open(os.path.join(out, f"ddp-{os.environ.get('TAG', 'run')}.txt"), "w") as f:
        f.write(f"steps_per_s {sps:.3f}\n")
        f.write(f"chunk_rates {','.join(f'{r:.1f}' for r in rates)}\n")
        for i, l in enumerate(losses):
            f.write(f"{i} {l.item():.9e}\n")
    print(f"test_ddp: 200 steps, {sps:.2f} steps/s (median of {len(rates)} x 100), final loss {losses[-1].item():.6f}", flush=True)
dist.destroy_process_group()
