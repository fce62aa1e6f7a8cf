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
minus eager ndgrad's first call; and the raw first-call times. When no output of the step
requires grad (the ``ndgrad_jit`` steps) the first call returns the traced run's outputs, so
its cost is one eager run (with that run's first-touch page faults, which eager's first call
pays too) plus the build; the generated code first runs in the second call, a warm-up call
for the harness.

Memory under ``NDGRAD_COMPILE_BACKEND=numba``: numba is imported by the first call of the VM
(Note [numba is imported by the first VM call] in ndgrad/jit/numba_backend.py), never by
``ndgrad.compile``; the memory workload's graph has no VM cluster, so its process never imports
numba. (When ``ndgrad.compile`` imported it, after the harness made the inputs, the import's
~6 MiB of malloc'd blocks took free heap the run would otherwise reuse: 82 MiB over the
baseline against eager's 80.)

Phase breakdown (``--phases``, on by default; ``--phases-only`` skips the harness): each
workload's ``ndgrad_jit`` step (``NDGRAD_COMPILE_BACKEND=numba`` for the numba tier) is built in
a fresh process as the harness builds it, and its first call is split into trace (the traced
eager run included), differentiate, passes (graph copy, CSE, constant folding, stack
batching ...), codegen (source building), ``compile()`` of the source, the numba VM (import and
load, numba tier only; since numba is imported by the VM's first call, none in a first call that
runs the traced eager run) and the rest (guards, plans). Phases are this thread's CPU time (load
on the machine does not inflate them; BLAS threads' work in the traced run is not in it); the
first call, the second call (the generated code's first run: on the numba tier it imports numba
and loads the VM when the graph has a VM cluster), the steady run and XLA's compile time
(jax_jit's lower+compile in the same kind of fresh process, when jax is installed) are wall
time, medians of ``--phase-repeat`` processes; faults are the first call's minor page faults
(first touches of fresh memory). ``--pretouch`` adds the overhead of a first call made after
one eager step of the workload in the same process (its own inputs): the process has touched
its working set (heap pages, BLAS buffers), so what remains is trace, build and the traced
eager run against the compiled one; the difference to the plain overhead is the fresh
process's first touch, which eager ndgrad's first call pays as well.
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


PHASE_WORKLOADS = "chain,mlp_small,mlp_large,hessian,double_backward"
PHASES = ("trace", "differentiate", "passes", "codegen", "compile()", "numba VM", "other")


def _harness_modules(harness: str) -> tuple:
    sys.path.insert(0, os.path.dirname(harness))
    import backends                     # the harness's backends and workloads
    import workloads
    return backends, workloads


def _build_step(harness: str, wl_name: str, backend: str) -> tuple:
    """The harness's step for one workload and backend, and its native inputs."""
    import numpy as np
    backends, workloads = _harness_modules(harness)
    wl = workloads.get(wl_name)
    B = backends.get(backend)()
    B.setup(2)
    rng = np.random.default_rng(wl.seed)
    nat = [B.array(a, requires_grad=wl.leaf_needs_grad(i)) for i, a in enumerate(wl.inputs(rng))]
    fn = wl.build(B)
    step = B.hessian(fn, wl.argnums[0]) if wl.kind == "hessian" else \
        B.value_and_grad(fn, wl.argnums)
    return B, step, nat


def _instrument() -> dict:
    """Wrap the first call's phases (ndgrad.jit's module globals) with exclusive timers;
    returns the dict they accumulate this thread's CPU seconds into."""
    import importlib
    import time

    from ndgrad.jit import api, codegen, ir, numba_backend
    diff_mod = importlib.import_module("ndgrad.jit.differentiate")
    acc: dict = {}
    stack: list = []
    clock = time.thread_time

    def timed(phase: str, f):
        def run(*a, **k):
            t0 = clock()
            stack.append(0.0)
            try:
                return f(*a, **k)
            finally:
                dt = clock() - t0
                acc[phase] = acc.get(phase, 0.0) + dt - stack.pop()
                if stack:
                    stack[-1] += dt
        return run
    api._trace = timed("trace", api._trace)
    diff_mod.differentiate = timed("differentiate", diff_mod.differentiate)
    for name in ("eliminate_common_subexpression", "copy_eliminating_common_subexpressions",
                 "fold_constants", "batch_stacks"):
        if hasattr(api, name):          # (an older checkout may lack one)
            setattr(api, name, timed("passes", getattr(api, name)))
    ir.Graph.copy = timed("passes", ir.Graph.copy)
    api.generate = timed("codegen", api.generate)
    codegen.compile = timed("compile()", compile)      # shadows the builtin in codegen only
    numba_backend.get_vm = timed("numba VM", numba_backend.get_vm)
    return acc


def phase_child(harness: str, wl_name: str, backend: str, repeat: int) -> dict:
    """One fresh process: the first call of ``backend``'s step, split into phases.
    ``backend`` ``"ndgrad_jit+pretouch"``: an eager ndgrad step of the workload (its own
    inputs, gradients dropped) runs first, so the process has touched its working set."""
    import resource
    import statistics
    import time
    pretouch = backend.endswith("+pretouch")
    backend = backend.removesuffix("+pretouch")
    if backend == "jax_jit":
        B, step, nat = _build_step(harness, wl_name, backend)
        t0 = time.perf_counter()
        B.compile(step, nat)
        return {"xla_compile_s": time.perf_counter() - t0}
    acc = _instrument()
    B, step, nat = _build_step(harness, wl_name, backend)
    if pretouch:
        _, eager_step, eager_nat = _build_step(harness, wl_name, "ndgrad")
        eager_step(*eager_nat)
        for t in eager_nat:     # its inputs stay: freeing them all would trim the heap top
            t.grad = None
    step = B.compile(step, nat)
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0, c0 = time.perf_counter(), time.thread_time()
    step(*nat)
    first, first_cpu = time.perf_counter() - t0, time.thread_time() - c0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    acc = dict(acc)     # the first call's phases (a later call may load the numba VM)
    t0 = time.perf_counter()
    step(*nat)
    second = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step(*nat)
        times.append(time.perf_counter() - t0)
    acc["other"] = first_cpu - sum(acc.values())
    return {"first_s": first, "first_cpu_s": first_cpu, "second_s": second, "faults": faults,
            "steady_s": statistics.median(times),
            "phases_cpu_s": acc}


def run_phases(harness: str, workloads: str, repeat: int, pretouch: bool = False) -> str:
    """Fresh processes per workload (``repeat`` each, medians) and the breakdown table;
    ``pretouch``: also the first call's overhead after an eager step (pages touched)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}   # as the harness does
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    has_jax = importlib.util.find_spec("jax") is not None

    def child(wl: str, backend: str) -> dict:
        out = subprocess.run([sys.executable, __file__, "--harness", harness, "--phase-child",
                              wl, "--phase-backend", backend], env=env, check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    def med(xs: list) -> float:
        return sorted(xs)[len(xs) // 2]

    tier = os.environ.get("NDGRAD_COMPILE_BACKEND") or "numpy"
    lines = [f"First call of ndgrad_jit ({tier} backend), phases in ms of CPU time, medians of "
             f"{repeat} fresh processes:", "",
             "workload | " + " | ".join(PHASES) + " | first call cpu | first call wall | "
             "faults | second call | steady | overhead (wall) | XLA compile | overhead / XLA"
             + (" | pretouched: faults | overhead | overhead / XLA" if pretouch else ""),
             " | ".join(["---"] * (len(PHASES) + 9 + 3 * pretouch))]
    for wl in workloads.split(","):
        runs = [child(wl, "ndgrad_jit") for _ in range(repeat)]
        xla = med([child(wl, "jax_jit")["xla_compile_s"] for _ in range(repeat)]) \
            if has_jax else None
        ph = [med([r["phases_cpu_s"].get(p, 0.0) for r in runs]) * 1e3 for p in PHASES]
        first = med([r["first_s"] for r in runs])
        over = med([max(r["first_s"] - r["steady_s"], 0.0) for r in runs])
        cells = [f"{x:.2f}" for x in ph] + [
            f"{med([r['first_cpu_s'] for r in runs]) * 1e3:.1f}", f"{first * 1e3:.1f}",
            f"{med([r['faults'] for r in runs])}",
            f"{med([r['second_s'] for r in runs]) * 1e3:.1f}",
            f"{med([r['steady_s'] for r in runs]) * 1e3:.2f}", f"{over * 1e3:.1f}",
            "n/a" if xla is None else f"{xla * 1e3:.0f}",
            "n/a" if xla is None else f"{over / xla:.3f}"]
        if pretouch:
            pre = [child(wl, "ndgrad_jit+pretouch") for _ in range(repeat)]
            pover = med([max(r["first_s"] - r["steady_s"], 0.0) for r in pre])
            cells += [f"{med([r['faults'] for r in pre])}", f"{pover * 1e3:.1f}",
                      "n/a" if xla is None else f"{pover / xla:.3f}"]
        lines.append(f"{wl} | " + " | ".join(cells))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="keep the harness's raw results here")
    ap.add_argument("--from-json", help="report an earlier run instead of running")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workloads", default=None,
                    help=f"harness workloads (default {WORKLOADS}); with --phases-only, the "
                    f"phase workloads (default {PHASE_WORKLOADS})")
    ap.add_argument("--harness", default=None,
                    help="the shared peers.py (default: found as bench/peers.py finds it)")
    ap.add_argument("--phases", action=argparse.BooleanOptionalAction, default=True,
                    help="also print the first call's phase breakdown (fresh processes)")
    ap.add_argument("--phases-only", action="store_true", help="only the phase breakdown")
    ap.add_argument("--phase-repeat", type=int, default=3,
                    help="fresh processes per workload for the phase breakdown")
    ap.add_argument("--pretouch", action="store_true",
                    help="phase table: also the first call after an eager step of the workload")
    ap.add_argument("--phase-child", help=argparse.SUPPRESS)
    ap.add_argument("--phase-backend", default="ndgrad_jit", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase_child:
        print(json.dumps(phase_child(find_harness(args.harness), args.phase_child,
                                     args.phase_backend, 11)))
        return
    if args.phases_only:
        print(run_phases(find_harness(args.harness), args.workloads or PHASE_WORKLOADS,
                         args.phase_repeat, args.pretouch))
        return
    path = args.from_json
    if path is None:
        path = args.json or os.path.join(tempfile.mkdtemp(), "jit.json")
        run_harness(pathlib.Path(find_harness(args.harness)), path, args.repeat,
                    args.workloads or WORKLOADS)
    with open(path) as f:
        data = json.load(f)
    print(report(data))
    if args.phases and args.from_json is None:
        print()
        print(run_phases(find_harness(args.harness), PHASE_WORKLOADS, args.phase_repeat,
                         args.pretouch))


if __name__ == "__main__":
    main()
