"""The eight matrix products of the shared bench's mlp_large step through each GEMM entry this
machine has: NumPy's ``np.matmul`` (its own OpenBLAS build) and SciPy's ``sgemm`` wrapper (SciPy's
OpenBLAS build), each with a row-major and a column-major result, fresh or written into a
kept output array, with the 2048^3 probe of the shared harness measured in the same loop.

    python bench/mlp_large_gemms.py [--threads 1] [--cpu] [--repeat 15]

Minima and medians of ``--repeat`` interleaved rounds, ms, and each product's rate as a
fraction of the probe's. ``--cpu``: process CPU time (with one thread the work itself; other
processes disturb it much less than wall time). Run it with ``env -u OPENBLAS_CORETYPE -u
OPENBLAS_L2_SIZE`` to match the shared harness. Both OpenBLAS builds keep their own thread
pool: with two threads, a build not used for a while has its workers asleep.
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cpu", action="store_true", help="process CPU time instead of wall time")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--entries", default="np,np_t,np_out,sp_c,sp_f,sp_c_out",
                    help="comma-separated subset of the entries to time")
    args = ap.parse_args()
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[k] = str(args.threads)
    import numpy as np
    from scipy.linalg import blas

    clock = time.process_time if args.cpu else time.perf_counter
    rng = np.random.default_rng(3)
    f32 = np.float32
    mm = np.matmul
    x = rng.standard_normal((512, 1024)).astype(f32)
    w1, w2, w3 = [(rng.standard_normal((a, b)) * (2.0 / a) ** 0.5).astype(f32)
                  for a, b in ((1024, 2048), (2048, 2048), (2048, 1024))]
    h1 = np.maximum(mm(x, w1), 0)
    h2 = np.maximum(mm(h1, w2), 0)
    g3 = (mm(h2, w3) - x) * f32(2.0 / x.size)
    g2 = mm(g3, w3.T) * (h2 > 0)
    g1 = mm(g2, w2.T) * (h1 > 0)
    products = [("fwd x@W1", x, w1), ("fwd h1@W2", h1, w2), ("fwd h2@W3", h2, w3),
                ("dW3 h2.T@g3", h2.T, g3), ("dW2 h1.T@g2", h1.T, g2), ("dW1 x.T@g1", x.T, g1),
                ("dX g3@W3.T", g3, w3.T), ("dX g2@W2.T", g2, w2.T)]

    def fort(a):
        """``a`` as a Fortran-ordered operand and its transpose flag."""
        return (a, 0) if a.flags.f_contiguous else (a.T, 1)

    def sp_f(a, b, c=None):
        """``a @ b`` column-major, SciPy's sgemm."""
        (fa, ta), (fb, tb) = fort(a), fort(b)
        if c is None:
            return blas.sgemm(1.0, fa, fb, trans_a=ta, trans_b=tb)
        return blas.sgemm(1.0, fa, fb, c=c, trans_a=ta, trans_b=tb, overwrite_c=1)

    def entries(a, b):
        m, n = a.shape[0], b.shape[1]
        out_c = np.empty((m, n), f32)
        out_f = np.empty((n, m), f32).T
        return {
            "np": lambda: mm(a, b),
            "np_t": lambda: mm(b.T, a.T).T,
            "np_out": lambda: mm(a, b, out=out_c),
            "sp_c": lambda: sp_f(b.T, a.T).T,
            "sp_f": lambda: sp_f(a, b),
            "sp_c_out": lambda: sp_f(b.T, a.T, out_c.T).T,
            "sp_f_out": lambda: sp_f(a, b, out_f),
            "np_a_f": lambda: mm(np.asfortranarray(a), b),
            "np_a_c": lambda: mm(np.ascontiguousarray(a), b),
            "np_b_f": lambda: mm(a, np.asfortranarray(b)),
        }
    names = [e for e in args.entries.split(",") if e]
    cells = []
    for pname, a, b in products:
        ref = mm(a, b)
        ent = entries(a, b)
        for e in names:
            r = ent[e]()
            err = float(np.max(np.abs(r - ref)) / np.max(np.abs(ref)))
            assert r.shape == ref.shape and err < 1e-5, (pname, e, err)
            cells.append((pname, e, ent[e], 2.0 * a.shape[0] * a.shape[1] * b.shape[1]))
    p0 = rng.standard_normal((2048, 2048)).astype(f32)
    p1 = rng.standard_normal((2048, 2048)).astype(f32)
    cells.append(("probe 2048^3", "np", lambda: mm(p0, p1), 2.0 * 2048 ** 3))
    times: list = [[] for _ in cells]
    for _ in range(2):
        for c in cells:
            c[2]()
    for i in range(args.repeat):
        order = range(len(cells)) if i % 2 == 0 else reversed(range(len(cells)))
        for k in order:
            t0 = clock()
            cells[k][2]()
            times[k].append(clock() - t0)
    probe_rate = cells[-1][3] / min(times[-1])
    kind = "CPU" if args.cpu else "wall"
    print(f"mlp_large GEMMs: {args.threads} thread(s), {kind} time, ms (min / median of "
          f"{args.repeat}) and rate / probe rate (min); probe {probe_rate / 1e9:.1f} GFLOP/s; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("  " + " " * 14 + "".join(f"{e:>22s}" for e in names))
    best_sum = {e: 0.0 for e in names}
    best_any = 0.0
    for j, (pname, _, _) in enumerate(products):
        row = []
        mins = []
        for k, e in enumerate(names):
            v = sorted(times[j * len(names) + k])
            mins.append(v[0])
            best_sum[e] += v[0]
            rate = cells[j * len(names) + k][3] / v[0]
            row.append(f"{v[0] * 1e3:6.2f}/{v[len(v) // 2] * 1e3:6.2f} {rate / probe_rate:.3f}")
        best_any += min(mins)
        print(f"  {pname:14s}" + "".join(f"{r:>22s}" for r in row))
    flops = sum(2.0 * a.shape[0] * a.shape[1] * b.shape[1] for _, a, b in products)
    ceiling = flops / probe_rate
    print("  sums (minima) " + ", ".join(f"{e} {s * 1e3:.2f} ({s / ceiling:.3f})"
                                         for e, s in best_sum.items())
          + f"; best entry per product {best_any * 1e3:.2f} ({best_any / ceiling:.3f}); "
          f"ceiling {ceiling * 1e3:.2f}")


if __name__ == "__main__":
    main()
