"""LeNet-5 training step (batch 64, 1x28x28, float32): ndgrad against torch, same weights.

    PYTHONPATH=. python bench/lenet_step.py [--profile]

One step = forward, cross-entropy loss, backward, plain SGD update. Prints the median times
and the ratio ndgrad/torch; ``--profile`` prints ndgrad's cProfile top entries.
"""

import sys
import time

import numpy as np
import torch

import ndgrad
import ndgrad.nn as nn
import ndgrad.nn.functional as F
from nn_steps import _lenet  # bench/ is the script's directory: the same LeNet-5

torch.set_num_threads(2)


def step_fn(model, Fm, x, y, lr=0.01):
    def step():
        for p in model.parameters():
            p.grad = None
        loss = Fm.cross_entropy(model(x), y)
        loss.backward()
        with (torch.no_grad() if Fm is torch.nn.functional else ndgrad.no_grad()):
            for p in model.parameters():
                p -= lr * p.grad
        return loss.item()
    return step


def timeit(f, budget=2.0):
    for _ in range(3):
        f()
    ts = []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < budget or len(ts) < 10:
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), float(np.min(ts))


def main():
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    yb = rng.integers(0, 10, 64)
    tm = _lenet(torch.nn, torch.nn.functional)
    nm = _lenet(nn, F)
    nm.load_state_dict({k: ndgrad.tensor(v.numpy().copy()) for k, v in tm.state_dict().items()})
    ts = step_fn(tm, torch.nn.functional, torch.tensor(xb), torch.tensor(yb))
    ns = step_fn(nm, F, ndgrad.tensor(xb), ndgrad.tensor(yb))
    a, b = ts(), ns()
    print(f"first-step loss torch {a:.6f} ndgrad {b:.6f}")
    if "--profile" in sys.argv:
        import cProfile
        import pstats
        for _ in range(3):
            ns()
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(20):
            ns()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)
        return
    tt, nt = timeit(ts), timeit(ns)
    print(f"torch  {tt[0] * 1e3:.2f} ms median ({tt[1] * 1e3:.2f} min)")
    print(f"ndgrad {nt[0] * 1e3:.2f} ms median ({nt[1] * 1e3:.2f} min)")
    print(f"ratio ndgrad/torch: {nt[0] / tt[0]:.2f} (median), {nt[1] / tt[1]:.2f} (min)")


if __name__ == "__main__":
    main()
