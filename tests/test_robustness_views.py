"""Robustness of the view ops against PyTorch (issue 7): ``as_strided`` over any storage layout
with PyTorch's checks (nothing outside a tensor's storage can be read or written), ``unfold`` of
0-d tensors, ``movedim``/``gather`` of 0-d tensors and empty ``gather`` indices, and shape/view ops
given out-of-range dims or negative/huge sizes. Every case runs the same program with ``torch``
and ``ndgrad``: same exception class and message (first line), or the same values, view metadata
and gradients; after an error the input is unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ndgrad
from ndgrad.autograd import gradcheck

BIG = 10 ** 12
I64 = 2 ** 63


def vals(t):
    return None if t is None else np.asarray(t.detach().tolist()).tolist()


def first_line(msg: str) -> str:
    # PyTorch appends a C++ traceback to some argument-parser messages (inside their quotes).
    return msg.replace("torch.", "ndgrad.").split("\n")[0].rstrip('"')


def outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - compared between libraries
        return type(e).__name__, first_line(str(e))


def same(fn):
    """``fn(L)`` with each library: equal results, or the same error and message."""
    t, n = outcome(lambda: fn(torch)), outcome(lambda: fn(ndgrad))
    assert t == n
    return t


def arange(L, n, *shape):
    x = L.arange(float(n), dtype=L.float64)
    return x.reshape(shape) if shape else x


# ---------------------------------------------------------------------------- as_strided errors
AS_STRIDED_ERRORS = {
    # (size, stride, storage_offset) on a 4-element float64 tensor; the second entry of each
    # case is a view ``x[1:]`` of an 8-element tensor, whose storage is larger than the view.
    "negative_huge_stride": ((2,), (-BIG,), 0),
    "negative_stride": ((2, 2), (1, -1), 0),
    "negative_stride_first": ((2,), (-1,), -1),
    "length_mismatch": ((2, 2), (1,), 0),
    "length_mismatch_first": ((2, 2), (-1,), -1),
    "negative_offset": ((2,), (1,), -1),
    "negative_offset_empty": ((0,), (1,), -1),
    "huge_negative_offset": ((2,), (1,), -2 ** 62),
    "out_of_bounds": ((2,), (1,), 7),
    "out_of_bounds_stride": ((2, 2), (1, 3), 1),
    "out_of_bounds_0d": ((), (), 8),
    "huge_stride": ((2,), (2 ** 60,), 0),
    "overflow_stride": ((2,), (2 ** 61,), 0),
    "overflow_offset": ((2,), (1,), 2 ** 61),
    "overflow_size": ((2 ** 62, 4), (1, 1), 0),
    "negative_size": ((-1,), (1,), 0),
    "negative_size_zero_stride": ((2, -1), (0, 0), 0),
    "negative_size_out_of_bounds": ((-1,), (0,), 9),
    "numel_overflow": ((2 ** 40, 2 ** 40), (0, 0), 0),
    "numel_overflow_out_of_bounds": ((2 ** 40, 2 ** 40), (1, 1), 0),
}


@pytest.mark.parametrize("name", AS_STRIDED_ERRORS)
@pytest.mark.parametrize("view", [False, True])
def test_as_strided_errors_match_torch(name, view):
    size, stride, offset = AS_STRIDED_ERRORS[name]

    def run(L):
        base = arange(L, 8)
        x = base[1:] if view else base[:4].clone()
        before = (vals(base), base._version, x._version)
        err = outcome(lambda: vals(x.as_strided(size, stride, offset)))
        err_fn = outcome(lambda: vals(L.as_strided(x, size, stride, offset)))
        assert (vals(base), base._version, x._version) == before
        return err, err_fn
    t, n = run(torch), run(ndgrad)
    assert t == n
    assert t[0][0] == ("ok" if (name, view) == ("out_of_bounds_stride", True) else "RuntimeError")


ARGUMENT_ERRORS = {
    "size_float": lambda L, x: x.as_strided((2.0,), (1,)),
    "size_bool": lambda L, x: x.as_strided((True,), (1,)),
    "size_int": lambda L, x: L.as_strided(x, 2, (1,)),
    "stride_float": lambda L, x: x.as_strided((2,), (1.5,)),
    "stride_int": lambda L, x: x.as_strided((2,), 1, 0),
    "offset_float": lambda L, x: x.as_strided((2,), (1,), 1.0),
    "offset_bool": lambda L, x: x.as_strided((2,), (1,), True),
    "offset_float_function": lambda L, x: L.as_strided(x, (2,), (1,), 1.0),
    "size_too_large": lambda L, x: x.as_strided((I64,), (1,)),
    "stride_too_large": lambda L, x: x.as_strided((2,), (I64,)),
    "offset_too_large": lambda L, x: x.as_strided((2,), (1,), I64),
    "tensor_arguments": lambda L, x: x.as_strided(
        L.Size([2]), [L.tensor(2)], L.tensor(1)).tolist(),
    "list_arguments": lambda L, x: x.as_strided([2, 1], [1, 0], None).tolist(),
    "numpy_ints": lambda L, x: x.as_strided((np.int64(2),), (np.int32(1),), np.int64(2)).tolist(),
}


@pytest.mark.parametrize("name", ARGUMENT_ERRORS)
def test_as_strided_argument_types_match_torch(name):
    same(lambda L: ARGUMENT_ERRORS[name](L, arange(L, 4)))


def test_as_strided_never_touches_memory_outside_the_storage():
    # Used to crash the interpreter (reading 10**12 elements before the tensor).
    with pytest.raises(RuntimeError, match="Negative strides are not supported"):
        ndgrad.arange(4.0).as_strided((2,), (-BIG,), 0).tolist()
    # Writing through a negative stride used to write before the tensor's memory.
    x = ndgrad.arange(8.0, dtype=ndgrad.float64)
    v = x[4:]
    with pytest.raises(RuntimeError, match="Negative strides"):
        v.as_strided((4,), (-1,), 7).fill_(-1.0)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 64"):
        v.as_strided((2,), (1,), 7).fill_(-1.0)
    assert x.tolist() == list(range(8)) and x._version == 0
    # The largest layout that fits reads the last element, and writes stay inside.
    v.as_strided((2,), (7,), 0).mul_(-1)
    assert x.tolist() == [-0.0, 1, 2, 3, 4, 5, 6, -7.0]


# ---------------------------------------------------------------------------- as_strided views
VIEWS = {
    "contiguous": lambda L, x: x.as_strided((3, 2), (4, 1), 1),
    "transposed_input": lambda L, x: x.reshape(3, 4).t().as_strided((2, 3), (1, 4), 1),
    "offset_before_view_start": lambda L, x: x[5:].as_strided((4,), (1,), 0),
    "default_offset_of_view": lambda L, x: x[3:].as_strided((2, 2), (1, 2)),
    "overlapping": lambda L, x: x[2:].as_strided((3, 3), (1, 1), 1),
    "zero_stride": lambda L, x: x.as_strided((2, 3), (0, 2), 5),
    "step_view": lambda L, x: x[1::3].as_strided((2, 2), (3, 6), 0),
    "zero_d": lambda L, x: x[4:].as_strided((), (), 11),
    "empty_far_offset": lambda L, x: x.as_strided((0, 3), (1, 1), 100),
    "huge_stride_single": lambda L, x: x.as_strided((1, 2), (BIG, 1), 3),
    "huge_stride_empty": lambda L, x: x.as_strided((3, 0), (10 ** 18, 1), 0),
    "of_as_strided": lambda L, x: x[4:].as_strided((3, 3), (3, 1), 1).as_strided(
        (2, 2), (1, 5), 0),
    "of_expanded": lambda L, x: x[:2].expand(3, 2).as_strided((3,), (1,), 0),
    "of_diagonal": lambda L, x: x.reshape(3, 4).diagonal().as_strided((2,), (2,), 1),
    "of_unfold": lambda L, x: x.unfold(0, 4, 2).as_strided((3,), (3,), 0),
}


@pytest.mark.parametrize("name", VIEWS)
def test_as_strided_view_metadata_matches_torch(name):
    def run(L):
        x = arange(L, 12).clone()
        v = VIEWS[name](L, x)
        out = [tuple(v.shape), v.stride(), v.storage_offset(), v._base is x, vals(v)]
        x.mul_(-1)                                       # writes to the base show in the view
        out += [vals(v), v._version]
        return out
    assert same(run)[0] == "ok"


WRITABLE = ["contiguous", "transposed_input", "offset_before_view_start", "step_view", "zero_d",
            "of_as_strided", "of_expanded", "of_diagonal", "of_unfold"]


@pytest.mark.parametrize("name", WRITABLE)
def test_write_through_as_strided_view_matches_torch(name):
    def run(L):
        x = arange(L, 12).clone()
        v = VIEWS[name](L, x)
        v.mul_(-1)
        v.add_(0.5)
        return vals(x), x._version
    assert same(run)[0] == "ok"


def test_write_through_zero_stride_as_strided_view_is_refused_like_torch():
    def run(L):
        x = arange(L, 12).clone()
        err = outcome(lambda: x.as_strided((2, 3), (0, 2), 5).mul_(2))
        return err, vals(x), x._version
    assert same(run)[1][0][0] == "RuntimeError"


# ---------------------------------------------------------------------------- as_strided grads
def _leaf(L, n=12, dtype=None):
    return L.arange(float(n), dtype=dtype or L.float64).requires_grad_()


def _weights(L, shape):
    n = int(np.prod(shape))
    return (L.arange(float(n), dtype=L.float64) * 0.5 + 1).reshape(shape)


def _grad_program(view_fn):
    def run(L):
        x = _leaf(L)
        y = x * 1
        v = view_fn(L, y)
        (v * _weights(L, tuple(v.shape))).sum().backward()
        return vals(v), vals(x.grad), type(v.grad_fn).__name__
    return run


GRAD_PROGRAMS = {name: _grad_program(fn) for name, fn in VIEWS.items()}


def _copy_slices(L):
    # In-place through a view reading before its input: PyTorch's CopySlices works on the
    # base, so the elements before the slice get their gradient too.
    x = _leaf(L, 6)
    b = x * 1
    v = b[2:].as_strided((4,), (1,), 0)
    v.mul_(10)
    b.backward(L.arange(6.0, dtype=L.float64))
    return vals(b), vals(x.grad), v.grad_fn.name(), b.grad_fn.name()


def _regenerated(L):
    # A view whose base was modified in place regenerates its history from the base.
    x = _leaf(L, 6)
    b = x * 1
    v = b[2:].as_strided((4,), (1,), 0)
    b.mul_(2)
    v.backward(L.tensor([1.0, 2, 3, 4], dtype=L.float64))
    return vals(v), vals(x.grad), v.grad_fn.name()


def _view_of_as_strided_inplace(L):
    x = _leaf(L)
    b = x * 1
    v = b[4:].as_strided((3, 3), (3, 1), 1)[1:].t()
    v.mul_(3)
    (b * b).sum().backward()
    return vals(b), vals(x.grad), vals(v)


def _leaf_view(L):
    x = _leaf(L)
    v = x[5:].as_strided((2, 2), (5, 1), 3)
    (v * _weights(L, (2, 2))).sum().backward()
    return vals(v), vals(x.grad)


def _double_backward(L):
    x = _leaf(L, 6)
    v = (x * x)[1:].as_strided((2, 2), (1, 1), 0)
    g, = L.autograd.grad((v * _weights(L, (2, 2))).sum(), x, create_graph=True)
    g2, = L.autograd.grad((g * g).sum(), x)
    return vals(g), vals(g2)


def _complex_real_part(L):
    z = L.tensor([1 + 2j, 3 - 1j, 5 + 4j], dtype=L.complex128, requires_grad=True)
    r = (z * 1).real.as_strided((3,), (1,), 1)
    (r * L.tensor([1.0, 2, 3], dtype=L.float64)).sum().backward()
    return vals(r), vals(z.grad.real), vals(z.grad.imag)


def _float32(L):
    x = _leaf(L, 6, L.float32)
    v = x.t()[1:].as_strided((2, 2), (2, 1), 0)
    (v * 3).sum().backward()
    return vals(v), vals(x.grad), str(x.grad.dtype).split(".")[-1]


def _forward_ad(L):
    fw = L.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(arange(L, 6), arange(L, 6) * 10)
        v = x[2:].as_strided((2, 2), (1, 1), 1)
        w = x.t()[1:].as_strided((2,), (2,), 0)
        return [vals(t) for t in (v, fw.unpack_dual(v).tangent, fw.unpack_dual(w).tangent)]


def _forward_ad_strided_primal(L):
    # make_dual of a view laid out with gaps (its storage is larger than its elements).
    fw = L.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(arange(L, 9, 3, 3).diagonal(), L.ones(3, dtype=L.float64))
        e = fw.make_dual(arange(L, 12).as_strided((2, 2), (5, 1), 1),
                         L.ones(2, 2, dtype=L.float64))
        return vals(fw.unpack_dual(d).tangent), vals(fw.unpack_dual(e).tangent)


GRAD_PROGRAMS.update({
    "copy_slices": _copy_slices, "regenerated_view": _regenerated,
    "view_of_as_strided_inplace": _view_of_as_strided_inplace, "leaf_view": _leaf_view,
    "double_backward": _double_backward, "complex_real_part": _complex_real_part,
    "float32": _float32, "forward_ad": _forward_ad,
    "forward_ad_strided_primal": _forward_ad_strided_primal,
})


@pytest.mark.parametrize("name", GRAD_PROGRAMS)
def test_as_strided_gradients_match_torch(name):
    assert same(GRAD_PROGRAMS[name])[0] == "ok"


def _batched_out_of_place(L):
    x = _leaf(L)
    v = (x * 1)[2:].as_strided((3, 3), (2, 1), 0)
    g, = L.autograd.grad(v, x, arange(L, 18, 2, 3, 3), is_grads_batched=True)
    return vals(g)


def _batched_copy_slices(L):
    x = _leaf(L)
    b = x * 1
    b[2:].as_strided((2, 2), (3, 1), 0).mul_(L.tensor([[1.0, 2], [3, 4]], dtype=L.float64))
    g, = L.autograd.grad(b, x, arange(L, 24, 2, 12), is_grads_batched=True)
    return vals(g)


def _batched_regenerated(L):
    x = _leaf(L)
    b = x * 1
    v = b[2:].as_strided((2, 2), (3, 1), 0)
    b.mul_(2)
    g, = L.autograd.grad(v, x, arange(L, 8, 2, 2, 2), is_grads_batched=True)
    return vals(g)


@pytest.mark.parametrize("program", [_batched_out_of_place, _batched_copy_slices,
                                     _batched_regenerated])
def test_as_strided_batched_gradients_match_torch(program):
    assert same(program)[0] == "ok"


GRADCHECK = {
    "overlapping": lambda x: x.as_strided((3, 3), (1, 1), 2),
    "offset_in_view": lambda x: x[2:].as_strided((2, 3), (3, 1), 3),
    "transposed": lambda x: x.reshape(3, 4).t().as_strided((2, 3), (1, 4), 1),
    "zero_stride": lambda x: x.as_strided((2, 3), (0, 2), 5),
    "then_view": lambda x: x.as_strided((3, 3), (2, 1), 1)[1:].t(),
}


@pytest.mark.parametrize("name", GRADCHECK)
def test_as_strided_gradcheck(name):
    x = ndgrad.tensor(np.random.default_rng(0).normal(size=12), requires_grad=True)
    assert gradcheck(GRADCHECK[name], (x,), check_forward_ad=True)


# ---------------------------------------------------------------------------- as_strided property
_SIZES = st.one_of(st.integers(0, 4), st.integers(-3, -1), st.sampled_from([2 ** 40, 2 ** 62]))
_STRIDES = st.one_of(st.integers(0, 6), st.integers(-4, -1),
                     st.sampled_from([BIG, 2 ** 61, -BIG]))
_OFFSETS = st.one_of(st.none(), st.integers(0, 30), st.integers(-5, -1),
                     st.sampled_from([BIG, -BIG, 2 ** 61]))


def _base_view(L, kind, n):
    x = L.arange(float(n), dtype=L.float64).requires_grad_()
    y = x * 1
    if kind == "slice":
        return x, y[n // 3:]
    if kind == "step":
        return x, y[1::2]
    if kind == "transpose":
        return x, y.reshape(2, n // 2).t()
    if kind == "select":
        return x, y.reshape(2, n // 2)[1]
    return x, y


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["whole", "slice", "step", "transpose", "select"]),
       st.sampled_from([6, 12, 20]), st.integers(0, 3), st.data())
def test_as_strided_random_layouts_match_torch(kind, n, ndim, data):
    size = tuple(data.draw(_SIZES, label="size") for _ in range(ndim))
    stride = tuple(data.draw(_STRIDES, label="stride")
                   for _ in range(ndim + data.draw(st.sampled_from([0, 0, 0, 0, 1, -1]))
                                  if ndim else ndim))
    offset = data.draw(_OFFSETS, label="offset")
    # PyTorch itself misbehaves for a negative size next to a zero size (it returns a tensor
    # with a negative size, or raises SystemError): not compared.
    if any(s < 0 for s in size) and 0 in size:
        return
    res = []
    for L in (torch, ndgrad):
        x, b = _base_view(L, kind, n)
        try:
            v = b.as_strided(size, stride, offset)
        except Exception as e:  # noqa: BLE001 - compared between libraries
            res.append((type(e), str(e)))
            continue
        numel = v.numel()
        # Strides that address nothing (size-1 dimensions, empty views) may differ: NumPy
        # cannot hold some of them in bytes.
        strides = [s for s, k in zip(v.stride(), v.shape) if k > 1] if numel else None
        out = [tuple(v.shape), strides, v.storage_offset() if numel else None]
        if numel <= 500 and max(v.shape, default=0) <= 500:
            out.append(vals(v))
        if 0 < numel <= 100:
            (v * _weights(L, tuple(v.shape))).sum().backward()
            out.append(vals(x.grad))
        res.append(out)
    t, nd = res
    if isinstance(nd, tuple) and not isinstance(t, tuple):
        # Views whose byte size exceeds what NumPy can index: ndgrad refuses them.
        assert nd[0] is RuntimeError and "NumPy" in nd[1]
        assert np.prod([k or 1 for k in t[0]], dtype=object) * 8 >= I64
        return
    if isinstance(t, tuple):
        assert isinstance(nd, tuple) and nd[0] is t[0], (t, nd)
        assert first_line(t[1]) == first_line(nd[1])
    else:
        assert t == nd


# ---------------------------------------------------------------------------- unfold of 0-d
UNFOLD_0D = {
    "size1": (0, 1, 1), "size0": (0, 0, 1), "size2": (0, 2, 1), "dim_neg": (-1, 1, 1),
    "dim1": (1, 1, 1), "step0": (0, 1, 0), "step_neg": (0, 1, -1), "step2": (0, 1, 2),
    "size_neg": (0, -1, 1), "size_neg_step0": (0, -1, 0), "size2_step0": (0, 2, 0),
    "size0_step0": (0, 0, 0), "size0_step5": (0, 0, 5),
}


@pytest.mark.parametrize("name", UNFOLD_0D)
def test_unfold_of_0d_tensor_matches_torch(name):
    dim, size, step = UNFOLD_0D[name]

    def run(L):
        x = L.tensor(3.0, dtype=L.float64, requires_grad=True)
        y = x * 1
        r = outcome(lambda: y.unfold(dim, size, step))
        if r[0] != "ok":
            return r, y._version, vals(y)
        u = r[1]
        out = [tuple(u.shape), u.stride(), u._base is y, vals(u), type(u.grad_fn).__name__]
        (u * 2).sum().backward()
        return out, vals(x.grad)
    same(run)


def test_unfold_of_0d_tensor_gradcheck():
    x = ndgrad.tensor(1.5, dtype=ndgrad.float64, requires_grad=True)
    assert gradcheck(lambda t: t.unfold(0, 1, 3) * t, (x,), check_forward_ad=True)


UNFOLD_ERRORS = {
    "size_neg": (1, -1, 1), "size_neg_huge": (1, -BIG, 1), "size_too_big": (1, 5, 1),
    "size_too_big_and_step0": (1, 5, 0), "step0": (1, 2, 0), "step_neg": (1, 2, -3),
    "dim_out_of_range": (2, 1, 1), "dim_first": (5, -1, 0), "step_huge": (1, 2, BIG),
    "size0": (1, 0, 1), "size0_step_big": (1, 0, 100),
}


@pytest.mark.parametrize("name", UNFOLD_ERRORS)
def test_unfold_arguments_match_torch(name):
    dim, size, step = UNFOLD_ERRORS[name]
    same(lambda L: (lambda u: (tuple(u.shape), vals(u)))(
        arange(L, 12, 3, 4).unfold(dim, size, step)))


# ---------------------------------------------------------------------------- 0-d movedim, gather
MOVEDIM_0D = {
    "0_0": (0, 0), "m1_0": (-1, 0), "0_m1": (0, -1), "tuple": ((0,), (0,)), "empty": ((), ()),
    "out_of_range": (1, 0), "dest_out_of_range": (0, -2), "repeated": ((0, -1), (0, 0)),
    "lengths": ((0, 1), (0,)),
}


@pytest.mark.parametrize("name", MOVEDIM_0D)
def test_movedim_of_0d_tensor_matches_torch(name):
    src, dst = MOVEDIM_0D[name]

    def run(L):
        x = L.tensor(2.0, dtype=L.float64, requires_grad=True)
        r = outcome(lambda: L.movedim(x, src, dst))
        if r[0] != "ok":
            return r
        m = r[1]
        (m * 3).backward()
        return (tuple(m.shape), vals(m), m._base is x, type(m.grad_fn).__name__, vals(x.grad),
                vals(x.movedim(src, dst)))
    same(run)


def test_movedim_error_messages_show_the_given_dims():
    same(lambda L: arange(L, 6, 2, 3).movedim((0, -2), (0, 1)))
    same(lambda L: arange(L, 6, 2, 3).movedim((0, 5), (1,)))


GATHER = {
    "0d": lambda L, x: L.gather(x, 0, L.tensor(0)),
    "0d_neg_dim": lambda L, x: L.gather(x, -1, L.tensor(0)),
    "0d_index_1d": lambda L, x: L.gather(x, 0, L.tensor([0, 0, 0])),
    "0d_index_int32": lambda L, x: x.gather(0, L.tensor([0, 0], dtype=L.int32)),
    "0d_index_2d": lambda L, x: L.gather(x, 0, L.tensor([[0]])),
    "0d_dim1": lambda L, x: L.gather(x, 1, L.tensor(0)),
    "0d_index_out_of_range": lambda L, x: L.gather(x, 0, L.tensor(1)),
    "0d_index_negative": lambda L, x: L.gather(x, 0, L.tensor(-1)),
    "0d_empty_index": lambda L, x: L.gather(x, 0, L.zeros(0, dtype=L.int64)),
    "1d_input_0d_index": lambda L, x: L.gather(x.expand(3) * L.arange(3.0, dtype=L.float64),
                                               0, L.tensor(2)),
}


@pytest.mark.parametrize("name", GATHER)
def test_gather_of_0d_tensors_matches_torch(name):
    def run(L):
        x = L.tensor(2.0, dtype=L.float64, requires_grad=True)
        r = outcome(lambda: GATHER[name](L, x))
        if r[0] != "ok":
            return r
        g = r[1]
        (g * 3).sum().backward()
        return tuple(g.shape), vals(g), type(g.grad_fn).__name__, vals(x.grad)
    same(run)


def test_gather_of_0d_tensor_gradcheck():
    x = ndgrad.tensor(1.5, dtype=ndgrad.float64, requires_grad=True)
    idx = ndgrad.tensor([0, 0, 0])
    assert gradcheck(lambda t: ndgrad.gather(t, -1, idx) * t, (x,), check_forward_ad=True)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "uint8", "bool", "float32"])
@pytest.mark.parametrize("shape", [(0, 4), (1, 4), (0,), (5, 0), (0, 0, 0)])
def test_gather_index_dtypes_and_empty_indices_match_torch(dtype, shape):
    def run(L):
        x = arange(L, 12, 3, 4).requires_grad_()
        r = outcome(lambda: L.gather(x, 1 if shape == (5, 0) else 0,
                                     L.zeros(shape, dtype=getattr(L, dtype))))
        if r[0] != "ok":
            return r
        g = r[1]
        g.sum().backward()
        return tuple(g.shape), str(g.dtype).split(".")[-1], vals(g), vals(x.grad)
    same(run)


def test_gather_empty_index_still_checks_dim():
    same(lambda L: L.gather(arange(L, 12, 3, 4), 5, L.zeros(0, 4, dtype=L.int64)))


# ---------------------------------------------------------------------------- other shape ops
SHAPE_CASES = {
    "narrow_0d": lambda L: L.tensor(3.0).narrow(0, 0, 1),
    "narrow_negative_length": lambda L: arange(L, 12, 3, 4).narrow(1, 0, -1),
    "narrow_length_before_dim": lambda L: arange(L, 12, 3, 4).narrow(5, 0, -1),
    "narrow_huge_start": lambda L: arange(L, 12, 3, 4).narrow(1, 10 ** 18, 1),
    "narrow_huge_negative_start": lambda L: arange(L, 12, 3, 4).narrow(1, -10 ** 18, 1),
    "narrow_start_at_end": lambda L: arange(L, 12, 3, 4).narrow(1, 4, 0),
    "narrow_negative_start": lambda L: arange(L, 12, 3, 4).narrow(1, -4, 4),
    "narrow_too_long": lambda L: arange(L, 12, 3, 4).narrow(1, -1, 2),
    "flatten_0d_bad_start": lambda L: L.tensor(3.0).flatten(1),
    "flatten_0d_bad_end": lambda L: L.tensor(3.0).flatten(0, 5),
    "flatten_0d": lambda L: L.tensor(3.0).flatten(-1, 0),
    "permute_no_dims": lambda L: L.tensor(3.0).permute(),
    "permute_0d_empty": lambda L: L.tensor(3.0).permute(()),
    "squeeze_repeated_0d": lambda L: L.tensor(3.0).squeeze((0, -1)),
    "squeeze_repeated": lambda L: L.zeros(2, 1).squeeze((1, 0, -1)),
    "cat_0d": lambda L: L.cat([arange(L, 4), L.tensor(1.0, dtype=L.float64)]),
    "cat_0d_before_dim": lambda L: L.cat([L.tensor(1.0)], 5),
    "chunk_0d": lambda L: L.tensor(1.0).chunk(0),
    "view_negative": lambda L: arange(L, 12, 3, 4).view(-2, 6),
    "view_negative_after_infer": lambda L: arange(L, 12).view(-2, -1, -1),
    "view_two_inferred": lambda L: arange(L, 12).view(-1, -1, -2),
    "view_empty_ambiguous": lambda L: L.zeros(0).view(0, -1),
    "view_empty_ambiguous_first": lambda L: L.zeros(0).view(-1, 0),
    "view_zero_infer": lambda L: arange(L, 12).view(-1, 0),
    "view_too_large": lambda L: arange(L, 12).view(I64),
    "reshape_too_large": lambda L: arange(L, 12).reshape(I64, -1),
    "reshape_negative": lambda L: arange(L, 12).reshape(-3, 4),
    "expand_too_large": lambda L: arange(L, 4).expand(I64),
    "expand_too_large_second": lambda L: arange(L, 4).expand(-1, I64),
    "expand_numel_overflow": lambda L: L.tensor(1.0).expand(2 ** 62, 2 ** 62),
    "expand_negative": lambda L: arange(L, 12, 3, 4).expand(3, -2),
    "expand_huge_mismatch": lambda L: arange(L, 12, 3, 4).expand(2 ** 62, 2 ** 62, 4),
    "diagonal_huge_offset": lambda L: arange(L, 12, 3, 4).diagonal(10 ** 18),
    "diagonal_huge_negative_offset": lambda L: arange(L, 12, 3, 4).diagonal(-10 ** 18),
    "diagonal_dim_out_of_range": lambda L: arange(L, 12, 3, 4).diagonal(0, 0, 5),
    "diagonal_1d": lambda L: arange(L, 3).diagonal(),
    "transpose_0d": lambda L: L.tensor(3.0).transpose(0, -1),
    "transpose_0d_out_of_range": lambda L: L.tensor(3.0).transpose(0, 1),
    "select_huge": lambda L: arange(L, 12, 3, 4).select(1, 10 ** 18),
    "unsqueeze_out_of_range": lambda L: L.tensor(3.0).unsqueeze(2),
}


@pytest.mark.parametrize("name", SHAPE_CASES)
def test_shape_ops_with_bad_arguments_match_torch(name):
    def run(L):
        r = SHAPE_CASES[name](L)
        return [(tuple(t.shape), vals(t)) for t in r] if isinstance(r, tuple) else \
            (tuple(r.shape), vals(r))
    same(run)
