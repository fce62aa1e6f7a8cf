"""``python -m ndgrad.distributed.run``: torchrun's command line on top of MPI's ``mpiexec``.

    python -m ndgrad.distributed.run --nproc-per-node 4 train.py --epochs 3

starts 4 processes of ``train.py`` with the ``mpiexec`` of the MPI wheel (found beside the
Python interpreter, so a virtual environment's own MPI is used), each with torchrun's
environment (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``,
``ROLE_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``, ``TORCHELASTIC_RESTART_COUNT`` ...). If a rank
raises, exits with an error or dies, the other ranks are stopped at once and the launcher
exits with a non-zero code (after ``--max-restarts`` new attempts). Several machines: one
launcher starts them all from an MPI host file (``--nnodes 2 --hostfile hosts``); MPI does the
rendezvous, so ``--rdzv-*`` options are accepted and not needed.

Example (the parser only; nothing is launched):
    >>> from ndgrad.distributed.run import parse_args
    >>> a = parse_args(["--nproc_per_node", "2", "--max-restarts=1", "train.py", "--lr", "0.1"])
    >>> a.nproc_per_node, a.max_restarts, a.training_script, a.training_script_args
    ('2', 1, 'train.py', ['--lr', '0.1'])
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import uuid
from typing import List, Optional

__all__ = ["parse_args", "main", "find_mpiexec"]


def _both(parser: argparse.ArgumentParser, name: str, **kw) -> None:
    """An option under its dashed and its underscored spelling, as torchrun accepts both."""
    names = [f"--{name}"]
    if "-" in name:
        names.append(f"--{name.replace('-', '_')}")
    parser.add_argument(*names, **kw)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ndgrad.distributed.run",
        description="Start a data-parallel ndgrad job on MPI (torchrun's options).")
    _both(p, "nnodes", default="1", help="number of machines, N or MIN:MAX (default 1)")
    _both(p, "nproc-per-node", default="1", dest="nproc_per_node",
          help="processes per machine: a number, 'cpu' or 'auto' (the CPU count)")
    _both(p, "node-rank", type=int, default=0, dest="node_rank",
          help="must be 0: one launcher starts every machine through MPI")
    _both(p, "master-addr", default="127.0.0.1", dest="master_addr")
    _both(p, "master-port", type=int, default=29500, dest="master_port")
    p.add_argument("--standalone", action="store_true",
                   help="single machine (the default with MPI)")
    for opt in ("rdzv-backend", "rdzv-endpoint", "rdzv-id", "rdzv-conf", "rdzv-timeout"):
        _both(p, opt, default=None, dest=opt.replace("-", "_"),
              help="accepted for torchrun compatibility; MPI does the rendezvous")
    _both(p, "max-restarts", type=int, default=0, dest="max_restarts",
          help="start the job again this many times after a failure")
    _both(p, "monitor-interval", type=float, default=0.1, dest="monitor_interval")
    p.add_argument("--role", default="default")
    p.add_argument("-m", "--module", action="store_true",
                   help="run training_script as a module (python -m)")
    _both(p, "no-python", action="store_true", dest="no_python",
          help="run training_script as an executable, not with Python")
    _both(p, "run-path", action="store_true", dest="run_path",
          help="run training_script with runpy.run_path (the default here)")
    p.add_argument("--hostfile", default=None,
                   help="MPI host file listing the machines (needed when --nnodes > 1)")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use (default: the one "
                                                   "installed beside this Python)")
    p.add_argument("training_script", help="the script (or module, or program) to run")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """The launcher's options, as torchrun parses them."""
    return _parser().parse_args(argv)


def find_mpiexec(explicit: Optional[str] = None) -> str:
    """The ``mpiexec`` of this Python's environment (the MPI wheel puts it beside the
    interpreter), else the first one on PATH."""
    if explicit:
        return explicit
    for d in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        cand = os.path.join(d, "mpiexec")
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    found = shutil.which("mpiexec")
    if found is None:
        raise SystemExit("ndgrad.distributed.run: mpiexec not found: pip install "
                         "'ndgrad[distributed]' (the mpich wheel provides it)")
    return found


def _nproc(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    try:
        n = int(value)
    except ValueError:
        raise SystemExit(f"ndgrad.distributed.run: unsupported nproc_per_node value: "
                         f"{value}") from None
    if n < 1:
        raise SystemExit("ndgrad.distributed.run: --nproc-per-node must be at least 1")
    return n


def _nnodes(value: str) -> int:
    parts = value.split(":")
    try:
        lo, hi = int(parts[0]), int(parts[-1])
    except ValueError:
        raise SystemExit(f"ndgrad.distributed.run: bad --nnodes {value!r}") from None
    if len(parts) > 2 or lo < 1 or hi < lo:
        raise SystemExit(f"ndgrad.distributed.run: bad --nnodes {value!r}")
    return hi


def _command(args: argparse.Namespace, world: int, nproc: int) -> List[str]:
    cmd = [find_mpiexec(args.mpiexec), "-n", str(world)]
    if args.hostfile:
        cmd += ["-f", args.hostfile, "-ppn", str(nproc)]
    cmd += [sys.executable, "-m", "ndgrad.distributed._worker", args.training_script]
    return cmd + list(args.training_script_args)


def main(argv: Optional[List[str]] = None) -> int:
    """Run the job; returns the exit code (0 when every rank succeeded)."""
    args = parse_args(argv)
    nproc = _nproc(args.nproc_per_node)
    nnodes = _nnodes(args.nnodes)
    if args.node_rank != 0:
        raise SystemExit("ndgrad.distributed.run: --node-rank must be 0: with MPI one "
                         "launcher starts the processes of every machine (--hostfile)")
    if nnodes > 1 and not args.hostfile:
        raise SystemExit("ndgrad.distributed.run: --nnodes > 1 needs --hostfile (an MPI host "
                         "file naming the machines)")
    if args.module and args.no_python:
        raise SystemExit("ndgrad.distributed.run: Don't use both the '--no-python' flag and "
                         "the '--module' flag at the same time.")
    world = nnodes * nproc
    env = dict(os.environ)
    env.update({
        "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(nproc),
        "GROUP_WORLD_SIZE": str(nnodes), "ROLE_WORLD_SIZE": str(world),
        "ROLE_NAME": args.role, "MASTER_ADDR": args.master_addr,
        "MASTER_PORT": str(args.master_port),
        "TORCHELASTIC_MAX_RESTARTS": str(args.max_restarts),
        "TORCHELASTIC_RUN_ID": args.rdzv_id or uuid.uuid4().hex[:12],
        "NDGRAD_RUN_MODE": "module" if args.module else "exec" if args.no_python else "path",
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    })
    pp = env.get("PYTHONPATH")
    here = os.getcwd()
    if not args.no_python:        # the script's directory is sys.path[0] as with python x.py
        env["PYTHONPATH"] = here if not pp else here + os.pathsep + pp
    code = 0
    for attempt in range(args.max_restarts + 1):
        env["TORCHELASTIC_RESTART_COUNT"] = str(attempt)
        code = _run(_command(args, world, nproc), env)
        if code == 0:
            return 0
        sys.stderr.write(
            f"ndgrad.distributed.run: the job failed with exit code {code} (a rank raised an "
            "error, exited or was killed, and the other ranks were stopped; its traceback, "
            "if any, is above)"
            + (f"; restarting ({attempt + 1}/{args.max_restarts})\n"
               if attempt < args.max_restarts else "\n"))
        sys.stderr.flush()
    return code


def _run(cmd: List[str], env: dict) -> int:
    proc = subprocess.Popen(cmd, env=env)

    def forward(signum, frame):          # stop the ranks with the launcher
        proc.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)


if __name__ == "__main__":
    sys.exit(main())
