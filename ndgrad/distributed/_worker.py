"""One rank of a job started by ``python -m ndgrad.distributed.run``: sets torchrun's
per-rank environment from MPI's launcher and runs the script; an error ends the process at
once with a non-zero code, so ``mpiexec`` stops the other ranks (a normal exit would wait in
``MPI_Finalize`` for ranks that are waiting for this one)."""

from __future__ import annotations

import os
import runpy
import sys
import traceback


def _rank_env() -> dict:
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    local = int(os.environ.get("MPI_LOCALRANKID",
                               os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", rank)))
    nproc = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    return {"RANK": str(rank), "LOCAL_RANK": str(local), "ROLE_RANK": str(rank),
            "GROUP_RANK": str(rank // max(nproc, 1))}


def _end(code: int) -> None:
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:  # noqa: BLE001 - closed streams must not stop the exit
            pass
    os._exit(code)


def main() -> None:
    os.environ.update(_rank_env())
    # One write per line: the ranks' output reaches mpiexec whole lines at a time (unbuffered
    # output, as under PYTHONUNBUFFERED=1, would interleave the ranks' lines piece by piece).
    for f in (sys.stdout, sys.stderr):
        reconfigure = getattr(f, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(line_buffering=True, write_through=False)
            except ValueError:
                pass
    mode = os.environ.get("NDGRAD_RUN_MODE", "path")
    script, args = sys.argv[1], sys.argv[2:]
    if mode == "exec":
        os.execvp(script, [script] + args)
    sys.argv = [script] + args
    try:
        if mode == "module":
            runpy.run_module(script, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None or code == 0:
            return
        if not isinstance(code, int):
            sys.stderr.write(f"{code}\n")
            code = 1
        _end(code)
    except BaseException:  # noqa: BLE001 - any error of the script ends this rank
        tb = traceback.format_exc()
        rank = os.environ.get("RANK", "?")
        sys.stderr.write("".join(f"[rank {rank}]: {line}\n" for line in tb.rstrip().split("\n")))
        _end(1)


if __name__ == "__main__":
    main()
