"""Peak memory of a 20-layer MLP training step, with and without activation checkpointing.

Peak memory is measured with ``tracemalloc`` (NumPy reports its array allocations to it) over
one forward+backward step, for ndgrad's ``checkpoint_sequential`` in both variants against no
checkpointing; the step time is measured separately. (tracemalloc does not see PyTorch's CPU
allocator, so only ndgrad is shown.)

Run: ``python bench/bench_checkpoint.py``.
"""

from __future__ import annotations

import time
import tracemalloc
import warnings

import numpy as np

import ndgrad
from ndgrad.utils.checkpoint import checkpoint_sequential

LAYERS, WIDTH, BATCH, SEGMENTS = 20, 512, 256, 5


def make_layers():
    rng = np.random.default_rng(0)
    layers = []
    for _ in range(LAYERS):
        w = ndgrad.tensor((rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(
            np.float32), requires_grad=True)
        b = ndgrad.zeros(WIDTH, requires_grad=True)
        layers.append(lambda h, w=w, b=b: (h @ w + b).tanh())
    return layers


def step(layers, x, mode):
    if mode == "none":
        h = x
        for f in layers:
            h = f(h)
    else:
        h = checkpoint_sequential(layers, SEGMENTS, x, use_reentrant=(mode == "reentrant"))
    (h * h).mean().backward()


def measure(mode):
    layers = make_layers()
    x = ndgrad.randn(BATCH, WIDTH, requires_grad=True)
    step(layers, x, mode)            # warm up (allocations of .grad)
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    step(layers, x, mode)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    times = []
    for _ in range(3):               # timed without tracemalloc, which slows allocation
        t0 = time.perf_counter()
        step(layers, x, mode)
        times.append(time.perf_counter() - t0)
    return peak / 2 ** 20, min(times) * 1e3


def main() -> None:
    warnings.simplefilter("ignore")
    print(f"MLP {LAYERS} layers x {WIDTH}, batch {BATCH}, tanh; checkpoint_sequential with "
          f"{SEGMENTS} segments")
    print(f"{'variant':28s} {'peak MiB':>10s} {'step ms':>9s} {'memory ratio':>13s}")
    ref = None
    for mode in ("none", "reentrant", "non-reentrant"):
        peak, ms = measure(mode)
        ref = ref or peak
        print(f"{mode:28s} {peak:10.1f} {ms:9.1f} {peak / ref:13.2f}")


if __name__ == "__main__":
    main()
