"""Forward-mode AD (``ndgrad.autograd.forward_ad``) against ``torch.autograd.forward_ad``.

* the API and its errors, run side by side on both libraries (``_both``);
* every op of ``op_db.OPS``: the JVP for random tangents equals PyTorch's (float64) and central
  finite differences, ``gradcheck(..., check_forward_ad=True)`` passes, and forward-over-forward
  (two nested levels, beyond PyTorch) equals ``torch.func.jvp`` of ``torch.func.jvp``;
* seed 001's view and in-place cases, against PyTorch;
* nested levels against analytic derivatives, ``torch.func`` and double backward;
* custom Functions' ``jvp`` and gradcheck's forward-mode check.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

import ndgrad
import ndgrad.autograd.forward_ad as nfw
from ndgrad.autograd.gradcheck import GradcheckError, gradcheck
from ndgrad.ops import REGISTRY
from op_db import OPS, make_inputs

FW = {ndgrad: nfw, torch: tfw}


@pytest.fixture(autouse=True)
def _no_level_leaks():
    yield
    assert nfw._current_level == -1 and not nfw._levels
    assert not ndgrad.ops._dispatch._FW_AD


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy(force=True)
    return t.detach().numpy()


def _norm(x):
    """A comparable form of a scenario's result (tensors become float64 arrays)."""
    if isinstance(x, (torch.Tensor, ndgrad.Tensor)):
        return ("tensor", np.array(_np(x), dtype=np.complex128 if x.is_complex() else
                                   np.float64))
    if isinstance(x, np.ndarray):
        return ("tensor", x)
    if isinstance(x, (tuple, list)):
        return [_norm(v) for v in x]
    return x


def _outcome(fn, m):
    try:
        return ("ok", _norm(fn(m, FW[m])))
    except Exception as e:  # noqa: BLE001  (the exception itself is what is compared)
        return ("error", type(e).__name__, str(e).replace("torch", "ndgrad"))


def _assert_same(got, want, path="result"):
    if isinstance(want, tuple) and want and want[0] == "tensor":
        assert isinstance(got, tuple) and got[0] == "tensor", f"{path}: {got!r} vs {want!r}"
        assert got[1].shape == want[1].shape, f"{path}: shape {got[1].shape} vs {want[1].shape}"
        np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-10, err_msg=path)
    elif isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), f"{path}: {got!r}"
        for k, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, f"{path}[{k}]")
    else:
        assert got == want, f"{path}: {got!r} vs {want!r}"


def _both(fn):
    """Run ``fn(m, fw)`` with ndgrad and with torch; results (or errors) must agree."""
    want = _outcome(fn, torch)
    got = _outcome(fn, ndgrad)
    _assert_same(got, want)
    return got


def _rand(m, *shape, seed=0, dtype="float64"):
    a = np.random.default_rng(seed).standard_normal(shape)
    return m.tensor(a, dtype=getattr(m, dtype))


# ---------------------------------------------------------------------------- API and errors
def test_make_dual_outside_a_level():
    out = _both(lambda m, fw: fw.make_dual(_rand(m, 3), _rand(m, 3)))
    assert out[0] == "error" and "no level exists" in out[2]


def _in_level(body):
    def fn(m, fw):
        with fw.dual_level():
            return body(m, fw)
    return fn


ERRORS = {
    "tangent_of_another_size": lambda m, fw: fw.make_dual(_rand(m, 3), _rand(m, 4)),
    "tangent_of_another_shape": lambda m, fw: fw.make_dual(_rand(m, 3), _rand(m, 3, 1)),
    "tangent_0d_for_1d": lambda m, fw: fw.make_dual(_rand(m, 1), _rand(m)),
    "integer_tangent": lambda m, fw: fw.make_dual(_rand(m, 3), m.ones(3, dtype=m.int64)),
    "integer_primal": lambda m, fw: fw.make_dual(m.ones(3, dtype=m.int64), _rand(m, 3)),
    "tangent_set_twice": lambda m, fw: fw.make_dual(fw.make_dual(_rand(m, 3), _rand(m, 3)),
                                                    _rand(m, 3)),
    "dual_tangent": lambda m, fw: fw.make_dual(_rand(m, 3), fw.make_dual(_rand(m, 3),
                                                                       _rand(m, 3))),
    "make_dual_invalid_level": lambda m, fw: fw.make_dual(_rand(m, 3), _rand(m, 3), level=3),
    "unpack_invalid_level": lambda m, fw: fw.unpack_dual(fw.make_dual(_rand(m, 3), _rand(m, 3)),
                                                         level=3),
    "unpack_plain_invalid_level": lambda m, fw: list(fw.unpack_dual(_rand(m, 3), level=3)),
    "unpack_not_a_tensor": lambda m, fw: fw.unpack_dual(3.0),
    "exit_not_innermost": lambda m, fw: fw.exit_dual_level(level=3),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    out = _both(_in_level(ERRORS[name]))
    assert out[0] == ("ok" if name == "unpack_plain_invalid_level" else "error")


def test_exit_errors_match_torch():
    assert _both(lambda m, fw: fw.exit_dual_level())[0] == "error"
    assert _both(lambda m, fw: fw.exit_dual_level(level=0))[0] == "error"


def test_levels_are_numbered_like_torch():
    def fn(m, fw):
        first = fw.enter_dual_level()
        fw.exit_dual_level(level=first)
        with fw.dual_level() as second:
            inner = fw._current_level
        return [first, second, inner, fw._current_level]
    assert _both(fn) == ("ok", [0, 0, 0, -1])


def test_unpack_dual_outside_a_level_returns_the_tensor():
    def fn(m, fw):
        x = _rand(m, 3)
        p, t = fw.unpack_dual(x)
        return [p is x, t, type(fw.unpack_dual(x)).__name__, fw.unpack_dual(x)._fields]
    assert _both(fn)[1][:3] == [True, None, "UnpackedDualTensor"]


def test_unpack_dual_of_a_plain_tensor_in_a_level():
    _both(_in_level(lambda m, fw: list(fw.unpack_dual(_rand(m, 2)))))


def test_make_dual_is_a_view_differentiable_in_the_primal():
    def fn(m, fw):
        x = _rand(m, 3).requires_grad_()
        t = _rand(m, 3, seed=1)
        with fw.dual_level():
            d = fw.make_dual(x, t)
            p, tt = fw.unpack_dual(d)
            info = [d._base is x, d.grad_fn.name(), tt is t, p._base is x, p.grad_fn.name(),
                    fw.unpack_dual(p).tangent]
            (d * p).sum().backward()
        return info + [x.grad]
    out = _both(fn)
    assert out[1][:3] == [True, "ViewBackward0", True]


LAYOUTS = {
    "contiguous": (lambda m: _rand(m, 2, 3), lambda m: _rand(m, 2, 3, seed=1)),
    "transposed_tangent": (lambda m: _rand(m, 2, 3), lambda m: _rand(m, 3, 2, seed=1).t()),
    "transposed_primal": (lambda m: _rand(m, 3, 2).t(), lambda m: _rand(m, 2, 3, seed=1)),
    "offset_primal": (lambda m: _rand(m, 4, 3)[1:], lambda m: _rand(m, 3, 3, seed=1)),
    "expanded_primal": (lambda m: _rand(m, 3).expand(2, 3), lambda m: _rand(m, 2, 3, seed=1)),
    "zero_size": (lambda m: _rand(m, 0, 3), lambda m: _rand(m, 3, 0, seed=1).t()),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_tangent_layout_follows_the_primal(name):
    # seed 001 has_same_meta: kept as is, or copied into the primal's layout
    primal, tangent = LAYOUTS[name]

    def fn(m, fw):
        with fw.dual_level():
            x, t = primal(m), tangent(m)
            stored = fw.unpack_dual(fw.make_dual(x, t)).tangent
            return [stored is t, stored, stored.stride(), stored.storage_offset(),
                    x.stride() == stored.stride()]
    _both(fn)


def test_tangent_dtype_is_kept():
    def fn(m, fw):
        with fw.dual_level():
            d = fw.make_dual(_rand(m, 3), _rand(m, 3, seed=1, dtype="float32"))
            return [str(fw.unpack_dual(d).tangent.dtype).split(".")[-1],
                    str(fw.unpack_dual(d.exp()).tangent.dtype).split(".")[-1]]
    _both(fn)


def test_tangents_are_deleted_when_the_level_exits():
    def fn(m, fw):
        with fw.dual_level():
            y = fw.make_dual(_rand(m, 3), _rand(m, 3, seed=1)).sin()
            inside = fw.unpack_dual(y).tangent
        with fw.dual_level():
            after = fw.unpack_dual(y).tangent
        return [inside, after]
    assert _both(fn)[1][1] is None
    with nfw.dual_level():
        x = nfw.make_dual(ndgrad.ones(2), ndgrad.ones(2))
        y = x[0] * 2
        assert x._fw_grads and y._fw_grads and len(nfw._levels[0]) == 2
    assert not x._fw_grads and not y._fw_grads      # deleted, not just hidden


def test_repr_shows_the_tangent():
    def fn(m, fw):
        with fw.dual_level():
            x = fw.make_dual(m.tensor([1.0, 2.0], dtype=m.float64),
                             m.tensor([3.0, 4.0], dtype=m.float64))
            return [repr(t).replace("ndgrad", "torch") for t in (x, x * 2, x.detach())]
    _both(fn)


def test_tangents_flow_under_no_grad_and_not_into_detach():
    def fn(m, fw):
        with fw.dual_level():
            d = fw.make_dual(_rand(m, 3), _rand(m, 3, seed=1))
            with m.no_grad():
                y = d * d
            return [fw.unpack_dual(y).tangent, fw.unpack_dual(d.detach()).tangent,
                    fw.unpack_dual(d.data).tangent]
    _both(fn)


def test_integer_outputs_have_no_tangent():
    def fn(m, fw):
        with fw.dual_level():
            d = fw.make_dual(_rand(m, 2, 3), _rand(m, 2, 3, seed=1))
            values, indices = d.max(1)
            return [fw.unpack_dual(o).tangent for o in (d > 0, d.argmax(), indices, values,
                                                        d.to(m.int64), d.double())]
    _both(fn)


def test_reverse_mode_through_tangents():
    # tangents are computed with ndgrad ops: backward through them (reverse-over-forward)
    def fn(m, fw):
        x = _rand(m, 3).requires_grad_()
        v = _rand(m, 3, seed=1).requires_grad_()
        with fw.dual_level():
            y = (fw.make_dual(x, v).sin() * x).sum()
            t = fw.unpack_dual(y).tangent
        gx, gv = m.autograd.grad(t, (x, v))
        return [t, gx, gv]
    _both(fn)


def test_nested_levels_are_supported():
    # PyTorch refuses a second level ("Nested forward mode AD is not supported")
    with nfw.dual_level() as a, nfw.dual_level() as b:
        assert (a, b, nfw._current_level) == (0, 1, 1)
        with pytest.raises(RuntimeError, match="not the last one"):
            nfw.exit_dual_level(level=a)
    assert nfw._current_level == -1


def test_dual_level_as_decorator():
    @nfw.dual_level()
    def f(x):
        return nfw.unpack_dual(nfw.make_dual(x, ndgrad.ones(2)).exp()).tangent
    x = ndgrad.tensor([0.0, 1.0], dtype=ndgrad.float64)
    np.testing.assert_allclose(_np(f(x)), np.exp([0.0, 1.0]))


def test_every_op_of_the_table_has_a_jvp_rule():
    missing = [op for ops in REGISTRY.values() for op in ops if not callable(op.jvp)]
    assert missing == []


# ---------------------------------------------------------------------------- every op in op_db
CASES = [pytest.param(op, i, id=f"{op.name}-{i}") for op in OPS for i in range(len(op.samples))]
DIFF_CASES = [c for c in CASES if c.values[0].differentiable]


def _sample(op, i):
    rng = np.random.default_rng(zlib.crc32(f"fwad/{op.name}/{i}".encode()))
    arrays = make_inputs(op, op.samples[i], rng)
    return arrays, [rng.standard_normal(a.shape) for a in arrays], \
        [rng.standard_normal(a.shape) for a in arrays]


def _outs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _jvp(op, m, arrays, tangents):
    fw = FW[m]
    with fw.dual_level():
        xs = [fw.make_dual(m.tensor(a, dtype=m.float64), m.tensor(t, dtype=m.float64))
              for a, t in zip(arrays, tangents)]
        outs = _outs(op.fn(m, *xs))
        return [None if t is None else _np(t).astype(np.float64)
                for t in (fw.unpack_dual(o).tangent for o in outs)]


@pytest.mark.parametrize("op,i", CASES)
def test_jvp_matches_torch(op, i):
    arrays, tangents, _ = _sample(op, i)
    got = _outcome(lambda m, fw: _jvp(op, m, arrays, tangents), ndgrad)
    want = _outcome(lambda m, fw: _jvp(op, m, arrays, tangents), torch)
    _assert_same(got, want)
    if op.differentiable:
        assert got[0] == "ok" and any(t is not None for t in got[1])


@pytest.mark.parametrize("op,i", DIFF_CASES)
def test_jvp_matches_finite_differences(op, i):
    arrays, tangents, _ = _sample(op, i)
    jvp = _jvp(op, ndgrad, arrays, tangents)

    def f(sign):
        xs = [ndgrad.tensor(a + sign * op.fd_eps * t, dtype=ndgrad.float64)
              for a, t in zip(arrays, tangents)]
        return [_np(o).astype(np.float64) for o in _outs(op.fn(ndgrad, *xs))]
    for k, (plus, minus) in enumerate(zip(f(1), f(-1))):
        if not np.issubdtype(_outs(op.fn(ndgrad, *[ndgrad.tensor(a) for a in arrays]))[k]
                             .numpy().dtype, np.floating):
            assert jvp[k] is None
            continue
        numerical = (plus - minus) / (2 * op.fd_eps)
        np.testing.assert_allclose(jvp[k], numerical, rtol=1e-5, atol=op.fd_atol * 10)


@pytest.mark.parametrize("op,i", DIFF_CASES)
def test_gradcheck_with_forward_ad(op, i):
    arrays, _, _ = _sample(op, i)
    xs = [ndgrad.tensor(a, dtype=ndgrad.float64, requires_grad=True) for a in arrays]
    assert gradcheck(lambda *t: op.fn(ndgrad, *t), xs, eps=op.fd_eps,
                     atol=max(1e-5, op.fd_atol * 10), check_forward_ad=True)


def _second_order_torch(op, arrays, us, vs):
    def f(*xs):
        return tuple(o for o in _outs(op.fn(torch, *xs)) if o.dtype.is_floating_point)
    T = [tuple(torch.tensor(a, dtype=torch.float64) for a in z) for z in (arrays, us, vs)]
    out = torch.func.jvp(lambda *xs: torch.func.jvp(f, xs, T[1])[1], T[0], T[2])[1]
    return [_np(o) for o in out]


def _second_order_ndgrad(op, arrays, us, vs):
    N = ndgrad.tensor
    with nfw.dual_level() as outer, nfw.dual_level() as inner:
        xs = [nfw.make_dual(nfw.make_dual(N(a), N(v), level=outer), N(u), level=inner)
              for a, u, v in zip(arrays, us, vs)]
        res = []
        for o in _outs(op.fn(ndgrad, *xs)):
            if o.dtype.is_floating_point:
                t = nfw.unpack_dual(o, level=inner).tangent
                assert t is not None and nfw.unpack_dual(t, level=inner).tangent is None
                tt = nfw.unpack_dual(t, level=outer).tangent
                res.append(np.zeros(tuple(o.shape)) if tt is None else _np(tt))
        return res


# ---- reduce (issue 8) ----
# torch.func's forward-over-forward of cumprod is wrong where the input has zeros (checked against
# the exact second derivative and against finite differences of its own JVP); there the reference
# is central differences of ndgrad's first-order JVP along the outer tangent.
TORCH_FOF_WRONG = {"cumprod_one_zero", "cumprod_two_zeros"}


def _second_order_fd(op, arrays, us, vs, eps=1e-6):
    def jvp(xs):
        with nfw.dual_level():
            duals = [nfw.make_dual(ndgrad.tensor(a), ndgrad.tensor(u)) for a, u in zip(xs, us)]
            return [_np(nfw.unpack_dual(o).tangent) for o in _outs(op.fn(ndgrad, *duals))
                    if o.dtype.is_floating_point]
    plus = jvp([a + eps * v for a, v in zip(arrays, vs)])
    minus = jvp([a - eps * v for a, v in zip(arrays, vs)])
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]
# ---- end reduce ----
# torch.func's forward-over-forward of det, slogdet and solve is wrong too (the LU-based tangent
# rules are not differentiated again).
TORCH_FOF_WRONG |= {"linalg_det", "linalg_slogdet", "linalg_solve", "linalg_solve_right"}


@pytest.mark.parametrize("op,i", DIFF_CASES)
def test_forward_over_forward_matches_torch_func(op, i):
    arrays, us, vs = _sample(op, i)
    got = _second_order_ndgrad(op, arrays, us, vs)
    if op.name in TORCH_FOF_WRONG:
        for g, w in zip(got, _second_order_fd(op, arrays, us, vs)):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
        return
    want = _second_order_torch(op, arrays, us, vs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


def _forward_over_reverse(op, m, arrays, tangents, grad_outputs):
    # the tangent of a gradient: ops saved by backward rules carry their tangents
    fw = FW[m]
    xs = [m.tensor(a, dtype=m.float64, requires_grad=True) for a in arrays]
    with fw.dual_level():
        duals = [fw.make_dual(x, m.tensor(t, dtype=m.float64)) for x, t in zip(xs, tangents)]
        outs = [o for o in _outs(op.fn(m, *duals)) if o.requires_grad]
        gos = [m.tensor(g[:o.numel()].reshape(tuple(o.shape)), dtype=m.float64)
               for o, g in zip(outs, grad_outputs)]
        grads = m.autograd.grad(outs, xs, gos, create_graph=True, allow_unused=True)
        return [None if g is None else fw.unpack_dual(g).tangent for g in grads]


@pytest.mark.parametrize("op,i", [c for c in DIFF_CASES if c.values[0].double_backward])
def test_forward_over_reverse_matches_torch(op, i):
    arrays, tangents, _ = _sample(op, i)
    gos = [np.random.default_rng(k).standard_normal(64) for k in range(4)]
    _both(lambda m, fw: _forward_over_reverse(op, m, arrays, tangents, gos))


# Ops of the table that op_db does not reach directly (backward kernels, batching, new views):
# their JVPs against finite differences, and against PyTorch where it has the op.
def _internal_ops():
    from ndgrad.ops import _batching, pointwise as pw, reduction as red, shape
    from ndgrad.ops import views_inplace as vi
    from ndgrad.ops._dispatch import apply
    steps = shape.getitem(ndgrad.zeros(3, 4), (slice(1, None), 2))._view_steps
    idx = np.array([[0, 2, 1], [1, 1, 0]])
    return {
        "tanh_backward": (lambda g, r: pw.tanh_backward(g, r), ((2, 3), (2, 3))),
        "sigmoid_backward": (lambda g, r: pw.sigmoid_backward(g, r), ((2, 3), (2, 3))),
        "threshold_backward": (lambda g, r: pw.threshold_backward(g, r), ((2, 3), (2, 3))),
        "prod_others": (lambda x: apply(red.PROD_OTHERS, (x,), (x._data,), (1,)), ((2, 3),)),
        "scatter_zeros": (lambda g: red.scatter_zeros(g, 1, ndgrad.tensor(idx[:, :1]), (2, 3)),
                          ((2, 1),)),
        "scatter_add_zeros": (lambda g: red._scatter_add_zeros(g, 1, idx, (2, 4)), ((2, 3),)),
        "amax": (lambda x: apply(_batching.AMAX, (x,), (x._data,), ((1,), False)), ((2, 3),)),
        "amin_keepdim": (lambda x: apply(_batching.AMIN, (x,), (x._data,), ((0,), True)),
                         ((2, 3),)),
        "view_scatter": (lambda g: vi.view_scatter(g, steps, (3, 4)), ((2,),)),
        "view_replay": (lambda x: apply(vi.VIEW_REPLAY, (x,), (x._data,), (steps,)), ((3, 4),)),
        "view_zero": (lambda x: apply(vi.VIEW_ZERO, (x,), (x._data,), (steps,)), ((3, 4),)),
        "copy_like_layout": (lambda g: pw._copy_like_layout(g, ndgrad.zeros(3, 2).t()), ((2, 3),)),
        "slice_backward": (lambda g: apply(shape.SLICE_BACKWARD, (g,), (g._data,),
                                           ((slice(1, None),), (3, 2))), ((2, 2),)),
        "zero_at": (lambda x: apply(shape.ZERO_AT, (x,), (x._data,), ((np.array([0, 0]),),)),
                    ((3, 2),)),
        "diagonal": (lambda x: x.diagonal(1), ((3, 4),)),
        "unfold": (lambda x: x.unfold(1, 2, 1), ((2, 4),)),
        "as_strided": (lambda x: x.as_strided((2, 2), (1, 2), 1), ((3, 3),)),
    }


INTERNAL = sorted(_internal_ops())


@pytest.mark.parametrize("name", INTERNAL)
def test_internal_ops_jvp_against_finite_differences(name):
    fn, shapes = _internal_ops()[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    xs = [ndgrad.tensor(rng.uniform(0.3, 2.0, s) * rng.choice([-1, 1], s), requires_grad=True)
          for s in shapes]
    assert gradcheck(fn, xs, check_forward_ad=True)


@pytest.mark.parametrize("name", ["diagonal", "unfold", "as_strided"])
def test_new_views_match_torch(name):
    fn, shapes = _internal_ops()[name]

    def run(m, fw):
        with fw.dual_level():
            x = _dual(m, fw, *shapes[0])
            y = fn(x)
            t = fw.unpack_dual(y).tangent
            return [y, t, t._base is fw.unpack_dual(x).tangent]
    _both(run)


def test_real_and_imag_views_of_complex_tensors_match_torch():
    def run(m, fw):
        with fw.dual_level():
            z = fw.make_dual(m.tensor([1 + 2j, 3 - 1j]), m.tensor([0.5 - 1j, 2 + 0.25j]))
            w = z * z
            return [fw.unpack_dual(o).tangent for o in (w, w.real, w.imag, w.abs(), w.conj())]
    _both(run)


# ---------------------------------------------------------------------------- views and in-place
def _dual(m, fw, *shape, seed=0):
    return fw.make_dual(_rand(m, *shape, seed=seed), _rand(m, *shape, seed=seed + 100))


def _tangents(fw, *ts):
    return [fw.unpack_dual(t).tangent for t in ts]


def _case1(m, fw):                 # no views: foo.copy_(bar)
    foo, bar = _dual(m, fw, 2, 3), _dual(m, fw, 2, 3, seed=1)
    ft = fw.unpack_dual(foo).tangent
    foo.copy_(bar)
    return _tangents(fw, foo, bar) + [fw.unpack_dual(foo).tangent is ft]


def _case2(m, fw):                 # view.copy_(bar): from the view to its base
    foo = _dual(m, fw, 2, 3)
    view = foo[0]
    view.copy_(_dual(m, fw, 3, seed=1))
    return _tangents(fw, foo, view)


def _case3(m, fw):                 # foo.copy_(bar): from the base to its view
    foo = _dual(m, fw, 2, 3)
    view = foo[0]
    foo.copy_(_dual(m, fw, 2, 3, seed=1))
    return _tangents(fw, foo, view)


def _case4(m, fw):                 # plain foo, view.copy_(dual): the base gets a zero tangent
    foo = _rand(m, 2, 3)
    view = foo[0]
    view.copy_(_dual(m, fw, 3, seed=1))
    tf, tv = _tangents(fw, foo, view)
    return [tf, tv, tv._base is tf]


def _case5(m, fw):                 # plain foo, base.copy_(dual): the view reads it lazily
    foo = _rand(m, 2, 3)
    view = foo[1]
    foo.copy_(_dual(m, fw, 2, 3, seed=1))
    tf, tv = _tangents(fw, foo, view)
    return [tf, tv, tv._base is tf]


def _view_of_view(m, fw):
    foo = _rand(m, 3, 4)
    view = foo.t()[1:, ::2]
    foo.mul_(_dual(m, fw, 3, 4, seed=1))
    return _tangents(fw, foo, view)


def _inplace_on_view_of_view(m, fw):
    foo = _rand(m, 3, 4)
    other = foo[2]
    view = foo[:, 1:].t()
    view.add_(_dual(m, fw, 3, 3, seed=1))
    return _tangents(fw, foo, view, other)


def _view_tangent_is_a_view(m, fw):
    e = _dual(m, fw, 2, 3)
    te = fw.unpack_dual(e).tangent
    return [fw.unpack_dual(v).tangent._base is te for v in (e.t(), e[1], e.view(6), e[:, 1:],
                                                              e.unsqueeze(0), *e.unbind(1))]


def _inplace_ops(m, fw):
    out = []
    for f in (lambda x: x.mul_(2), lambda x: x.add_(1.5), lambda x: x.exp_(), lambda x: x.div_(3),
              lambda x: x.pow_(2), lambda x: x.zero_(), lambda x: x.fill_(2.0),
              lambda x: x.clamp_(-0.5, 0.5), lambda x: x.sigmoid_(), lambda x: x.neg_(),
              lambda x: x.copy_(_rand(m, 2, 3, seed=5)),
              lambda x: x.mul_(_dual(m, fw, 3, seed=6)),
              lambda x: x.fill_(_dual(m, fw, seed=7)),
              lambda x: x.masked_fill_(x > 0, 0.25)):
        x = _dual(m, fw, 2, 3)
        t = fw.unpack_dual(x).tangent
        f(x)
        out += [x, fw.unpack_dual(x).tangent, fw.unpack_dual(x).tangent is t]
    return out


def _inplace_into_plain(m, fw):
    out = []
    for f in (lambda x: x.mul_(_dual(m, fw, 2, 3, seed=3)),
              lambda x: x.add_(_dual(m, fw, 3, seed=4), alpha=2),
              lambda x: x.copy_(_dual(m, fw, 1, 3, seed=5))):
        x = _rand(m, 2, 3)
        f(x)
        out += _tangents(fw, x)
    return out


def _setitem(m, fw):
    y = _rand(m, 3, 4)
    y[1] = _dual(m, fw, 4, seed=1)
    y[:, 2] = 0.5
    z = _dual(m, fw, 3, 4, seed=2)
    z[m.tensor([0, 2])] = _dual(m, fw, 4, seed=3)
    z[z > 0] = 1.0
    return _tangents(fw, y, z)


def _recorded_inplace_on_view(m, fw):
    # the recording path of in-place ops (grad mode, inputs that require grad)
    x = _rand(m, 2, 3).requires_grad_()
    y = fw.make_dual(x, _rand(m, 2, 3, seed=1)) * 2
    w = _rand(m, 3, seed=2).requires_grad_()
    y[0].mul_(fw.make_dual(w, _rand(m, 3, seed=3)))
    t = fw.unpack_dual(y).tangent
    (y * y).sum().backward()
    return [y, t, x.grad, w.grad]


def _outputs_do_not_share_tangents(m, fw):
    x = _dual(m, fw, 3)
    tx = fw.unpack_dual(x).tangent.clone()
    y = x + 1
    y.mul_(2)
    return [fw.unpack_dual(x).tangent, tx, fw.unpack_dual(x.clone()).tangent is
            fw.unpack_dual(x).tangent]


VIEW_CASES = {f.__name__.lstrip("_"): f for f in (
    _case1, _case2, _case3, _case4, _case5, _view_of_view, _inplace_on_view_of_view,
    _view_tangent_is_a_view, _inplace_ops, _inplace_into_plain, _setitem,
    _recorded_inplace_on_view, _outputs_do_not_share_tangents)}


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_views_and_inplace_match_torch(name):
    out = _both(_in_level(VIEW_CASES[name]))
    assert out[0] == "ok", out


# ---------------------------------------------------------------------------- nested levels
def _f(x):
    return (x.sin() * x.exp() + x ** 3).sum() + (x[:2] * x[1:]).prod()


def _nested_hvp(x, u, v):
    with nfw.dual_level() as outer, nfw.dual_level() as inner:
        d = nfw.make_dual(nfw.make_dual(x, v, level=outer), u, level=inner)
        t = nfw.unpack_dual(_f(d), level=inner).tangent
        return nfw.unpack_dual(t, level=outer).tangent


def test_hessian_vector_product_matches_torch_func_and_double_backward():
    a, u, v = (np.random.default_rng(s).standard_normal(3) for s in (1, 2, 3))
    T = [torch.tensor(z) for z in (a, u, v)]
    got = _np(_nested_hvp(*(ndgrad.tensor(z) for z in (a, u, v))))
    fof = torch.func.jvp(lambda x: torch.func.jvp(_f, (x,), (T[1],))[1], (T[0],), (T[2],))[1]
    x = T[0].clone().requires_grad_()
    (g,) = torch.autograd.grad(_f(x), x, create_graph=True)
    (hv,) = torch.autograd.grad(g, x, T[2])
    np.testing.assert_allclose(got, _np(fof), rtol=1e-10)
    np.testing.assert_allclose(got, np.dot(_np(hv), u), rtol=1e-10)
    # and against ndgrad's own double backward
    xn = ndgrad.tensor(a, requires_grad=True)
    (gn,) = ndgrad.autograd.grad(_f(xn), xn, create_graph=True)
    (hn,) = ndgrad.autograd.grad(gn, xn, ndgrad.tensor(v))
    np.testing.assert_allclose(got, np.dot(_np(hn), u), rtol=1e-10)


SECOND = {
    "exp": (lambda x: x.exp(), np.exp),
    "log": (lambda x: x.log(), lambda x: -1 / x ** 2),
    "sin": (lambda x: x.sin(), lambda x: -np.sin(x)),
    "cos": (lambda x: x.cos(), lambda x: -np.cos(x)),
    "tanh": (lambda x: x.tanh(), lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    "sigmoid": (lambda x: x.sigmoid(),
                lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 2 * s)),
    "sqrt": (lambda x: x.sqrt(), lambda x: -0.25 * x ** -1.5),
    "reciprocal": (lambda x: x.reciprocal(), lambda x: 2 / x ** 3),
    "pow": (lambda x: x ** 3.5, lambda x: 3.5 * 2.5 * x ** 1.5),
    "rpow": (lambda x: 2.0 ** x, lambda x: np.log(2.0) ** 2 * 2.0 ** x),
    "div": (lambda x: 1 / (x * x), lambda x: 6 / x ** 4),
}


@pytest.mark.parametrize("name", sorted(SECOND))
def test_second_derivative_of_unary_ops_is_analytic(name):
    f, d2 = SECOND[name]
    a = np.array([0.5, 1.0, 1.7])
    with nfw.dual_level() as outer, nfw.dual_level() as inner:
        x = nfw.make_dual(nfw.make_dual(ndgrad.tensor(a), ndgrad.ones(3, dtype=ndgrad.float64),
                                        level=outer), ndgrad.ones(3, dtype=ndgrad.float64),
                          level=inner)
        t = nfw.unpack_dual(f(x), level=inner).tangent
        tt = nfw.unpack_dual(t, level=outer).tangent
    np.testing.assert_allclose(_np(tt), d2(a), rtol=1e-10)


def test_third_derivative_with_three_levels():
    a = np.array([0.5, -1.5])
    one = ndgrad.ones(2, dtype=ndgrad.float64)
    with nfw.dual_level() as l0, nfw.dual_level() as l1, nfw.dual_level() as l2:
        x = nfw.make_dual(nfw.make_dual(nfw.make_dual(ndgrad.tensor(a), one, level=l0), one,
                                        level=l1), one, level=l2)
        y = x ** 4 + x.sin()
        t2 = nfw.unpack_dual(y, level=l2).tangent
        t12 = nfw.unpack_dual(t2, level=l1).tangent
        t012 = nfw.unpack_dual(t12, level=l0).tangent
        assert nfw.unpack_dual(t2, level=l2).tangent is None
    np.testing.assert_allclose(_np(t012), 24 * a - np.cos(a), rtol=1e-10)


def test_nested_levels_in_either_order_and_primals_keep_outer_tangents():
    a, u, v = (ndgrad.tensor(np.random.default_rng(s).standard_normal(3)) for s in (4, 5, 6))
    with nfw.dual_level() as outer, nfw.dual_level() as inner:
        # the inner level's tangent first, then the outer one on top
        x = nfw.make_dual(nfw.make_dual(a, u, level=inner), v, level=outer)
        y = _f(x)
        t = nfw.unpack_dual(y, level=inner).tangent
        got = nfw.unpack_dual(t, level=outer).tangent
        p = nfw.unpack_dual(y, level=inner).primal
        assert nfw.unpack_dual(p, level=inner).tangent is None
        first = nfw.unpack_dual(p, level=outer).tangent
        np.testing.assert_allclose(_np(first), _np(nfw.unpack_dual(y, level=outer).tangent))
    np.testing.assert_allclose(_np(got), _np(_nested_hvp(a, u, v)), rtol=1e-10)


def test_exiting_the_inner_level_keeps_the_outer_tangents():
    with nfw.dual_level():
        x = nfw.make_dual(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 0.0]))
        with nfw.dual_level() as inner:
            y = nfw.make_dual(x, ndgrad.tensor([0.0, 1.0]), level=inner) ** 2
            assert nfw.unpack_dual(y, level=inner).tangent is not None
        assert nfw.unpack_dual(y).tangent.tolist() == [2.0, 0.0]
        with nfw.dual_level() as again:
            assert again == 1 and nfw.unpack_dual(y, level=again).tangent is None


def test_nested_inplace_on_a_view():
    # the in-place machinery at two levels: tangents of tangents are updated in place too
    with nfw.dual_level() as outer, nfw.dual_level() as inner:
        base = ndgrad.zeros(2, 3, dtype=ndgrad.float64)
        v = nfw.make_dual(nfw.make_dual(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.ones(3),
                                        level=outer), ndgrad.ones(3), level=inner)
        base[1].copy_(v * v)
        t = nfw.unpack_dual(base, level=inner).tangent
        tt = nfw.unpack_dual(t, level=outer).tangent
    assert _np(t).tolist() == [[0, 0, 0], [2, 4, 6]]
    assert _np(tt).tolist() == [[0, 0, 0], [2, 2, 2]]


# ---------------------------------------------------------------------------- custom Functions
def _functions(m):
    F = m.autograd.Function

    class Cube(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 3 * x * x * t

    class NoJvp(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    class Identity(F):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def jvp(ctx, t):
            return t

    class Dirty(F):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t.mul_(2)

    class DirtyCopy(Dirty):
        @staticmethod
        def jvp(ctx, t):
            return t * 2

    class Two(F):
        @staticmethod
        def forward(ctx, x, k, y):
            ctx.save_for_forward(x, y)
            ctx.k = k
            return x * y * k, x.argmax()

        @staticmethod
        def backward(ctx, g, gi):
            return g, None, g

        @staticmethod
        def jvp(ctx, tx, tk, ty):
            x, y = ctx.saved_tensors
            assert tk is None
            return (tx * y + x * ty) * ctx.k, None

    class WrongCount(NoJvp):
        @staticmethod
        def jvp(ctx, t):
            return t, t

    class WrongSize(NoJvp):
        @staticmethod
        def jvp(ctx, t):
            return m.ones(5)

    class FloorInside(Cube):
        @staticmethod
        def forward(ctx, x):            # forward runs without forward AD (no error here)
            ctx.save_for_forward(x)
            return x // 1 + x ** 3 - x // 1

    return dict(Cube=Cube, NoJvp=NoJvp, Identity=Identity, Dirty=Dirty, DirtyCopy=DirtyCopy,
                Two=Two, WrongCount=WrongCount, WrongSize=WrongSize, FloorInside=FloorInside)


@pytest.mark.parametrize("name", ["Cube", "NoJvp", "Identity", "Dirty", "DirtyCopy", "Two",
                                  "WrongCount", "WrongSize", "FloorInside"])
def test_custom_function_jvp_matches_torch(name):
    def fn(m, fw):
        cls = _functions(m)[name]
        with fw.dual_level():
            x = _dual(m, fw, 3)
            if name == "Two":
                outs = cls.apply(x, 3.0, _rand(m, 3, seed=4))
            else:
                outs = (cls.apply(x),)
            return [fw.unpack_dual(o).tangent for o in outs] + [fw.unpack_dual(x).tangent]
    _both(fn)


# ---------------------------------------------------------------------------- gradcheck
def test_gradcheck_forward_ad_passes_and_catches_a_wrong_jvp():
    x = ndgrad.tensor(np.random.default_rng(0).standard_normal((2, 3)), requires_grad=True)
    assert gradcheck(lambda t: (t.exp() * t).sum(1), (x,), check_forward_ad=True)
    assert gradcheck(_functions(ndgrad)["Cube"].apply, (x,), check_forward_ad=True,
                     check_backward_ad=False)

    class Wrong(ndgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def jvp(ctx, t):
            return t

    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to "
                                             "input 0"):
        gradcheck(Wrong.apply, (x,), check_forward_ad=True, check_backward_ad=False)
    assert not gradcheck(Wrong.apply, (x,), check_forward_ad=True, check_backward_ad=False,
                         raise_exception=False)


def test_gradcheck_forward_ad_with_complex_inputs():
    z = ndgrad.tensor(np.array([1 + 2j, -0.5 + 0.3j]), requires_grad=True)
    w = ndgrad.tensor(np.array([0.3 - 1j, 2 + 0.5j]), requires_grad=True)
    assert gradcheck(lambda a, b: (a * b * a).exp(), (z, w), check_forward_ad=True,
                     check_backward_ad=False)
    assert gradcheck(lambda a: a.abs(), (z,), check_forward_ad=True, check_backward_ad=False)
