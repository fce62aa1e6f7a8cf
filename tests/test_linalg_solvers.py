"""The linear algebra products and solvers against PyTorch where tests/op_db.py's generic
comparisons do not apply (PyTorch saves LU factors ndgrad does not compute; its second-order
forward AD of det/slogdet/solve is wrong, so ndgrad is checked against finite differences
there), plus einsum's forms, LinAlgError and complex gradients."""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
import torch

import ndgrad
import ndgrad.autograd.forward_ad as nfw

warnings.filterwarnings("ignore", category=UserWarning)


def _spd(m, x):
    return x @ x.mT + m.eye(x.shape[-1], dtype=x.dtype)


def _wc(m, x):        # well conditioned
    return x + 4 * m.eye(x.shape[-1], dtype=x.dtype)


def _lu(m, x):
    return m.linalg.lu_factor(_wc(m, x))


CASES = {
    "det": (lambda m, x: m.linalg.det(x), [(3, 3)]),
    "det_batched": (lambda m, x: m.det(x), [(2, 2, 2)]),
    "slogdet": (lambda m, x: m.linalg.slogdet(x)[1], [(3, 3)]),
    "logdet": (lambda m, x: m.logdet(_spd(m, x)), [(3, 3)]),
    "solve_vector": (lambda m, a, b: m.linalg.solve(_wc(m, a), b), [(3, 3), (3,)]),
    "solve_batched": (lambda m, a, b: m.linalg.solve(_wc(m, a), b), [(2, 2, 2), (2, 1)]),
    "solve_right": (lambda m, a, b: m.linalg.solve(_wc(m, a), b, left=False), [(3, 3), (2, 3)]),
    "triangular_solve": (lambda m, b, a: m.triangular_solve(b, _wc(m, a), transpose=True)[0],
                         [(3, 2), (3, 3)]),
    "cholesky_solve": (lambda m, b, x: m.cholesky_solve(b, _wc(m, x.tril())), [(3, 2), (3, 3)]),
    "cholesky_inverse": (lambda m, x: m.cholesky_inverse(_wc(m, x.triu()), upper=True),
                         [(3, 3)]),
    "lu_factor": (lambda m, x: m.linalg.lu_factor(x)[0], [(3, 3)]),
    "lu_factor_wide": (lambda m, x: m.linalg.lu_factor(x)[0], [(2, 3)]),
    "lu_tall": (lambda m, x: m.linalg.lu(x)[1:], [(3, 2)]),
    "lu_solve": (lambda m, x, b: m.linalg.lu_solve(*_lu(m, x), b, adjoint=True),
                 [(3, 3), (3, 2)]),
    "lu_unpack": (lambda m, x: m.lu_unpack(*m.linalg.lu_factor(x))[1:], [(2, 3)]),
    "tensorsolve": (lambda m, a, b: m.linalg.tensorsolve(_wc(m, a.reshape(2, 2)).reshape(2, 1, 2),
                                                          b), [(2, 1, 2), (2,)]),
    "vander": (lambda m, x: m.linalg.vander(x, N=3), [(2, 3)]),
    "einsum_matmul": (lambda m, a, b: m.einsum("ij,jk->ik", a, b), [(2, 3), (3, 2)]),
    "einsum_implicit_trace": (lambda m, a: m.einsum("ii", a), [(3, 3)]),
    "einsum_diag_out": (lambda m, a: m.einsum("ii->i", a), [(3, 3)]),
    "einsum_ellipsis": (lambda m, a, b: m.einsum("...ij,...jk", a, b), [(2, 2, 3), (3, 1)]),
    "einsum_sublist": (lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2], [0, 2]),
                       [(2, 3), (3, 2)]),
    "einsum_list": (lambda m, a, b, c: m.einsum("i,j,k->ijk", [a, b, c]), [(2,), (3,), (2,)]),
    "einsum_sum_only": (lambda m, a, b: m.einsum("ij,k->i", a, b), [(2, 3), (2,)]),
}


def _arrays(name, shapes):
    rng = np.random.default_rng(zlib.crc32(name.encode()))   # the same in every process
    return [rng.uniform(-1, 1, s) for s in shapes]


def _outs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _run(m, name, arrays, dtype="float64"):
    fn, _ = CASES[name]
    xs = [m.tensor(a, dtype=getattr(m, dtype), requires_grad=True) for a in arrays]
    return xs, _outs(fn(m, *xs))


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_vjp_gradgrad_and_node_match_torch(name):
    arrays = _arrays(name, CASES[name][1])
    rng = np.random.default_rng(0)
    res = {}
    for m in (ndgrad, torch):
        xs, outs = _run(m, name, arrays)
        gs = [m.tensor(rng.standard_normal(tuple(o.shape)), dtype=m.float64) for o in outs]
        rng = np.random.default_rng(0)
        grads = m.autograd.grad(outs, xs, gs, create_graph=True, allow_unused=True)
        first = [g for g in grads if g is not None]
        s = sum((g * g).sum() for g in first)
        gg = m.autograd.grad(s, xs, allow_unused=True) if s.requires_grad else [None] * len(xs)
        res[m] = ([o.detach().numpy() for o in outs], [g.detach().numpy() for g in first],
                  [None if g is None else g.numpy() for g in gg],
                  [type(o.grad_fn).__name__ for o in outs])
    n, t = res[ndgrad], res[torch]
    for a, b in zip(n[0] + n[1], t[0] + t[1]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    for a, b in zip(n[2], t[2]):
        if a is not None and b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-8)
    if not name.startswith("einsum"):      # PyTorch records einsum's decomposition
        assert n[3] == t[3]


# PyTorch's tangent of triangular_solve takes A's whole tangent, untransposed (ndgrad does as
# PyTorch), which differs from the derivative of the function.
@pytest.mark.parametrize("name", sorted(set(CASES) - {"triangular_solve"}))
def test_jvp_matches_finite_differences(name):
    fn, shapes = CASES[name]
    arrays = _arrays(name, shapes)
    rng = np.random.default_rng(1)
    ts = [rng.standard_normal(a.shape) for a in arrays]
    with nfw.dual_level():
        xs = [nfw.make_dual(ndgrad.tensor(a), ndgrad.tensor(t)) for a, t in zip(arrays, ts)]
        outs = _outs(fn(ndgrad, *xs))
        got = [nfw.unpack_dual(o).tangent.numpy() for o in outs]
    eps = 1e-6

    def f(sign):
        return [o.numpy() for o in _outs(fn(ndgrad, *[ndgrad.tensor(a + sign * eps * t)
                                                      for a, t in zip(arrays, ts)]))]
    want = [(p - q) / (2 * eps) for p, q in zip(f(1), f(-1))]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["det", "det_batched", "slogdet", "solve_vector",
                                  "solve_batched", "solve_right"])
def test_second_order_forward_matches_finite_differences(name):
    fn, shapes = CASES[name]
    arrays = _arrays(name, shapes)
    rng = np.random.default_rng(2)
    us = [rng.standard_normal(a.shape) for a in arrays]
    vs = [rng.standard_normal(a.shape) for a in arrays]
    N = ndgrad.tensor
    with nfw.dual_level() as outer, nfw.dual_level() as inner:
        xs = [nfw.make_dual(nfw.make_dual(N(a), N(v), level=outer), N(u), level=inner)
              for a, u, v in zip(arrays, us, vs)]
        o = _outs(fn(ndgrad, *xs))[0]
        got = nfw.unpack_dual(nfw.unpack_dual(o, level=inner).tangent, level=outer).tangent
    e = 1e-4

    def f(su, sv):
        xs = [N(a + su * e * u + sv * e * v) for a, u, v in zip(arrays, us, vs)]
        return _outs(fn(ndgrad, *xs))[0].numpy()
    want = (f(1, 1) - f(1, -1) - f(-1, 1) + f(-1, -1)) / (4 * e * e)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["det", "slogdet", "solve_vector", "cholesky_solve",
                                  "lu_solve", "triangular_solve"])
def test_complex_vjp_matches_torch(name):
    fn, shapes = CASES[name]
    rng = np.random.default_rng(3)
    arrays = [rng.uniform(-1, 1, s) + 1j * rng.uniform(-1, 1, s) for s in shapes]
    res = []
    for m in (ndgrad, torch):
        xs = [m.tensor(a, requires_grad=True) for a in arrays]
        outs = _outs(fn(m, *xs))
        r = np.random.default_rng(4)
        gs = [m.tensor(r.standard_normal(tuple(o.shape)) + 1j * r.standard_normal(tuple(o.shape)))
              if o.dtype.is_complex else m.tensor(r.standard_normal(tuple(o.shape)))
              for o in outs]
        res.append([g.detach().numpy() for g in m.autograd.grad(outs, xs, gs)])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("src", [
    "m.linalg.inv(m.zeros(2, 3, 3))",
    "m.linalg.solve(m.zeros(3, 3), m.ones(3))",
    "m.linalg.cholesky(-m.eye(3))",
    "m.linalg.inv_ex(m.zeros(3, 3), check_errors=True)",
])
def test_singular_inputs_raise_linalg_error(src):
    with pytest.raises(torch.linalg.LinAlgError) as te:
        eval(src, {"m": torch})
    with pytest.raises(ndgrad.linalg.LinAlgError) as ne:
        eval(src, {"m": ndgrad})
    assert isinstance(ne.value, RuntimeError)
    assert str(ne.value) == str(te.value)


def test_linalg_error_is_named_as_torch_names_it():
    # scripts log type(e).__name__ / repr(e): torch's class is _LinAlgError; pickling (worker
    # processes send exceptions back) must still find the class
    import pickle
    assert ndgrad.linalg.LinAlgError.__name__ == torch.linalg.LinAlgError.__name__
    e = ndgrad.linalg.LinAlgError("singular")
    assert repr(e) == repr(torch.linalg.LinAlgError("singular"))
    assert type(pickle.loads(pickle.dumps(e))) is ndgrad.linalg.LinAlgError


def test_ex_variants_report_info():
    assert ndgrad.linalg.inv_ex(ndgrad.zeros(2, 2, 2)).info.tolist() == [1, 1]
    assert ndgrad.linalg.cholesky_ex(-ndgrad.eye(2)).info.item() == 1
    assert ndgrad.linalg.solve_ex(ndgrad.eye(2), ndgrad.ones(2)).info.item() == 0


@pytest.mark.parametrize("src", [
    "m.addmm(m.ones(2, 2), m.ones(2, 2, dtype=m.float64), m.ones(2, 2))",
    "m.einsum('ij,jk', m.ones(2, 2), m.ones(3, 2))",
    "m.einsum('ij', m.ones(2))",
    "m.linalg.det(m.ones(2, 3))",
    "m.linalg.inv(m.ones(2, 2, dtype=m.int64))",
    "m.linalg.solve(m.eye(2), m.ones(2, dtype=m.float64))",
])
def test_errors_match_torch(src):
    with pytest.raises(Exception) as te:
        eval(src, {"m": torch})
    with pytest.raises(Exception) as ne:
        eval(src, {"m": ndgrad})
    assert type(ne.value).__name__ == type(te.value).__name__


@pytest.mark.parametrize("args", [((2,), "fro", None), ((), "nuc", None), ((2, 2, 2), "fro", None),
                                  ((2,), "fro", 0), ((2, 2), "fro", 0), ((2, 2), "fro", (0,)),
                                  ((2, 2, 2), "fro", (0, 1, 2)), ((2, 2, 2), "nuc", 1)])
def test_linalg_norm_string_ord_errors_match_torch(args):
    # a string ord is a matrix norm: a vector or a one-dim ``dim`` get matrix_norm's words
    shape, ord, dim = args
    msgs = []
    for m in (torch, ndgrad):
        with pytest.raises(RuntimeError) as e:
            m.linalg.norm(m.ones(shape), ord, dim)
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


def test_small_scipy_lapack_calls_run_on_one_thread(monkeypatch):
    # Note [Single-threaded small SciPy LAPACK calls]: a small triangular solve or LU runs with
    # SciPy's OpenBLAS on one thread, a large one on SciPy's own count, restored after either
    import scipy.linalg

    from ndgrad.ops import _scipy_threads as st
    funcs = st._find()
    count = (lambda: funcs[0]()) if funcs is not None else (lambda: None)
    before = count()
    seen = []
    real_tri, real_getrf = scipy.linalg.solve_triangular, scipy.linalg.get_lapack_funcs

    def tri(*a, **k):
        seen.append(("tri", a[0].shape[-1], count()))
        return real_tri(*a, **k)

    def getrf(names, arrays):
        (f,) = real_getrf(names, arrays)

        def call(*a, **k):
            seen.append((names[0], a[0].shape[-1], count()))
            return f(*a, **k)
        return (call,)

    monkeypatch.setattr(scipy.linalg, "solve_triangular", tri)
    monkeypatch.setattr(scipy.linalg, "get_lapack_funcs", getrf)
    rng = np.random.default_rng(0)
    for n in (2, 130):
        a = np.tril(rng.standard_normal((n, n))) + n * np.eye(n)
        b = rng.standard_normal((n, n))
        for m in (torch, ndgrad):
            A, B = m.tensor(a), m.tensor(b)
            x = m.linalg.solve_triangular(A, B, upper=False)
            y = m.linalg.solve(A, B)
            if m is torch:
                want = (x.numpy(), y.numpy())
        np.testing.assert_allclose(x.numpy(), want[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(y.numpy(), want[1], rtol=1e-12, atol=1e-12)
        assert count() == before
    assert {(name, n) for name, n, _ in seen} >= {("tri", 2), ("tri", 130), ("getrf", 2),
                                                  ("getrf", 130)}
    for name, n, c in seen:
        if funcs is None:
            assert c is None
        elif n == 2:
            assert c == 1, (name, n, c)
        elif name in ("tri", "getrf"):
            assert c == before, (name, n, c)


def test_small_matrix_exp_runs_scipy_on_one_thread(monkeypatch):
    # Note [Single-threaded small SciPy LAPACK calls]: expm's Pade products are SciPy BLAS
    # calls; on a loaded machine a 6x6 one waited ~8 ms for SciPy's thread pool (the orthogonal
    # parametrization calls it every forward and backward). The count is restored after.
    import scipy.linalg

    from ndgrad.ops import _scipy_threads as st
    funcs = st._find()
    count = (lambda: funcs[0]()) if funcs is not None else (lambda: None)
    before = count()
    seen = []
    real = scipy.linalg.expm

    def expm(a, *args, **kw):
        seen.append(count())
        return real(a, *args, **kw)

    monkeypatch.setattr(scipy.linalg, "expm", expm)
    a = np.random.default_rng(1).standard_normal((6, 6)) * 0.3
    x = ndgrad.tensor(a, requires_grad=True)
    y = ndgrad.linalg.matrix_exp(x)
    y.pow(2).sum().backward()
    xt = torch.tensor(a, requires_grad=True)
    yt = torch.linalg.matrix_exp(xt)
    yt.pow(2).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert len(seen) == 2                       # the forward and the backward's block matrix
    assert seen == ([1, 1] if funcs is not None else [None, None])
    assert count() == before
