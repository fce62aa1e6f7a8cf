"""ndgrad.func against torch.func on the same workloads, in one run (ratios = ndgrad / torch).

* ``grad``: the gradient of sum(tanh(W @ x)) + 0.1 * sum(x^4), x in R^64;
* ``jacrev`` / ``jacfwd``: the 64x64 Jacobian of tanh(W @ x) (one batched backward pass /
  one forward pass with batched tangents);
* ``hessian``: the 64x64 Hessian of the first function (jacfwd over jacrev);
* ``vmap(grad)``: per-example gradients of a linear model's squared loss over 64 examples
  (one batched call, Note [Vectorized vmap]; bench/vmap.py has the MLP);
* ``vmap(vjp_fn)``: 64 vector-Jacobian products (one batched backward pass).

Times are best-of-N wall clock in ms, float64, one torch thread, the machine shared with
other jobs.
Run: ``python bench/bench_func.py`` (needs torch).
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.func as tf

import ndgrad
import ndgrad.func as nf

N = 64
torch.set_num_threads(1)     # small workloads: threads only add noise on a shared machine


def best_of(fn, repeat: int = 7) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((N, N)) / 8, rng.standard_normal(N)
    xs, ys = rng.standard_normal((N, N)), rng.standard_normal(N)
    nd = {k: ndgrad.tensor(v, dtype=ndgrad.float64) for k, v in
          dict(w=w, x=x, xs=xs, ys=ys).items()}
    th = {k: torch.tensor(v, dtype=torch.float64) for k, v in
          dict(w=w, x=x, xs=xs, ys=ys).items()}

    def workloads(lib, F, t):
        def g(x):
            return (lib.tanh(t["w"] @ x)).sum() + 0.1 * (x ** 4).sum()

        def f(x):
            return lib.tanh(t["w"] @ x)

        def loss(p, xb, yb):
            return ((xb * p).sum() - yb) ** 2
        _, vjp_fn = F.vjp(f, t["x"])
        return {
            "grad": lambda: F.grad(g)(t["x"]),
            "jacrev": lambda: F.jacrev(f)(t["x"]),
            "jacfwd": lambda: F.jacfwd(f)(t["x"]),
            "hessian": lambda: F.hessian(g)(t["x"]),
            "vmap(grad)": lambda: F.vmap(F.grad(loss), in_dims=(None, 0, 0))(
                t["x"], t["xs"], t["ys"]),
            "vmap(vjp_fn)": lambda: F.vmap(vjp_fn)(t["xs"]),
        }

    a, b = workloads(ndgrad, nf, nd), workloads(torch, tf, th)
    print(f"{'workload':14s} {'ndgrad ms':>10s} {'torch ms':>10s} {'ratio':>7s}")
    for name in a:
        ra, rb = a[name](), b[name]()
        ra = ra[0] if isinstance(ra, tuple) else ra
        rb = rb[0] if isinstance(rb, tuple) else rb
        assert np.allclose(ra.numpy(), rb.numpy(), rtol=1e-8, atol=1e-10), name
        ta, tb = best_of(a[name]), best_of(b[name])
        print(f"{name:14s} {ta:10.3f} {tb:10.3f} {ta / tb:7.2f}")


if __name__ == "__main__":
    main()
