"""ndgrad.distributed on MPI: jobs of 2 and 4 ranks launched with ``python -m
ndgrad.distributed.run`` (oversubscribed on a small machine), checking every collective against
NumPy (tests/distributed/collectives.py), DistributedDataParallel against single-process
training (tests/distributed/ddp.py) and that failing ranks end the job with a clear error
within its timeout (tests/distributed/fault.py); plus in-process checks against torch (bucket
assignment, DistributedSampler order), the launcher's options and the single-rank API.

Every launch runs in its own process group under a timeout, so a hang fails the test and
leaves no process behind.
"""

from __future__ import annotations

import datetime
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import torch
import torch.distributed as tdist
from torch.utils.data.distributed import DistributedSampler as TorchSampler

import ndgrad
import ndgrad.distributed as dist
import ndgrad.nn as nn
from ndgrad.distributed import run as launcher
from ndgrad.nn.parallel.distributed import _compute_bucket_assignment_by_size
from ndgrad.utils.data.distributed import DistributedSampler

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "distributed"


def launch(args: list, timeout: float, plain_mpiexec: bool = False) -> tuple:
    """Run a job; (exit code, output, seconds). The job is killed (whole process group) if it
    outlives ``timeout``, and the test fails."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if plain_mpiexec:
        cmd = [launcher.find_mpiexec(), *args[:2], sys.executable, *args[2:]]
    else:
        cmd = [sys.executable, "-m", "ndgrad.distributed.run", *args]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=str(ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the job did not end within {timeout} s:\n{out}")
    return proc.returncode, out, time.monotonic() - t0


def ok_ranks(out: str) -> dict:
    return {int(r): int(n) for r, n in re.findall(r"RANK (\d+) OK (\d+)", out)}


@pytest.mark.parametrize("n", [2, 4])
def test_collectives_against_numpy(n):
    code, out, _ = launch(["--nproc-per-node", str(n), "tests/distributed/collectives.py"], 120)
    assert code == 0, out
    checks = ok_ranks(out)
    assert sorted(checks) == list(range(n)) and min(checks.values()) > 70, out


@pytest.mark.parametrize("n", [2, 4])
def test_ddp_matches_single_process(n):
    code, out, _ = launch(["--nproc_per_node", str(n), "tests/distributed/ddp.py"], 120)
    assert code == 0, out
    checks = ok_ranks(out)
    assert sorted(checks) == list(range(n)) and min(checks.values()) > 30, out


@pytest.mark.parametrize("mode,words", [
    ("raise", "ValueError: rank 1 fails on purpose"),
    ("exit", "the job failed with exit code"),
    ("kill", "signal 9"),
    ("backward", "RuntimeError: rank 1 fails after backward"),
    ("hang", "Watchdog caught collective operation timeout"),
])
def test_failing_rank_ends_the_job(mode, words):
    # rank 1 fails while rank 0 waits in a collective: the job ends well before the test's
    # timeout (the hang case after the process group's 3 s timeout), with the error shown.
    code, out, seconds = launch(["--nproc-per-node", "2", "tests/distributed/fault.py", mode,
                                 "3"], 60)
    assert code != 0, out
    assert words in out, out
    assert "ndgrad.distributed.run: the job failed" in out
    assert "FINISHED" not in out   # and it ended: launch() kills the job after 60 s


def test_failing_rank_under_plain_mpiexec():
    # Without the launcher, init_process_group's excepthook aborts the job.
    code, out, _ = launch(["-n", "2", "tests/distributed/fault.py", "raise", "30"], 60,
                          plain_mpiexec=True)
    assert code != 0 and "uncaught ValueError on this rank; aborting the job" in out, out
    assert "FINISHED" not in out


def test_readme_example_trains_on_two_ranks():
    code, out, _ = launch(["--nproc-per-node", "2", "examples/ddp_train.py", "--epochs", "3"],
                          120)
    assert code == 0, out
    losses = [float(v) for v in re.findall(r"epoch \d: loss ([\d.]+) \(2 ranks\)", out)]
    assert len(losses) == 3 and losses[-1] < 0.8 * losses[0], out
    assert "parameters identical on all ranks: True" in out


def test_launcher_restarts_and_environment(tmp_path):
    script = tmp_path / "env.py"
    script.write_text(
        "import os, sys\n"
        "keys = ['RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'LOCAL_WORLD_SIZE', 'GROUP_RANK', "
        "'MASTER_ADDR', 'MASTER_PORT', 'TORCHELASTIC_RESTART_COUNT']\n"
        "print('ENV', *[os.environ[k] for k in keys], *sys.argv[1:], flush=True)\n"
        "if os.environ['TORCHELASTIC_RESTART_COUNT'] == '0' and os.environ['RANK'] == '1':\n"
        "    sys.exit(5)\n")
    code, out, _ = launch(["--nproc-per-node=2", "--max-restarts", "1", "--master-port",
                           "1234", str(script), "--lr", "0.5"], 60)
    assert code == 0, out
    lines = sorted(re.findall(r"ENV .*", out))
    assert "ENV 0 0 2 2 0 127.0.0.1 1234 1 --lr 0.5" in lines, lines
    assert "ENV 1 1 2 2 0 127.0.0.1 1234 1 --lr 0.5" in lines, lines
    assert "the job failed with exit code 5" in out and "restarting (1/1)" in out


def test_launcher_options():
    a = launcher.parse_args(["--nnodes", "1:1", "--nproc-per-node", "auto", "--standalone",
                             "--rdzv-backend", "c10d", "-m", "pkg.train", "x"])
    assert a.module and a.standalone and a.training_script == "pkg.train"
    assert a.training_script_args == ["x"]
    assert launcher._nproc("auto") == (os.cpu_count() or 1)
    for argv, words in ((["--nproc-per-node", "0", "s.py"], "at least 1"),
                        (["--node-rank", "1", "s.py"], "--node-rank must be 0"),
                        (["--nnodes", "2", "s.py"], "needs --hostfile"),
                        (["-m", "--no-python", "s.py"], "Don't use both")):
        with pytest.raises(SystemExit, match=words):
            launcher.main(argv)
    assert os.path.basename(launcher.find_mpiexec()) == "mpiexec"


@pytest.mark.parametrize("seed", range(4))
def test_bucket_assignment_matches_torch(seed):
    rng = np.random.default_rng(seed)
    dtypes = [(torch.float32, ndgrad.float32), (torch.float64, ndgrad.float64),
              (torch.float16, ndgrad.float16)]
    shapes = [tuple(int(s) for s in rng.integers(1, 300, size=rng.integers(1, 3)))
              for _ in range(25)]
    kinds = rng.integers(0, 3, size=25)
    tt = [torch.zeros(s, dtype=dtypes[k][0]) for s, k in zip(shapes, kinds)]
    nt = [ndgrad.zeros(s, dtype=dtypes[k][1]) for s, k in zip(shapes, kinds)]
    for limits in ([1024, 20000], [5000], [1, 2, 3], [10 ** 9]):
        want = tdist._compute_bucket_assignment_by_size(tt, limits, [False] * len(tt))
        got = _compute_bucket_assignment_by_size(nt, limits)
        assert [list(b) for b in want[0]] == got[0] and list(want[1]) == got[1]


@pytest.mark.parametrize("n", [1, 7, 10, 33])
def test_distributed_sampler_matches_torch(n):
    for replicas in (1, 2, 3, 4):
        for drop_last in (False, True):
            for shuffle in (True, False):
                for rank in range(replicas):
                    kw = dict(num_replicas=replicas, rank=rank, shuffle=shuffle, seed=11,
                              drop_last=drop_last)
                    mine, ref = DistributedSampler(range(n), **kw), TorchSampler(range(n), **kw)
                    for epoch in (0, 5):
                        mine.set_epoch(epoch)
                        ref.set_epoch(epoch)
                        assert list(mine) == list(ref) and len(mine) == len(ref)
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval"):
        DistributedSampler(range(4), num_replicas=2, rank=2)


def test_single_rank_api_and_errors():
    # A world of one process (MPI singleton), inside the test process.
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="MPI only"):
        dist.init_process_group("gloo")
    os.environ["WORLD_SIZE"] = "2"      # torchrun's variables must agree with MPI's world
    try:
        with pytest.raises(RuntimeError, match="python -m ndgrad.distributed.run"):
            dist.init_process_group("mpi")
    finally:
        del os.environ["WORLD_SIZE"]
    assert not dist.is_initialized()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        dist.init_process_group("mpi", world_size=2, rank=0,
                                timeout=datetime.timedelta(seconds=30))
    try:
        assert "are ignored since they are assigned by the MPI runtime" in str(rec[0].message)
        assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
        with pytest.raises(ValueError, match="initialize the default process group twice"):
            dist.init_process_group("mpi")
        t = ndgrad.arange(6.0).reshape(2, 3)
        w = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
        assert w.wait() and w.is_completed() and w.result()[0] is t
        assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
        assert fut.wait().tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]] and fut.done()
        with pytest.raises(TypeError, match="timedelta"):
            dist.new_group([0], timeout=5)
        g = dist.new_group([0])
        assert dist.get_process_group_ranks(g) == [0] and dist.get_global_rank(g, 0) == 0
        with pytest.raises(ValueError, match="Invalid rank 1"):
            dist.new_group([0, 1])
        with pytest.raises(TypeError, match="expected a Tensor"):
            dist.broadcast([1.0], src=0)
        model = nn.parallel.DistributedDataParallel(nn.Linear(2, 2))
        assert list(model.state_dict()) == ["module.weight", "module.bias"]
        half = nn.parallel.DistributedDataParallel(nn.Linear(2, 2).bfloat16())
        half(ndgrad.ones(3, 2, dtype=ndgrad.bfloat16)).sum().backward()
        assert half.module.bias.grad.dtype == ndgrad.bfloat16
        assert half.module.bias.grad.tolist() == [3.0, 3.0]
        emb = nn.parallel.DistributedDataParallel(nn.Embedding(5, 3, sparse=True))
        emb(ndgrad.tensor([1, 1, 2])).sum().backward()     # sparse gradients: averaged densely
        assert emb.module.weight.grad.sum(1).tolist() == [0.0, 6.0, 3.0, 0.0, 0.0]
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.destroy_process_group()
