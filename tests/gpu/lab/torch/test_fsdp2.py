"""FSDP2 (fully_shard) training of a small model, bf16 parameters and fp32 gradient
reduction, with the gradient divide factor set so the reduce-scatter runs PREMUL_SUM where
torch does that (issue 6). Writes the losses to $OUT/fsdp2-<tag>.txt on rank 0."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from common import expect_library, setup

rank, world, dev = setup()
expect_library()
torch.manual_seed(4321)
model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU())
                              for _ in range(4)], torch.nn.Linear(1024, 16)).to(dev)
mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
for layer in model[:4]:
    fully_shard(layer, mp_policy=mp)
fully_shard(model, mp_policy=mp)
for m in list(model[:4]) + [model]:  # not recursive: every FSDP module of the model
    if hasattr(m, "set_gradient_divide_factor"):
        m.set_gradient_divide_factor(float(world))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
gen = torch.Generator(device="cpu").manual_seed(7 + rank)
losses = []
x = torch.randn(64, 1024, generator=gen).to(dev)  # one batch per rank, learned over 50 steps
y = torch.randint(0, 16, (64,), generator=gen).to(dev)
for step in range(50):
    loss = torch.nn.functional.cross_entropy(model(x).float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    losses.append(loss.detach())
torch.cuda.synchronize()
assert losses[-1].item() < losses[0].item(), f"rank {rank}: loss did not fall"
if rank == 0:
    with open(os.path.join(os.environ.get("OUT", "."), f"fsdp2-{os.environ.get('TAG', 'run')}.txt"), "w") as f:
        for i, l in enumerate(losses):
            f.write(f"{i} {l.item():.9e}\n")
    print(f"test_fsdp2: 50 steps, loss {losses[0].item():.4f} -> {losses[-1].item():.4f}", flush=True)
dist.destroy_process_group()
