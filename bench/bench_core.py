"""ndgrad vs PyTorch (CPU), side by side in one run, as ratios (ndgrad time / PyTorch time).

(a) a 200-op elementwise chain on a (16,) float32 tensor, forward + backward, µs per op;
(b) one training step of an MLP 64-128-128-10, batch 32, tanh, MSE loss, SGD;
(c) one training step of an MLP 1024-2048-2048-1024, batch 512, relu, MSE loss, SGD, with the
    achieved GFLOP/s and the raw NumPy matmul GFLOP/s of the same products as the ceiling.

Run: ``python bench/bench_core.py`` (needs torch). Timings are best-of-N wall clock.
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch

import ndgrad

THREADS = os.cpu_count() or 1
torch.set_num_threads(THREADS)


def best_of(fn, repeat: int, number: int = 1) -> float:
    """Best (minimum) seconds per call over ``repeat`` rounds of ``number`` calls."""
    fn()  # warm up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def interleaved(fn_nd, fn_th, repeat: int, number: int = 1, blocks: int = 3) -> tuple:
    """Best seconds per call of each, measured in alternating blocks of ``repeat`` rounds so
    that load changes on the machine affect both sides alike. (Alternating every call instead
    makes each library's idle worker threads spin while the other one runs.)"""
    best = [float("inf"), float("inf")]
    for _ in range(blocks):
        for k, fn in enumerate((fn_nd, fn_th)):
            best[k] = min(best[k], best_of(fn, repeat=repeat, number=number))
    return best[0], best[1]


# ---------------------------------------------------------------------------- (a)
def chain(x):
    y = x
    for _ in range(50):
        y = y * 1.01
        y = y + 0.1
        y = y.tanh()
        y = y - 0.05
    return y.sum()


def chain_step(m):
    x = m.ones(16, requires_grad=True)

    def step():
        x.grad = None
        chain(x).backward()
    return step


# ---------------------------------------------------------------------------- MLPs
def make_mlp(m, sizes, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        b = np.zeros(fan_out, dtype=np.float32)
        params.append(m.tensor(w, requires_grad=True))
        params.append(m.tensor(b, requires_grad=True))
    return params


def mlp_step(m, params, x, y, act: str, lr: float = 1e-3):
    h = x
    n = len(params) // 2
    for i in range(n):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < n - 1:
            h = h.tanh() if act == "tanh" else h.relu()
    loss = ((h - y) ** 2).mean()
    loss.backward()
    with m.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None
    return loss


def mlp_step_fn(m, sizes, batch, act):
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    ys = rng.standard_normal((batch, sizes[-1])).astype(np.float32)
    params = make_mlp(m, sizes)
    x, y = m.tensor(xs), m.tensor(ys)
    return lambda: mlp_step(m, params, x, y, act)


def mlp_flops(sizes, batch) -> float:
    # forward x@W plus backward dX = dH@W.T and dW = X.T@dH: 3 matmuls per layer (2*m*n*k each)
    return sum(3 * 2 * batch * a * b for a, b in zip(sizes[:-1], sizes[1:]))


def numpy_matmul_ceiling(sizes, batch, repeat=5) -> float:
    """Seconds for the raw NumPy matmuls one training step needs (the BLAS ceiling)."""
    rng = np.random.default_rng(2)
    mats = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        x = rng.standard_normal((batch, a)).astype(np.float32)
        w = rng.standard_normal((a, b)).astype(np.float32)
        g = rng.standard_normal((batch, b)).astype(np.float32)
        mats.append((x, w, g))

    def run():
        for x, w, g in mats:
            x @ w
            g @ w.T
            x.T @ g
    return best_of(run, repeat=repeat)


def main() -> None:
    print(f"ndgrad {ndgrad.__version__} | torch {torch.__version__} | numpy {np.__version__} | "
          f"threads: torch {torch.get_num_threads()}, cores {THREADS}")
    rows = []
    a_nd, a_th = interleaved(chain_step(ndgrad), chain_step(torch), repeat=15, number=3)
    a_nd, a_th = a_nd / 200 * 1e6, a_th / 200 * 1e6  # µs per op
    rows.append(("(a) 200-op chain, µs/op (fwd+bwd)", a_nd, a_th))
    small = [64, 128, 128, 10]
    b_nd, b_th = interleaved(mlp_step_fn(ndgrad, small, 32, "tanh"),
                             mlp_step_fn(torch, small, 32, "tanh"), repeat=100)
    b_nd, b_th = b_nd * 1e6, b_th * 1e6
    rows.append(("(b) MLP 64-128-128-10 b32 step, µs", b_nd, b_th))
    big = [1024, 2048, 2048, 1024]
    c_nd, c_th = interleaved(mlp_step_fn(ndgrad, big, 512, "relu"),
                             mlp_step_fn(torch, big, 512, "relu"), repeat=3)
    rows.append(("(c) MLP 1024-2048-2048-1024 b512 step, ms", c_nd * 1e3, c_th * 1e3))
    print(f"{'benchmark':44s} {'ndgrad':>10s} {'torch':>10s} {'ratio':>7s}")
    for name, nd_v, th_v in rows:
        print(f"{name:44s} {nd_v:10.2f} {th_v:10.2f} {nd_v / th_v:7.2f}")
    flops = mlp_flops(big, 512)
    ceil = numpy_matmul_ceiling(big, 512)
    print(f"(c) GFLOP/s: ndgrad {flops / c_nd / 1e9:.1f}, torch {flops / c_th / 1e9:.1f}, "
          f"raw NumPy matmul ceiling {flops / ceil / 1e9:.1f}")


if __name__ == "__main__":
    main()
