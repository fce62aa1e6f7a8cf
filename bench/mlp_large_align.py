"""Interleaved A/B of Note [Aligned arrays] (ndgrad/_aligned.py) on the shared bench's mlp_large
step: every round runs each configuration once, with large arrays ndgrad makes aligned ("on")
or from plain ``np.empty`` ("off": malloc's arbitrary 16-byte offsets), in one process.

    python bench/mlp_large_align.py [--threads 2] [--repeat 20] [--modes eager,numpy,numba]

Run it with ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`` to match the shared harness.
Per configuration: wall time and this thread's CPU time (ms, median and minimum), and the
step's wall median over the GEMM ceiling (23.62 GFLOP at the median rate of a float32 2048^3
product measured here before the rounds, as the harness does). With ``--threads 1`` CPU time
is the figure least disturbed by other processes; the load average is printed at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

FLOPS = 23.62e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--modes", default="eager,numpy,numba")
    args = ap.parse_args()
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[k] = str(args.threads)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import numpy as np

    import ndgrad
    from ndgrad import _aligned

    aligned_empty = _aligned.empty

    def plain_empty(shape, dtype):
        return np.empty(shape, dtype)

    def use(on: bool) -> None:
        _aligned.empty = aligned_empty if on else plain_empty   # every caller looks it up

    rng = np.random.default_rng(0)
    f32 = np.float32
    widths = (1024, 2048, 2048, 1024)
    raw = [rng.standard_normal((512, widths[0]), dtype=f32),
           rng.standard_normal((512, widths[-1]), dtype=f32)]
    raw += [rng.standard_normal((a, b), dtype=f32) * f32((2.0 / a) ** 0.5)
            for a, b in zip(widths[:-1], widths[1:])]

    def inputs(on: bool) -> list:
        use(on)
        return [ndgrad.tensor(a, requires_grad=i >= 2) for i, a in enumerate(raw)]

    def f(x, t, w1, w2, w3):
        h = ndgrad.relu(x @ w1)
        h = ndgrad.relu(h @ w2)
        d = h @ w3 - t
        return (d * d).mean()

    def eager(*a):
        for w in a[2:]:
            w.grad = None
        out = f(*a)
        out.backward()
        return out

    def whole(*a):
        out = f(*a)
        return out.detach(), tuple(ndgrad.autograd.grad(out, list(a[2:])))

    from ndgrad.jit import numba_backend
    configs = []
    for mode in args.modes.split(","):
        if mode == "numba" and not numba_backend.available():
            print("numba: not installed, skipped")
            continue
        for on in (False, True):
            xs = inputs(on)
            if mode == "eager":
                fn = eager
            else:
                os.environ["NDGRAD_COMPILE_BACKEND"] = mode
                fn = ndgrad.compile(whole)
                fn(*xs)                      # generated now, with this setting's allocator
            configs.append((f"{mode:6s} {'on' if on else 'off'}", on, fn, xs))
    os.environ.pop("NDGRAD_COMPILE_BACKEND", None)
    print("input addresses mod 64:", {name: [x.detach().numpy().ctypes.data % 64 for x in xs]
                                      for name, _, _, xs in configs if "eager" in name})

    a = np.ones((2048, 2048), f32)
    b = np.ones((2048, 2048), f32)
    probe = []
    for _ in range(7):
        t0 = time.perf_counter()
        a @ b
        probe.append(2 * 2048 ** 3 / (time.perf_counter() - t0))
    rate = statistics.median(probe)
    ceiling = FLOPS / rate * 1e3

    wall: dict = {c[0]: [] for c in configs}
    cpu: dict = {c[0]: [] for c in configs}
    for r in range(args.repeat + 2):
        for name, on, fn, xs in configs:
            use(on)
            w0, c0 = time.perf_counter(), time.thread_time()
            fn(*xs)
            w1, c1 = time.perf_counter(), time.thread_time()
            if r >= 2:
                wall[name].append((w1 - w0) * 1e3)
                cpu[name].append((c1 - c0) * 1e3)
    use(True)
    print(f"probe {rate / 1e9:.0f} GFLOP/s (median of 7), ceiling {ceiling:.1f} ms; "
          f"{args.threads} thread(s), {args.repeat} rounds")
    print(f"{'config':12s} {'wall med':>9s} {'wall min':>9s} {'cpu med':>9s} {'cpu min':>9s} "
          f"{'ratio':>6s}")
    for name in wall:
        wm = statistics.median(wall[name])
        print(f"{name:12s} {wm:9.2f} {min(wall[name]):9.2f} {statistics.median(cpu[name]):9.2f} "
              f"{min(cpu[name]):9.2f} {wm / ceiling:6.3f}")
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
