"""One rank stops taking part (issue 6): rank 1 sleeps instead of calling the AllReduce that
rank 0 waits in. Rank 0's watchdog must notice at the process group's timeout (10 s) and the
process must end, not hang: run_torch.sh times rank 0 and wants it gone within 10 + 30 s.
Rank 1 exits by itself after 60 s."""
import os
import time

import torch
import torch.distributed as dist

from common import expect_library, setup

rank, world, dev = setup(timeout_s=10)
expect_library()
t = torch.ones(1 << 20, device=dev)
dist.all_reduce(t)  # a healthy one first: the communicator is up
torch.cuda.synchronize()
if rank == 1:
    time.sleep(60)
    os._exit(0)
start = time.time()
dist.all_reduce(t)
torch.cuda.synchronize()  # the watchdog aborts the communicator and ends the process
print(f"test_abort: rank 0 came back after {time.time() - start:.1f} s without an error", flush=True)
os._exit(3)
