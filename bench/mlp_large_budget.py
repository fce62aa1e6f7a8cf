"""Where the time of the shared bench's mlp_large step goes (Note [mlp_large time budget] in
ndgrad/ops/linalg.py): its eight GEMMs alone, in NumPy's default orientation and in the faster
of the two per product, the non-GEMM NumPy work one op at a time, and the eager and compiled
steps (both backends), all in one process on the same arrays.

    python bench/mlp_large_budget.py [--threads 2] [--cpu] [--repeat 15] [--steps-only]

``--cpu`` measures the process's CPU time instead of wall time: with ``--threads 1`` it is the
work itself, which other processes on a loaded machine disturb much less than wall time (with
2 threads it also counts OpenBLAS's spinning workers). Minima and medians of ``--repeat``
interleaved rounds, in ms. The shared harness (``../shared/bench/peers.py``) removes
``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` from its children; run this script with
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`` to match it (the thread count is set here).
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def step_functions(ndgrad, tx, tt, tw):
    """The shared bench's mlp_large step on tensors ``tx``, ``tt`` and weights ``tw``: ``eager()``
    (loss.backward() into the weights' .grad) and ``whole(x, t, a, b, c)`` (loss and gradients
    returned, to compile); ``bench/mlp_large_steps.py`` times the same two."""
    def eager():
        for p in tw:
            p.grad = None
        h = ndgrad.relu(tx @ tw[0])
        h = ndgrad.relu(h @ tw[1])
        e = h @ tw[2] - tt
        (e * e).mean().backward()

    def whole(x, t, a, b, c):
        h = ndgrad.relu(x @ a)
        h = ndgrad.relu(h @ b)
        e = h @ c - t
        loss = (e * e).mean()
        return loss.detach(), tuple(ndgrad.autograd.grad(loss, [a, b, c]))
    return eager, whole


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cpu", action="store_true", help="process CPU time instead of wall time")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--steps-only", action="store_true",
                    help="time only the probe and the whole steps (hand-written NumPy, eager, "
                         "compiled), interleaved: the other cells' allocations disturb them")
    args = ap.parse_args()
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[k] = str(args.threads)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import numpy as np

    import ndgrad
    from ndgrad.jit import numba_backend, numba_kernels
    from ndgrad.ops._workspace import zeros_operand
    from ndgrad.ops.pointwise import relu_backward_bits
    if not numba_backend.available():
        numba_kernels = None

    clock = time.process_time if args.cpu else time.perf_counter
    rng = np.random.default_rng(3)
    f32 = np.float32
    x = rng.standard_normal((512, 1024)).astype(f32)
    t = rng.standard_normal((512, 1024)).astype(f32)
    w1, w2, w3 = [(rng.standard_normal((a, b)) * (2.0 / a) ** 0.5).astype(f32)
                  for a, b in ((1024, 2048), (2048, 2048), (2048, 1024))]
    mm = np.matmul
    h1 = np.maximum(mm(x, w1), 0)
    h2 = np.maximum(mm(h1, w2), 0)
    d = mm(h2, w3) - t
    g3 = d * f32(2.0 / d.size)
    g2 = mm(g3, w3.T) * (h2 > 0)
    g1 = mm(g2, w2.T) * (h1 > 0)
    # (name, NumPy's default form, the transposed form)
    gemms = [
        ("fwd x@W1", lambda: mm(x, w1), lambda: mm(w1.T, x.T).T),
        ("fwd h1@W2", lambda: mm(h1, w2), lambda: mm(w2.T, h1.T).T),
        ("fwd h2@W3", lambda: mm(h2, w3), lambda: mm(w3.T, h2.T).T),
        ("dW3 h2.T@g3", lambda: mm(h2.T, g3), lambda: mm(g3.T, h2).T),
        ("dW2 h1.T@g2", lambda: mm(h1.T, g2), lambda: mm(g2.T, h1).T),
        ("dW1 x.T@g1", lambda: mm(x.T, g1), lambda: mm(g1.T, x).T),
        ("dX g3@W3.T", lambda: mm(g3, w3.T), lambda: mm(w3, g3.T).T),
        ("dX g2@W2.T", lambda: mm(g2, w2.T), lambda: mm(w2, g2.T).T),
    ]
    a = mm(x, w1)
    r = np.empty_like(g2)
    zeros = zeros_operand(a.shape, a.dtype)
    others = [
        # the calls eager and both compiled tiers make (ops/pointwise.py, jit/codegen.py)
        ("relu fwd in place (x2)", lambda: np.maximum(a, zeros, out=a)),
        ("relu bwd in place (x2)", lambda: relu_backward_bits(r, h2)),
        ("sub y - t", lambda: np.subtract(d, t)),
        ("square d * d", lambda: np.multiply(d, d)),
        ("mean (sum)", lambda: np.add.reduce(d, axis=None)),
        ("loss backward c * d", lambda: np.multiply(d, f32(2.0))),
    ]
    if numba_kernels is not None:   # the numba tier's form (not in the sum below)
        others.append(("relu bwd numba tier (x2)",
                          lambda: numba_kernels.relu_backward_into(r, h2)))
    tx, tt = ndgrad.tensor(x), ndgrad.tensor(t)
    tw = [ndgrad.tensor(w, requires_grad=True) for w in (w1, w2, w3)]

    eager, whole = step_functions(ndgrad, tx, tt, tw)

    def by_hand():
        """The step as a NumPy user writes it, gradients derived by hand."""
        a1 = mm(x, w1)
        r1 = np.maximum(a1, 0)
        a2 = mm(r1, w2)
        r2 = np.maximum(a2, 0)
        e = mm(r2, w3) - t
        loss = float((e * e).mean())
        ge = e * f32(2.0 / e.size)
        gr2 = mm(ge, w3.T)
        gr2 *= a2 > 0
        gr1 = mm(gr2, w2.T)
        gr1 *= a1 > 0
        return loss, (mm(x.T, gr1), mm(r1.T, gr2), mm(r2.T, ge))

    pa, pb = (rng.standard_normal((2048, 2048)).astype(f32) for _ in range(2))
    steps = [("probe 2048^3", lambda: mm(pa, pb)), ("NumPy step by hand", by_hand),
             ("eager step", eager)]
    for backend in ("numpy", "numba") if numba_kernels is not None else ("numpy",):
        f = ndgrad.compile(whole, backend=backend)
        f(tx, tt, *tw)
        steps.append((f"compiled step ({backend})", lambda f=f: f(tx, tt, *tw)))
    if args.steps_only:
        gemms, others = [], []
    cells = [(n, fn) for n, f0, f1 in gemms for fn in (f0, f1)] + others + steps
    times: list = [[] for _ in cells]
    for _ in range(2):
        for _, fn in cells:
            fn()
    for i in range(args.repeat):
        order = range(len(cells)) if i % 2 == 0 else reversed(range(len(cells)))
        for k in order:
            t0 = clock()
            cells[k][1]()
            times[k].append((clock() - t0) * 1e3)
    stat = [(min(v), sorted(v)[len(v) // 2]) for v in times]
    kind = "CPU" if args.cpu else "wall"
    print(f"mlp_large budget: {args.threads} thread(s), {kind} time, ms (min / median of "
          f"{args.repeat}); load average {os.getloadavg()[0]:.1f}")
    default = best = 0.0
    for j, (name, _, _) in enumerate(gemms):
        s0, s1 = stat[2 * j], stat[2 * j + 1]
        default += s0[0]
        best += min(s0[0], s1[0])
        print(f"  {name:26s} default {s0[0]:7.2f} / {s0[1]:7.2f}   transposed "
              f"{s1[0]:7.2f} / {s1[1]:7.2f}")
    if gemms:
        print(f"  GEMM sum (minima): default orientation {default:.1f}, best orientation "
              f"{best:.1f}")
    else:
        best = float("nan")
    k0 = 2 * len(gemms)
    rest = 0.0
    for j, (name, _) in enumerate(others):
        if "numba" not in name:
            rest += stat[k0 + j][0] * (2 if "(x2)" in name else 1)
        print(f"  {name:26s} {stat[k0 + j][0]:7.2f} / {stat[k0 + j][1]:7.2f}")
    if others:
        print(f"  non-GEMM NumPy work (minima, relu x2): {rest:.1f}")
    probe = stat[k0 + len(others)][1] * 1e-3
    ceiling = 23.62e9 / (2 * 2048 ** 3 / probe) * 1e3
    print(f"  GEMM ceiling (23.62 GFLOP at the probe's median rate): {ceiling:.2f}")
    for j, (name, _) in enumerate(steps[1:], 1):
        s = stat[k0 + len(others) + j]
        vs_best = "" if best != best else f"min / best GEMM sum {s[0] / best:.3f}; "
        print(f"  {name:26s} {s[0]:7.2f} / {s[1]:7.2f}   ({vs_best}median / ceiling "
              f"{s[1] / ceiling:.3f})")


if __name__ == "__main__":
    main()
