"""DistributedDataParallel step time against a single-process step with the same per-rank batch.

The large MLP of bench_core (1024-2048-2048-1024, relu, MSE, SGD, float32), batch 512 per
rank, 2 ranks of one BLAS thread each (launched with ``python -m ndgrad.distributed.run``), for
torch's default bucket cap (25 MiB, first bucket 1 MiB) and a smaller one. Measured on each
rank, every phase after a barrier, median of ``--steps`` steps:

- ``ddp``: a full DDP step (forward, backward with the bucketed all-reduces, SGD);
- ``local``: the same step under ``no_sync()`` (no communication, both ranks computing at once:
  the compute-only baseline under the same load);
- ``comm``: the same bucket all-reduces alone (started together, then waited for);
- ``wait``: how long the last gradient hook of a DDP step waited for the all-reduces to finish
  (the communication left exposed after backward);
- ``single``: a one-process step with the same batch in a separate run (one thread).

hidden = the share of the bucket bytes whose all-reduce had completed when backward ended (DDP
tests each bucket's request then), i.e. the communication hidden behind backward; ``wait`` is
how long the end of backward then waited (the rest, plus the other rank's lag).
The script then projects the step time for 8-64 ranks on a 10-100 Gb/s network from the
measured bucket sizes with a ring all-reduce cost model (printed with its assumptions).

Run: ``python bench/ddp.py`` (needs the distributed extra: mpi4py and an MPI). Timings are
wall clock on whatever else the machine runs.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SIZES = (1024, 2048, 2048, 1024)
BATCH = 512


def _model():
    import ndgrad.nn as nn
    layers = []
    for i in range(len(SIZES) - 1):
        layers.append(nn.Linear(SIZES[i], SIZES[i + 1]))
        if i < len(SIZES) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _data(seed: int):
    import ndgrad
    g = ndgrad.Generator().manual_seed(seed)
    return (ndgrad.randn(BATCH, SIZES[0], generator=g),
            ndgrad.randn(BATCH, SIZES[-1], generator=g))


def _median_step(step, steps: int, sync=None) -> float:
    step()                                   # warm up
    times = []
    for _ in range(steps):
        if sync is not None:
            sync()
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def role_single(steps: int) -> dict:
    import ndgrad
    import ndgrad.nn.functional as F
    ndgrad.manual_seed(0)
    model = _model()
    opt = ndgrad.optim.SGD(model.parameters(), lr=1e-3)
    x, y = _data(0)

    def step():
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()

    return {"single": _median_step(step, steps)}


def role_rank(steps: int, cap: float) -> None:
    import numpy as np

    import ndgrad
    import ndgrad.distributed as dist
    import ndgrad.nn.functional as F
    from ndgrad.distributed import _mpi
    from ndgrad.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    ndgrad.manual_seed(0)
    ddp = DDP(_model(), bucket_cap_mb=None if cap <= 0 else cap)
    opt = ndgrad.optim.SGD(ddp.parameters(), lr=1e-3)
    x, y = _data(rank)

    def step():
        opt.zero_grad()
        F.mse_loss(ddp(x), y).backward()
        opt.step()

    def local_step():
        with ddp.no_sync():
            step()

    MPI = _mpi.mpi()
    comm = ddp.process_group._comm
    buffers = [b.buffer for b in ddp._buckets]

    def comm_only():
        reqs = [comm.Iallreduce(MPI.IN_PLACE, b, op=MPI.SUM) for b in buffers]
        MPI.Request.Waitall(reqs)

    waits, hidden = [], []

    def ddp_step():
        step()
        waits.append(ddp._last_wait_seconds)
        done, total = ddp._last_hidden_bytes
        hidden.append(done / total)

    res = {"ddp": _median_step(ddp_step, steps, dist.barrier),
           "local": _median_step(local_step, steps, dist.barrier),
           "comm": _median_step(comm_only, steps, dist.barrier),
           "wait": statistics.median(waits[1:]),
           "hidden": statistics.mean(hidden[1:]),
           "buckets": [int(b.nbytes) for b in buffers],
           "bucket_params": [len(b.params) for b in ddp._buckets]}
    # forward / backward split of the local step (for the overlap window of the model)
    fwd = []
    for _ in range(3):
        with ddp.no_sync():
            t0 = time.perf_counter()
            loss = F.mse_loss(ddp(x), y)
            fwd.append(time.perf_counter() - t0)
            loss.backward()
    res["forward"] = float(np.median(fwd))
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, res)
    if rank == 0:
        out = {k: max(r[k] for r in everyone) for k in ("ddp", "local", "comm", "forward", "wait")}
        out["hidden"] = min(r["hidden"] for r in everyone)
        out["buckets"], out["bucket_params"] = res["buckets"], res["bucket_params"]
        print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()


def _env(**extra: str) -> dict:
    env = dict(os.environ, **extra, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _result(cmd: list, **env: str) -> dict:
    out = subprocess.run(cmd, env=_env(**env), cwd=str(ROOT), capture_output=True, text=True,
                         timeout=1800)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"benchmark run failed:\n{out.stdout}\n{out.stderr}")


def ring_allreduce_seconds(nbytes: float, ranks: int, gbit: float, latency: float) -> float:
    """Ring all-reduce (reduce-scatter then all-gather): 2(p-1) steps, each sending 1/p of the
    buffer: 2(p-1)/p * S / bandwidth + 2(p-1) * latency."""
    return 2 * (ranks - 1) / ranks * nbytes / (gbit * 1e9 / 8) + 2 * (ranks - 1) * latency


def projection(buckets: list, step_compute: float, backward: float, latency: float) -> str:
    """Step time and efficiency (compute / step) for 8-64 ranks: no overlap (every bucket after
    backward), and overlapped (buckets run back to back from the moment each is ready, gradients
    assumed to arrive evenly over backward in bucket order, only what is left after backward is
    exposed)."""
    lines = ["ranks  Gb/s   comm(ms)  no-overlap eff  overlapped eff"]
    total = sum(buckets)
    for gbit in (10, 25, 100):
        for p in (8, 16, 32, 64):
            times = [ring_allreduce_seconds(b, p, gbit, latency) for b in buckets]
            comm = sum(times)
            # bucket i is ready after the fraction of backward that produced it
            t, ready = 0.0, 0.0
            for b, c in zip(buckets, times):
                ready += backward * b / total
                t = max(t, ready) + c
            exposed = max(0.0, t - backward)
            lines.append(f"{p:5d} {gbit:5d} {comm * 1e3:10.1f} "
                         f"{step_compute / (step_compute + comm):15.2f} "
                         f"{step_compute / (step_compute + exposed):15.2f}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--role", default="driver", choices=("driver", "single", "rank"))
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--bucket-cap-mb", type=float, default=0.0,
                    help="0 = torch's default (25 MiB, first bucket 1 MiB)")
    ap.add_argument("--caps", default="0,4", help="bucket caps the driver measures")
    ap.add_argument("--async-progress", action="store_true",
                    help="also run the first cap with MPICH_ASYNC_PROGRESS=1 (MPICH's own "
                         "spinning progress thread per rank)")
    ap.add_argument("--no-poller", action="store_true",
                    help="also run the first cap without DDP's polling thread")
    ap.add_argument("--latency-us", type=float, default=10.0,
                    help="per-message network latency of the cost model")
    a = ap.parse_args()
    if a.role == "single":
        print("RESULT " + json.dumps(role_single(a.steps)), flush=True)
        return
    if a.role == "rank":
        role_rank(a.steps, a.bucket_cap_mb)
        return
    single = _result([sys.executable, __file__, "--role", "single", "--steps", str(a.steps)])
    s = single["single"]
    print(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH} per rank, float32, 1 BLAS thread per "
          f"process; median of {a.steps} steps (machine shared with other work)")
    print(f"single process, same batch: {s * 1e3:.1f} ms/step")
    layouts = []          # (name, result) of the runs with DDP's defaults
    caps = [(float(c), False) for c in a.caps.split(",")]
    if a.async_progress:
        caps.append((caps[0][0], "MPICH_ASYNC_PROGRESS"))
    if a.no_poller:
        caps.append((caps[0][0], "NDGRAD_DDP_PROGRESS_THREAD"))
    for cap, progress in caps:
        r = _result([sys.executable, "-m", "ndgrad.distributed.run", "--nproc-per-node", "2",
                     __file__, "--role", "rank", "--steps", str(a.steps),
                     "--bucket-cap-mb", str(cap)],
                    **({progress: "1" if progress.startswith("MPICH") else "0"}
                       if progress else {}))
        hidden = r["hidden"]
        name = "default (25 MiB, first 1 MiB)" if cap <= 0 else f"{cap:g} MiB"
        if progress:
            name += ", MPICH_ASYNC_PROGRESS=1" if progress.startswith("MPICH") else \
                ", without DDP's polling thread"
        print(f"\n2 ranks, bucket cap {name}: buckets {[round(b / 2**20, 2) for b in r['buckets']]}"
              f" MiB ({r['bucket_params']} parameters)")
        print(f"  DDP step {r['ddp'] * 1e3:.1f} ms = {r['ddp'] / s:.2f}x single; "
              f"no_sync step {r['local'] * 1e3:.1f} ms ({r['local'] / s:.2f}x single); "
              f"all-reduces alone {r['comm'] * 1e3:.1f} ms")
        print(f"  communication hidden behind backward: {hidden * 100:.0f}% of the bucket bytes "
              f"were reduced when backward ended; it then waited {r['wait'] * 1e3:.1f} ms "
              "(the rest, plus the other rank's lag)")
        if not progress:
            layouts.append((name, r))
    # backward's share of a step, measured under no_sync, applied to the single-process step
    last = layouts[0][1]
    backward = s * max(last["local"] - last["forward"], 0.0) / last["local"]
    print(f"\nOn paper: ring all-reduce of the measured buckets, latency {a.latency_us:g} us per "
          f"message, compute per step = the single-process step ({s * 1e3:.0f} ms, backward "
          f"~{backward * 1e3:.0f} ms: its share of the no_sync step), per-rank batch fixed (weak "
          "scaling); efficiency = compute / (compute + exposed communication):")
    for name, r in layouts:
        print(f"\nbuckets of bucket cap {name}:")
        print(projection(r["buckets"], s, backward, a.latency_us * 1e-6))


if __name__ == "__main__":
    main()
