"""One rank stops taking part (issue 6): rank 1 sleeps instead of calling the AllReduce that
rank 0 waits in. Two ways torch 2.11 ends rank 0, chosen by the first argument:

  watchdog  rank 0 blocks in torch.cuda.synchronize(); the watchdog thread sees the 10 s
            timeout and aborts the communicator (ncclCommAbort from another thread while the
            kernel waits: TORCH_NCCL_ASYNC_ERROR_HANDLING=1). The abort must release the
            kernel: synchronize returns (torch 2.11 raises nothing there, with either
            library, and does not end the process itself: measured), within the timeout + 5 s;
            the test then exits 0. run_torch.sh also wants the watchdog's timeout line in the
            log and the whole run over within 25 s.
  wait      rank 0 waits with work.wait(timeout=3 s, before the watchdog's 10): torch aborts the
            communicator from the main thread and raises; the test then checks the stream drains (the kernel was released),
            prints the error and exits 0.

Rank 1 exits by itself after 25 s (after both cases have decided)."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

from common import expect_library, setup

mode = sys.argv[1] if len(sys.argv) > 1 else "watchdog"
rank, world, dev = setup(timeout_s=10)
expect_library()
t = torch.ones(1 << 20, device=dev)
dist.all_reduce(t)  # a healthy one first: the communicator is up
torch.cuda.synchronize()
if rank == 1:
    time.sleep(25)
    os._exit(0)
start = time.time()
if mode == "watchdog":
    dist.all_reduce(t)
    torch.cuda.synchronize()  # returns once the watchdog's abort has released the kernel
    took = time.time() - start
    ok = took <= 10 + 5
    print(f"test_abort: {'ok' if ok else 'FAIL'} the watchdog's abort released rank 0's "
          f"synchronize after {took:.1f} s (timeout 10 s)", flush=True)
    os._exit(0 if ok else 3)

work = dist.all_reduce(t, async_op=True)
try:
    work.wait(timeout=datetime.timedelta(seconds=3))  # before the watchdog's 10 s
except Exception as e:  # DistBackendError: the communicator was aborted
    took = time.time() - start
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    torch.cuda.current_stream().synchronize()  # the aborted kernel no longer holds the stream
    print(f"test_abort: ok wait raised after {took:.1f} s, stream drained after "
          f"{time.time() - start:.1f} s: {type(e).__name__}: {msg[:200]}", flush=True)
    os._exit(0)
print(f"test_abort: FAIL wait returned after {time.time() - start:.1f} s without an error",
      flush=True)
os._exit(3)
