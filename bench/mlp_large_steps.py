"""The shared bench's mlp_large step, eager and compiled, taken apart: each step's time, its
matrix products timed inside the step and the same products run alone right after (on the
same operand arrays), the remainder (element-wise work, Python), page faults per step, with
all steps interleaved in one process.

    python bench/mlp_large_steps.py [--threads 2] [--repeat 15] [--no-numba] [--cpu]

Run it with ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`` to match the shared harness
(which removes both from its children). Wall time, ms, minima and medians of ``--repeat``
rounds; the GEMM ceiling is the harness's: 23.62 GFLOP at the best rate of a float32
2048^3 product measured here. Other processes on the machine inflate every figure: compare
rows of one run, and read the load average printed at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

FLOPS = 23.62e9


def _minflt() -> int:
    try:
        with open("/proc/self/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])
    except OSError:   # not Linux
        return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--no-numba", action="store_true", help="skip the numba tier")
    ap.add_argument("--cpu", action="store_true",
                    help="process CPU time instead of wall time (meaningful with --threads 1: "
                         "other processes disturb it much less)")
    args = ap.parse_args()
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[k] = str(args.threads)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import numpy as np

    clock = time.process_time if args.cpu else time.perf_counter
    real_mm = np.matmul
    calls: list = []

    def timed_mm(a, b, *rest, **kw):
        t0 = clock()
        r = real_mm(a, b, *rest, **kw)
        calls.append((a, b, (clock() - t0) * 1e3))
        return r
    np.matmul = timed_mm          # before ndgrad: generated code binds np.matmul when made

    import ndgrad
    from ndgrad.jit import numba_backend

    rng = np.random.default_rng(3)
    f32 = np.float32
    tx = ndgrad.tensor(rng.standard_normal((512, 1024)).astype(f32))
    tt = ndgrad.tensor(rng.standard_normal((512, 1024)).astype(f32))
    tw = [ndgrad.tensor((rng.standard_normal((a, b)) * (2.0 / a) ** 0.5).astype(f32),
                        requires_grad=True)
          for a, b in ((1024, 2048), (2048, 2048), (2048, 1024))]

    from mlp_large_budget import step_functions   # bench/, the script's directory
    eager, whole = step_functions(ndgrad, tx, tt, tw)
    steps = [("eager", eager)]
    backends = ["numpy"] + ([] if args.no_numba or not numba_backend.available() else ["numba"])
    for backend in backends:
        f = ndgrad.compile(whole, backend=backend)
        f(tx, tt, *tw)
        steps.append((f"compiled {backend}", lambda f=f: f(tx, tt, *tw)))
    stats: dict = {n: {"step": [], "gemm": [], "flt": [], "each": [], "alone": []}
                   for n, _ in steps}
    a0 = rng.standard_normal((2048, 2048)).astype(f32)
    probe = []
    for i in range(args.repeat + 2):
        t0 = clock()
        real_mm(a0, a0)
        probe.append(clock() - t0)
        for name, fn in (steps if i % 2 == 0 else steps[::-1]):
            calls.clear()
            f0 = _minflt()
            t0 = clock()
            fn()
            step = (clock() - t0) * 1e3
            flt = _minflt() - f0
            if i < 2:
                continue
            st = stats[name]
            st["step"].append(step)
            st["flt"].append(flt)
            st["gemm"].append(sum(c[2] for c in calls))
            st["each"].append([c[2] for c in calls])
            alone = []
            for a, b, _ in calls:
                t0 = clock()
                real_mm(a, b)
                alone.append((clock() - t0) * 1e3)
            st["alone"].append(alone)
    calls.clear()
    rate = 2 * 2048 ** 3 / min(probe[2:])
    ceiling = FLOPS / rate * 1e3
    kind = "CPU" if args.cpu else "wall"
    print(f"mlp_large steps, {args.threads} BLAS thread(s), {kind} ms, min / median of "
          f"{args.repeat}; probe {rate / 1e9:.1f} GFLOP/s -> GEMM ceiling {ceiling:.2f} ms")

    def mm(v: list) -> str:
        v = sorted(v)
        return f"{v[0]:7.2f} / {v[len(v) // 2]:7.2f}"
    for name, st in stats.items():
        rest = [s - g for s, g in zip(st["step"], st["gemm"])]
        print(f"{name:16s} step {mm(st['step'])} "
              f"(x ceiling {min(st['step']) / ceiling:.3f} / "
              f"{sorted(st['step'])[len(st['step']) // 2] / ceiling:.3f}); "
              f"GEMMs in step {mm(st['gemm'])}; rest {mm(rest)}; "
              f"page faults per step {min(st['flt'])}-{max(st['flt'])}")
        each = list(zip(*st["each"]))
        alone = list(zip(*st["alone"]))
        row = "   GEMM in step / alone (min): " + ", ".join(
            f"{min(e):.2f}/{min(a):.2f}" for e, a in zip(each, alone))
        print(row + f"; sums {sum(min(e) for e in each):.1f}/{sum(min(a) for a in alone):.1f}")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
