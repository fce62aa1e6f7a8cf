"""Launched by tests/test_distributed.py: rank 1 fails in the way named by argv[1] while the
other ranks wait in collectives; the job must end (not hang) with a clear error."""

import datetime
import os
import signal
import sys
import time

import ndgrad
import ndgrad.distributed as dist
import ndgrad.nn as nn
from ndgrad.nn.parallel import DistributedDataParallel as DDP

mode = sys.argv[1]
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=float(sys.argv[2])))
R = dist.get_rank()
model = DDP(nn.Linear(4, 4))
t = ndgrad.ones(3)
dist.all_reduce(t)
print(f"RANK {R} READY", flush=True)
if R == 1:
    if mode == "raise":
        raise ValueError("rank 1 fails on purpose")
    if mode == "exit":
        os._exit(3)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang":
        time.sleep(120)
    if mode == "backward":             # dies in the middle of a DDP backward
        model(ndgrad.ones(2, 4)).sum().backward()
        raise RuntimeError("rank 1 fails after backward")
for _ in range(3):
    model(ndgrad.ones(2, 4)).sum().backward()
    dist.all_reduce(t)
print(f"RANK {R} FINISHED", flush=True)
