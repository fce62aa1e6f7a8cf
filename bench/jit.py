"""The compiled path against eager ndgrad, torch and jax.jit, as ratios from ONE run of the
shared peers harness (../shared/bench/peers.py; each cell in its own process).

    python bench/jit.py                       # run the harness, print the ratios
    python bench/jit.py --json out.json       # also keep the raw cells
    python bench/jit.py --from-json out.json  # ratios of an earlier run

Reported (Issue 11's targets in brackets): ndgrad_jit / jax_jit on chain, mlp_small, hessian,
double_backward [<= 1]; ndgrad_jit / the GEMM ceiling on mlp_large [<= 1.1] (the ceiling is the
workload's GEMM FLOPs at the NumPy float32 2048^3 matmul rate measured in the same run);
ndgrad_compile / ndgrad on chain and mlp_small [<= 0.5]; first-call overhead / XLA's
lower+compile [<= 0.1]; memory peak ndgrad_jit / ndgrad [<= 1]. jax_jit is
skipped when jax is not installed (``pip install jax jaxlib``; not a dependency of ndgrad).
The machine may be loaded by other processes: compare cells of one run only.

First-call overhead. The first call of a compiled function traces it (running it once,
eagerly), differentiates when needed, optimizes and generates code, all in that call (Note
[The tracing call's result] in ndgrad/jit/api.py); the harness times that call as
``first_call_s``, while jax's ``compile_s`` times lowering and compiling only (jax's first call
is then a plain run). The overhead compared with XLA's compile time is therefore
``first_call_s`` minus ndgrad_jit's steady median (the run itself). Where the traced eager run
is much slower than the compiled run (chain), that difference is part of the overhead; on
GEMM-bound workloads (mlp_large) a first run in a fresh process is slower than a steady one
for eager ndgrad and for jax.jit too (fresh memory, BLAS start-up: jax pays it in its first
call after ``compile_s``), so two more views are printed: the overhead against XLA's compile
time plus jax_jit's own first-run excess (first call minus its median), and the first call
minus eager ndgrad's first call; and the raw first-call times.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from peers import find_harness  # noqa: E402  (bench/peers.py: where the shared harness is)
WORKLOADS = "chain,mlp_small,mlp_large,hessian,double_backward,memory"
MLP_LARGE_FLOPS = 23.62e9   # the harness's GEMM FLOP count of one mlp_large fwd+bwd


def run_harness(harness: pathlib.Path, out: str, repeat: int, workloads: str) -> None:
    backends = ["torch", "ndgrad", "ndgrad_compile", "ndgrad_jit"]
    if importlib.util.find_spec("jax") is not None:
        backends.append("jax_jit")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, str(harness), "--backends", ",".join(backends), "--workloads",
           workloads, "--repeat", str(repeat), "--no-md", "--json", out]
    subprocess.run(cmd, check=True, env=env)


def _cells(data: dict) -> dict:
    by = {}
    for c in data["cells"]:
        by.setdefault((c["workload"], c["backend"]), []).append(c)
    return by


def _med(cells: dict, wl: str, be: str, key: str = "median_s"):
    vals = [c.get(key) for c in cells.get((wl, be), []) if c.get("status") == "ok"
            and c.get(key) is not None]
    return sorted(vals)[len(vals) // 2] if vals else None


def _mem(cells: dict, wl: str, be: str):
    for c in cells.get((wl, be), []):
        for k in ("peak_increase_mib",):
            if c.get(k) is not None:
                return c[k]
    return None


def report(data: dict) -> str:
    cells = _cells(data)
    lines = ["ratio | value | target", "--- | --- | ---"]

    def ratio(name: str, a, b, target: str, unit: str = "") -> None:
        if a is None or b is None:
            lines.append(f"{name} | n/a | {target}")
        else:
            lines.append(f"{name} | {a / b:.2f} ({a * 1e6:.4g} / {b * 1e6:.4g} us{unit}) | "
                         f"{target}")

    for wl in ("chain", "mlp_small", "hessian", "double_backward"):
        ratio(f"{wl}: ndgrad_jit / jax_jit", _med(cells, wl, "ndgrad_jit"),
              _med(cells, wl, "jax_jit"), "<= 1")
    for wl in ("chain", "mlp_small", "mlp_large", "hessian", "double_backward"):
        ratio(f"{wl}: ndgrad_jit / ndgrad", _med(cells, wl, "ndgrad_jit"),
              _med(cells, wl, "ndgrad"), "-")
        ratio(f"{wl}: ndgrad_jit / torch", _med(cells, wl, "ndgrad_jit"),
              _med(cells, wl, "torch"), "-")
    probes = [p for p in data.get("probes", []) if p.get("gflops_median")]
    ceiling = MLP_LARGE_FLOPS / (probes[0]["gflops_median"] * 1e9) if probes else None
    ratio("mlp_large: ndgrad_jit / GEMM ceiling", _med(cells, "mlp_large", "ndgrad_jit"),
          ceiling, "<= 1.1")
    ratio("mlp_large: jax_jit / GEMM ceiling", _med(cells, "mlp_large", "jax_jit"), ceiling, "-")
    for wl in ("chain", "mlp_small"):
        ratio(f"{wl}: ndgrad_compile / ndgrad", _med(cells, wl, "ndgrad_compile"),
              _med(cells, wl, "ndgrad"), "<= 0.5")
    for wl in ("chain", "mlp_small", "mlp_large", "hessian", "double_backward"):
        first = _med(cells, wl, "ndgrad_jit", "first_call_s")
        run = _med(cells, wl, "ndgrad_jit")
        overhead = None if first is None or run is None else max(first - run, 0.0)
        xla = _med(cells, wl, "jax_jit", "compile_s")
        ratio(f"{wl}: first-call overhead (first call - steady run) ndgrad_jit / XLA compile",
              overhead, xla, "<= 0.1")
        ratio(f"{wl}: first call ndgrad_jit (raw) / XLA compile", first, xla, "-")
        jfirst, jrun = (_med(cells, wl, "jax_jit", "first_call_s"),
                        _med(cells, wl, "jax_jit"))
        ratio(f"{wl}: first-call overhead / (XLA compile + jax_jit's first-run excess)",
              overhead, None if xla is None or jfirst is None or jrun is None
              else xla + max(jfirst - jrun, 0.0), "-")
        eager = _med(cells, wl, "ndgrad", "first_call_s")
        ratio(f"{wl}: first call ndgrad_jit - eager ndgrad's first call / XLA compile",
              None if first is None or eager is None else first - eager, xla, "-")
    a, b = _mem(cells, "memory", "ndgrad_jit"), _mem(cells, "memory", "ndgrad")
    lines.append(f"memory: ndgrad_jit / ndgrad peak | "
                 f"{'n/a' if a is None or b is None else f'{a / b:.2f} ({a:.0f} / {b:.0f} MiB)'}"
                 " | <= 1")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="keep the harness's raw results here")
    ap.add_argument("--from-json", help="report an earlier run instead of running")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workloads", default=WORKLOADS)
    ap.add_argument("--harness", default=None,
                    help="the shared peers.py (default: found as bench/peers.py finds it)")
    args = ap.parse_args()
    path = args.from_json
    if path is None:
        path = args.json or os.path.join(tempfile.mkdtemp(), "jit.json")
        run_harness(pathlib.Path(find_harness(args.harness)), path, args.repeat,
                    args.workloads)
    with open(path) as f:
        data = json.load(f)
    print(report(data))


if __name__ == "__main__":
    main()
