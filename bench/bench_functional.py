"""Jacobians and Hessians: ndgrad's vectorized batched backward vs its row loop vs PyTorch.

(J) the 256x256 Jacobian of f(x) = tanh(W2 @ tanh(W1 @ x)), x in R^256;
(H) the 64x64 Hessian of g(x) = sum(tanh(W @ x)) + 0.1 * sum(x^4), x in R^64;

each with ``vectorize=True`` (one backward pass carrying a batch dimension, see Note [Batched
backward] in ndgrad/autograd/batching.py) and ``vectorize=False`` (one backward per row), for
ndgrad and ``torch.autograd.functional``, in one run; then ``strategy="forward-mode"`` (one
forward pass with batched tangents, Note [Batched tangents] in ndgrad/autograd/forward_ad.py;
for the Hessian: forward-over-reverse), vectorized. Times are best-of-N wall clock, ms;
ratios are ndgrad / torch (same mode) and loop / vectorized (same library).

Run: ``python bench/bench_functional.py`` (needs torch).
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch

import ndgrad
from ndgrad.autograd import functional as nd_functional

torch.set_num_threads(os.cpu_count() or 1)
DTYPE = "float32"


def best_of(fn, repeat: int) -> float:
    fn()  # warm up
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def interleaved(fns: list, repeat: int, blocks: int = 3) -> list:
    """Best seconds per call of each function, measured in alternating blocks."""
    best = [float("inf")] * len(fns)
    for _ in range(blocks):
        for k, fn in enumerate(fns):
            best[k] = min(best[k], best_of(fn, repeat))
    return best


def _module(m):
    return nd_functional if m is ndgrad else torch.autograd.functional


def jacobian_case(m, vectorize: bool, strategy: str = "reverse-mode"):
    rng = np.random.default_rng(0)
    n = 256
    w1 = m.tensor(rng.standard_normal((n, n)) / np.sqrt(n), dtype=getattr(m, DTYPE))
    w2 = m.tensor(rng.standard_normal((n, n)) / np.sqrt(n), dtype=getattr(m, DTYPE))
    x = m.tensor(rng.standard_normal(n), dtype=getattr(m, DTYPE))

    def f(v):
        return (w2 @ (w1 @ v).tanh()).tanh()
    fm = _module(m)
    return lambda: fm.jacobian(f, x, vectorize=vectorize, strategy=strategy)


def hessian_case(m, vectorize: bool, strategy: str = "reverse-mode"):
    rng = np.random.default_rng(1)
    n = 64
    w = m.tensor(rng.standard_normal((n, n)) / np.sqrt(n), dtype=getattr(m, DTYPE))
    x = m.tensor(rng.standard_normal(n), dtype=getattr(m, DTYPE))

    def g(v):
        return (w @ v).tanh().sum() + 0.1 * (v ** 4).sum()
    fm = _module(m)
    return lambda: fm.hessian(g, x, vectorize=vectorize, outer_jacobian_strategy=strategy)


def check_same(case, strategy: str = "reverse-mode") -> float:
    """Max abs difference between ndgrad (vectorized, ``strategy``) and torch (loop)."""
    a = case(ndgrad, True, strategy)().numpy()
    b = case(torch, False)().detach().numpy()
    return float(np.max(np.abs(a - b)))


def main() -> None:
    print(f"ndgrad {ndgrad.__version__} | torch {torch.__version__} | numpy {np.__version__} | "
          f"{DTYPE} | threads: torch {torch.get_num_threads()}")
    print(f"{'':34s} {'nd vec':>9s} {'nd loop':>9s} {'th vec':>9s} {'th loop':>9s} "
          f"{'vec nd/th':>10s} {'loop nd/th':>11s} {'nd loop/vec':>12s}")
    for name, case, repeat in (("(J) jacobian 256 -> 256, ms", jacobian_case, 5),
                               ("(H) hessian of R^64 -> R, ms", hessian_case, 5)):
        fns = [case(ndgrad, True), case(ndgrad, False), case(torch, True), case(torch, False)]
        nd_vec, nd_loop, th_vec, th_loop = (t * 1e3 for t in interleaved(fns, repeat))
        print(f"{name:34s} {nd_vec:9.2f} {nd_loop:9.2f} {th_vec:9.2f} {th_loop:9.2f} "
              f"{nd_vec / th_vec:10.2f} {nd_loop / th_loop:11.2f} {nd_loop / nd_vec:12.1f}")
        print(f"{'':34s} max |ndgrad - torch| = {check_same(case):.2e}")
        fns = [case(ndgrad, True, "forward-mode"), case(torch, True, "forward-mode")]
        nd_fw, th_fw = (t * 1e3 for t in interleaved(fns, repeat))
        print(f"{'  forward-mode (vectorize=True), ms':34s} {nd_fw:9.2f} {'':9s} {th_fw:9.2f} "
              f"{'':9s} {nd_fw / th_fw:10.2f}")
        print(f"{'':34s} max |ndgrad fw - torch| = "
              f"{check_same(case, 'forward-mode'):.2e}")


if __name__ == "__main__":
    main()
