"""DDP training of a small MLP on synthetic data, fixed seeds, 200 steps (issue 6). Writes the
loss of every step and the steps per second to $OUT/ddp-<tag>.txt on rank 0, for
run_torch.sh to compare Baton's run with NCCL's: with 2 ranks each gradient element is the
sum of two numbers, which is the same in either order, so the losses must be equal.

Steps per second: after the 200 checked steps, TIMED_CHUNKS x 100 more, synchronized at each
chunk's ends; the median chunk's rate. A step is ~3.5 ms, ~0.2 ms of it AllReduce: one
180-step window moved by more than the libraries differ (a preempted step, a clock change)."""
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
ddp = DDP(model, device_ids=[dev.index], bucket_cap_mb=4)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
gen = torch.Generator(device="cpu").manual_seed(99 + rank)


def step():
    x = torch.randn(256, 512, generator=gen).to(dev)
    y = torch.randint(0, 10, (256,), generator=gen).to(dev)
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()


losses = [step() for _ in range(200)]
rates = []
for _ in range(int(os.environ.get("TIMED_CHUNKS", "7"))):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(100):
        step()
    torch.cuda.synchronize()
    rates.append(100 / (time.perf_counter() - t0))
sps = sorted(rates)[len(rates) // 2]
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
