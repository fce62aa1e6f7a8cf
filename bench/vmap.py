"""Vectorized ``ndgrad.func.vmap`` against ``torch.func.vmap``, in one run, the two libraries
interleaved (ratios = ndgrad / torch; Note [Vectorized vmap] in ndgrad/func/_vmap.py):

* ``per-example grads``: ``vmap(grad(loss), in_dims=(None, 0, 0))`` with ``functional_call`` of
  a 784-128-10 MLP (ReLU, cross-entropy), batch 64, float32 (the torch.func tutorial);
* ``per-example grads (MSE)``: the same with a squared-error loss;
* ``elementwise+matmul``: ``vmap(lambda x: (x @ W).tanh() * x.sum() + 1)`` over 256 rows of
  128, W 128x64, float64;
* ``nested vmap``: ``vmap(vmap(lambda r: (r @ W).tanh() * r.sum()))`` over 16 x 32 rows of
  128, W 128x64, float64 (both levels vectorized: Note [Nested vmap levels]);
* ``vmap(jacfwd)``: per-row Jacobians of ``lambda r: (r @ V).tanh() * r[:1]`` for 64 rows of 16,
  V 16x16, float64 (all columns in one call at a nested level);
* ``vmap(hessian)``: per-row Hessians of ``lambda r: ((r @ V).tanh() ** 2).sum()``, same sizes.

Times are best-of-N wall clock in ms, one thread for torch and for NumPy's BLAS (a threaded
BLAS on this shared 2-core machine is up to 100x slower on small GEMMs); the machine is shared
with other jobs. Run: ``python bench/vmap.py`` (needs torch).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")      # before NumPy loads its BLAS

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.func as tf  # noqa: E402

import ndgrad  # noqa: E402
import ndgrad.func as nf  # noqa: E402
import ndgrad.nn as nn  # noqa: E402
from bench_func import best_of  # noqa: E402  (bench/ is the script's directory)

torch.set_num_threads(1)


def main() -> None:
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                             torch.nn.Linear(128, 10))
    m = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    tp = {k: v.detach() for k, v in tm.named_parameters()}
    p = {k: ndgrad.tensor(v.numpy()) for k, v in tp.items()}
    x = rng.standard_normal((64, 784)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    X, Y, TX, TY = ndgrad.tensor(x), ndgrad.tensor(y), torch.tensor(x), torch.tensor(y)

    def ce(lib, F, mod):
        def loss(params, xb, yb):
            out = F.functional_call(mod, params, (xb[None],))
            return lib.nn.functional.cross_entropy(out, yb[None])
        return loss

    def mse(lib, F, mod):
        def loss(params, xb, yb):
            out = F.functional_call(mod, params, (xb[None],))
            return ((out - yb.to(out.dtype)) ** 2).sum()
        return loss

    w = rng.standard_normal((128, 64)) / 8
    rows = rng.standard_normal((256, 128))
    nw, tw = ndgrad.tensor(w), torch.tensor(w)
    nr, tr = ndgrad.tensor(rows), torch.tensor(rows)
    rows3 = rng.standard_normal((16, 32, 128))
    nr3, tr3 = ndgrad.tensor(rows3), torch.tensor(rows3)
    v = rng.standard_normal((16, 16)) / 4
    small = rng.standard_normal((64, 16))
    nv, tv, ns, ts = ndgrad.tensor(v), torch.tensor(v), ndgrad.tensor(small), torch.tensor(small)

    cases = {
        "per-example grads (CE)": (
            lambda: nf.vmap(nf.grad(ce(ndgrad, nf, m)), in_dims=(None, 0, 0))(p, X, Y),
            lambda: tf.vmap(tf.grad(ce(torch, tf, tm)), in_dims=(None, 0, 0))(tp, TX, TY)),
        "per-example grads (MSE)": (
            lambda: nf.vmap(nf.grad(mse(ndgrad, nf, m)), in_dims=(None, 0, 0))(p, X, Y),
            lambda: tf.vmap(tf.grad(mse(torch, tf, tm)), in_dims=(None, 0, 0))(tp, TX, TY)),
        "elementwise+matmul": (
            lambda: nf.vmap(lambda r: (r @ nw).tanh() * r.sum() + 1)(nr),
            lambda: tf.vmap(lambda r: (r @ tw).tanh() * r.sum() + 1)(tr)),
        "nested vmap": (
            lambda: nf.vmap(nf.vmap(lambda r: (r @ nw).tanh() * r.sum()))(nr3),
            lambda: tf.vmap(tf.vmap(lambda r: (r @ tw).tanh() * r.sum()))(tr3)),
        "vmap(jacfwd)": (
            lambda: nf.vmap(nf.jacfwd(lambda r: (r @ nv).tanh() * r[:1]))(ns),
            lambda: tf.vmap(tf.jacfwd(lambda r: (r @ tv).tanh() * r[:1]))(ts)),
        "vmap(hessian)": (
            lambda: nf.vmap(nf.hessian(lambda r: ((r @ nv).tanh() ** 2).sum()))(ns),
            lambda: tf.vmap(tf.hessian(lambda r: ((r @ tv).tanh() ** 2).sum()))(ts)),
    }
    a = nf.vmap(nf.grad(ce(ndgrad, nf, m)), in_dims=(None, 0, 0))(p, X, Y)
    b = tf.vmap(tf.grad(ce(torch, tf, tm)), in_dims=(None, 0, 0))(tp, TX, TY)
    err = max(float(np.abs(a[k].numpy() - b[k].numpy()).max()) for k in b)
    print(f"per-example gradients: max |ndgrad - torch| = {err:.2e}")
    print(f"{'workload':38s} {'ndgrad ms':>10s} {'torch ms':>10s} {'ratio':>7s}")
    for name, (fn_nd, fn_t) in cases.items():
        tn, tt = [], []
        for _ in range(4):                      # interleaved rounds
            tn.append(best_of(fn_nd, 3))
            tt.append(best_of(fn_t, 3))
        n, t = min(tn), min(tt)
        print(f"{name:38s} {n:10.2f} {t:10.2f} {n / t:7.2f}")


if __name__ == "__main__":
    main()
