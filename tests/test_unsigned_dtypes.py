"""uint16, uint32 and uint64: torch's "limited support" unsigned dtypes, surface for surface
(Note [Barebones unsigned dtypes] in ndgrad/_dtype.py).

Each case is one expression run twice, once with ``T`` bound to torch and once to ndgrad (``a``
a small tensor of the dtype under test, ``U`` the dtype, ``np`` NumPy): both must give the
same values and dtype, or both raise the same error type with the same message.
"""

import io
import pickle
import warnings

import numpy as np
import pytest
import torch

import ndgrad

# Works in torch: creation, casts, copies, views, printing, sorting, the float ops.
WORKS = [
    "T.tensor([1, 2, 3], dtype=U)", "T.tensor([-1], dtype=T.uint16)", "T.tensor(7, dtype=U)",
    "T.tensor([-1], dtype=T.uint32)", "T.tensor([2 ** 64 - 1, True], dtype=T.uint64)",
    "T.zeros(2, 2, dtype=U)", "T.ones(2, dtype=U)", "T.empty(2, dtype=U).shape",
    "T.full((2,), 7, dtype=U)", "T.full((2,), -1, dtype=U)", "T.zeros_like(a)", "T.ones_like(a)",
    "T.full_like(a, 3)", "T.empty_like(a).dtype", "a.new_zeros(2)", "a.new_full((2,), 3)",
    "a.new_tensor([1])", "a.new_empty(2).dtype", "T.randint(0, 5, (3,), dtype=U).dtype",
    "T.from_numpy(np.array([1, 2], dtype=U_np))", "T.as_tensor(np.array([1, 2], dtype=U_np))",
    "a.numpy()", "a.tolist()", "a[0].item()", "int(a[0])", "float(a[0])", "bool(a[0])",
    "[1, 2, 3, 4][a[0]]", "a.to(T.float32)", "a.to(T.float64)", "a.to(T.float16)",
    "a.to(T.bfloat16)", "a.to(T.complex64)", "a.to(T.int8)", "a.to(T.int64)", "a.to(T.uint8)",
    "a.to(T.bool)", "a.float()", "a.long()", "a.type(T.int32)",
    "T.tensor([1.5, 2.7]).to(U)", "T.tensor([-1]).to(U)", "T.tensor([3e4]).to(U)",
    "T.tensor([1, 2], dtype=T.int32).to(U)", "T.tensor([True, False]).to(U)",
    "a.to(T.uint32 if U is not T.uint32 else T.uint16)",
    "repr(a)", "str(a)", "repr(T.zeros(2, 2, dtype=U))", "repr(a[0])", "a.type()",
    "U.itemsize", "U.is_signed", "U.is_floating_point", "U.is_complex", "str(U)",
    "a.element_size()", "a.nbytes", "a.storage().type()", "a.untyped_storage().nbytes()",
    "T.from_dlpack(a)", "T.frombuffer(bytearray(8), dtype=U)",
    "T.empty_strided((2,), (1,), dtype=U).dtype", "T.asarray(np.array([7], dtype=U_np))",
    "T.tensor([1, 2], dtype=T.uint16).new_tensor([1.0, 2.5])", "T.tensor(a.numpy())",
    "a.sum(dtype=T.int32)", "T.sum(a)", "a.cumsum(0, dtype=T.int64)", "a.int()", "a.byte()",
    "a.half()", "a.is_signed()", "a.is_floating_point()",
    "(T.iinfo(U).min, T.iinfo(U).max, T.iinfo(U).bits, T.iinfo(U).dtype)", "repr(T.iinfo(U))",
    "a == a", "a != a", "a == 2", "a != 2", "a.eq(a)", "a.ne(1.5)", "a.eq(1.5)",
    "T.equal(a, a)", "T.allclose(a, a)", "T.isclose(a, a)",
    "a[1]", "a[1:]", "a[T.tensor([0, 2])]", "a[T.tensor([True, False, True])]", "a[..., None]",
    "a.clone()", "a.detach()", "T.zeros(3, dtype=U).copy_(a)",
    "T.zeros(3, dtype=U).copy_(T.ones(3))",
    "T.zeros(3, dtype=U).copy_(T.tensor([1, 2, 3]))", "a.clone().fill_(4)", "a.clone().zero_()",
    "T.cat([a, a])", "T.concat([a, a])", "T.stack([a, a])", "T.hstack([a, a])",
    "T.dstack([a, a])", "a.view(3, 1)", "a.reshape(1, 3)", "a.reshape(1, 3).t()",
    "a.reshape(1, 3).t().contiguous()", "a.reshape(1, 3).permute(1, 0)", "a.unsqueeze(0)",
    "a.expand(2, 3)", "T.broadcast_to(a, (2, 3))", "a.flatten()", "a.narrow(0, 0, 1)",
    "a.select(0, 1)", "a.unbind()", "a.chunk(3)", "a.split(1)", "a.split([1, 2])",
    "a.movedim(0, 0)", "a.unfold(0, 1, 1)", "a.as_strided((2,), (1,))", "a.roll(1)",
    "a.repeat(2)", "a.tile(2)", "a.repeat_interleave(2)", "a.diag()",
    "T.nn.functional.pad(a, (1, 1))", "a.view(T.uint8)",
    "T.where(T.tensor([True, False, True]), a, a)", "T.where(T.tensor([True, False, True]), a, 0)",
    "a.sort()", "a.sort(descending=True)", "a.argsort()", "T.msort(a)", "a.unique()",
    "a.unique(return_counts=True)", "T.unique_consecutive(a)",
    "a.sum()", "a.sum(0)", "a.sum(0, keepdim=True)", "a.sum(dtype=T.int64)",
    "a.sum(dim=0, dtype=T.float32)", "a.prod()", "a.cumsum(0)", "a.cumprod(0)", "a.nansum()",
    "a.any()", "a.all()", "a.any(0)", "a.all(0)",
    "a * a", "a * 2", "a * True", "a * -1", "a * 70000", "a.clone().mul_(2)",
    "a * T.tensor(2)", "a * T.tensor(2, dtype=T.uint32)", "a == T.tensor(2)",
    "a & a", "a | a", "a ^ a", "a & 3",
    "a / a", "a / 2", "a * 2.5", "a + 1.5", "a.true_divide(a)", "a + T.tensor([1.0])",
    "a * T.tensor([1.0], dtype=T.float16)", "T.atan2(a, a)",
    "T.empty(2, dtype=U).random_(10).dtype", "a.new_ones(2)", "T.full((2,), 1.5, dtype=U)",
    "T.zeros(2, dtype=U).fill_(2.0)", "a.exp()", "a.sqrt()", "a.sin()", "a.sigmoid()", "a.log()",
    "a.reciprocal()", "a.rsqrt()", "a.tanh()", "a.erf()", "a.log1p()", "a.expm1()", "a.atan()",
    "a.sinh()", "a.log2()", "a.exp2()", "a.lgamma()", "a.digamma()", "a.i0()", "a.sinc()",
    "T.special.expit(a)", "a.deg2rad()", "a.nan_to_num()", "a.clone().mul_(a)",
    "T.mul(a, 3)", "a.clone().bitwise_and_(a)", "T.where(a == 1, a, a)", "a.float().int()",
    "a.positive()", "a.fix()", "a.squeeze()", "a.swapaxes(0, 0)", "a.reshape(1, 3).T",
    "a.reshape(1, 3).H",
    "T.atleast_2d(a)", "T.vstack([a, a])", "T.column_stack([a, a])",
    "T.block_diag(a.reshape(1, 3))",
    "T.cartesian_prod(a, a)", "T.meshgrid(a, a, indexing='ij')", "a.contiguous()",
    "T.flatten(a.reshape(3, 1))", "a.view(-1)", "a.reshape(3, 1).squeeze(1)", "a.ravel()",
    "T.tensor_split(a, 2)", "a.outer(a)", "T.kron(a, a)", "a.copysign(a)", "a.xlogy(a)",
    "a.angle()", "a.floor()", "a.ceil()", "a.round()", "a.trunc()", "a.real", "a.conj()",
    "a.isnan()", "a.isinf()", "T.isfinite(a)", "T.isreal(a)", "a.signbit()", "a.float().mean()",
    "T.result_type(a, 1)", "T.result_type(a, True)", "T.result_type(a, 1.0)",
    "T.result_type(a, 1j)", "T.result_type(a, T.tensor(1))", "T.result_type(a, T.tensor(1.0))",
    "T.result_type(a[0], T.tensor([1]))",
]

# Raises in torch ("not implemented for 'UInt16'", the promotion barrier, dtype checks).
RAISES = [
    "T.arange(5, dtype=U)", "T.linspace(0, 4, 5, dtype=U)", "T.eye(2, dtype=U)",
    "T.rand(2, dtype=U)", "a < 2", "a > a", "a <= a", "a >= a", "a.ge(1)", "a.lt(a)",
    "a[a > 1]", "a.clone().__setitem__(T.tensor([0]), 5)", "a.flip(0)", "a.topk(1)",
    "a.mean()", "a.max()", "a.min()", "a.max(0)", "a.amax()", "a.argmax()", "a.argmin()",
    "T.maximum(a, a)", "T.minimum(a, a)", "a + a", "a + 1", "a - a", "a - 1", "T.rsub(a, a)",
    "a // a", "a // 2", "a % a", "-a", "a.neg()", "a.abs()", "a ** 2", "a.square()",
    "~a", "a << 1", "a >> 1", "a.clamp(1, 2)", "a.clamp_min(1)", "T.nn.functional.relu(a)",
    "a.masked_fill(T.tensor([True, False, True]), 3)", "a.nonzero()", "a.count_nonzero()",
    "a.gather(0, T.tensor([0, 1]))", "a.index_select(0, T.tensor([0, 1]))",
    "T.zeros(3, dtype=U).scatter(0, T.tensor([0, 1]), a)",
    "a.clone().index_put_((T.tensor([0]),), T.tensor([9], dtype=U))",
    "a.reshape(1, 3).tril()", "a.sign()", "a.bincount()", "a.histc()", "a @ a",
    "a.index_fill(0, T.tensor([0]), 7)", "a.take(T.tensor([0]))", "T.searchsorted(a, a)",
    "a.kthvalue(1)", "a.median()", "T.fmod(a, a)", "a.frac()", "T.logical_and(a, a)",
    "T.logical_not(a)", "T.diff(a)", "a.cummax(0)", "a.std()", "a.var()",
    "a.sum(dtype=U)", "T.tensor([1, 2]).sum(dtype=U)", "a.div(a, rounding_mode='trunc')",
    "a.requires_grad_()", "T.zeros(2, dtype=U, requires_grad=True)",
    "T.tensor([2 ** 63 + 5], dtype=T.uint32)", "T.tensor(70000, dtype=T.uint16)",
    "T.full((1,), 70000, dtype=T.uint16)", "T.tensor([-1.0], dtype=U)",
    "T.tensor([1.5], dtype=T.uint64)", "T.tensor([-1], dtype=T.uint64)",
    "T.tensor([1], dtype=T.uint64).new_tensor([1.0, 2.5])",
    "T.tensor([2 ** 64], dtype=U)", "T.full((1,), 2 ** 64, dtype=U)",
    "a + T.tensor([1], dtype=T.int32)", "a + T.tensor([1], dtype=T.uint8)",
    "a * T.tensor([1])", "a.to(T.int64) * a", "a * T.tensor([True, False, True])",
    "a == a.to(T.int64)", "T.cat([a, a.to(T.int32)])", "a * a.to(T.complex64)",
    "T.result_type(a, T.tensor([True]))", "a.to(T.uint32 if U is not T.uint32 else T.uint16) * a",
    "a.amax(0)", "a.amin()", "a.min(0)", "a.clamp_max(1)", "a.div(a, rounding_mode='floor')",
    "a.reshape(1, 3).mm(a.reshape(3, 1))", "a.reshape(1, 3).triu()", "a.cummin(0)",
    "a.aminmax()", "T.bucketize(a, a)", "a.bitwise_left_shift(a)", "T.remainder(a, 2)",
    "a.logical_or(a)", "a.logical_xor(a)", "a.bitwise_not()", "a.argmin(0)",
    "a.cumsum(0, dtype=U)", "a.prod(dtype=U)", "a.cumprod(0, dtype=U)", "a.nansum(dtype=U)",
    "T.empty(2, dtype=U).random_()", "T.empty(2, dtype=U).uniform_()",
    "T.empty(2, dtype=U).normal_()", "T.randperm(3, dtype=U)", "T.empty(2, dtype=U).bernoulli_()",
    "a.clone().scatter_add_(0, T.tensor([0]), a[:1])", "a.reshape(3, 1).mv(a[:1])",
    "a.clone().put_(T.tensor([0]), a[:1])", "a.clone().index_add_(0, T.tensor([0]), a[:1])",
    "a.masked_scatter(T.tensor([True, False, True]), a)", "a.unsqueeze(0).expand(2, 3).triu()",
    "a.clone().masked_fill_(T.tensor([True, False, True]), 1)", "a.float().to(U).neg()",
    "a.index_copy(0, T.tensor([0]), a[:1])", "a.reshape(1, 3).trace()",
    "a.reshape(1, 3) @ a.reshape(3, 1)", "a.mode()", "a.cumsum(0).to(U) + a",
    "T.nn.functional.one_hot(a)", "T.take_along_dim(a, T.tensor([0, 1]))",
    "a.renorm(2, 0, 1)", "a.lerp(a, 0.5)", "a.logcumsumexp(0)",
    "a.clone().clamp_(0, 1)", "a.clone().add_(1)", "a.clone().sub_(a)", "a.clone().mul_(1.5)",
    "a.clone().div_(2)", "a.hypot(a)", "a.gcd(a)", "a.lcm(a)", "a.heaviside(a)",
    "a.bitwise_and(T.tensor([1]))", "a.sgn()",
]

PROMOTE = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
           "float64", "complex64", "complex128", "uint16", "uint32", "uint64"]
UNSIGNED = ["uint16", "uint32", "uint64"]


def _run(lib, expr, name):
    env = {"T": lib, "np": np, "U": getattr(lib, name), "U_np": np.dtype(name),
           "a": lib.tensor([1, 2, 3], dtype=getattr(lib, name))}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # TypedStorage's deprecation, x.T's
            return "ok", eval(expr, env)
    except Exception as e:           # noqa: BLE001 - the error itself is compared
        return "error", (type(e).__name__, str(e).splitlines()[0] if str(e) else "")


def _norm(v):
    """Plain data for comparison: tensors as (dtype name, nested list), dtypes by name."""
    if isinstance(v, (torch.Tensor, ndgrad.Tensor)):
        return ("tensor", str(v.dtype).split(".")[-1], list(v.shape), v.tolist())
    if isinstance(v, (torch.dtype, ndgrad.dtype)):
        return ("dtype", str(v).split(".")[-1])
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.name, v.tolist())
    if isinstance(v, (tuple, list)):
        return type(v).__name__, [_norm(x) for x in v]
    if isinstance(v, str):
        return v.replace("torch.", "").replace("ndgrad.", "")
    if isinstance(v, (torch.Size, ndgrad.Size)):
        return tuple(v)
    return v


def _check(expr, name, want):
    kt, vt = _run(torch, expr, name)
    kn, vn = _run(ndgrad, expr, name)
    assert kt == want, (expr, vt)     # the case list itself describes torch
    if kt == "error":
        assert kn == "error", (expr, _norm(vn))
        assert vn[0] == vt[0], (expr, vn, vt)
        assert vn[1].replace("ndgrad", "torch") == vt[1], (expr, vn, vt)
    else:
        assert kn == "ok", (expr, vn)
        nt, nn = _norm(vt), _norm(vn)
        if isinstance(vt, torch.Tensor) and vt.is_floating_point():
            # float32 transcendentals differ from torch's by an ulp in general, not only here
            assert nn[:3] == nt[:3], expr
            np.testing.assert_allclose(nn[3], nt[3], rtol=1e-6)
        else:
            assert nn == nt, expr


@pytest.mark.parametrize("name", UNSIGNED)
@pytest.mark.parametrize("expr", WORKS)
def test_works_as_torch(expr, name):
    _check(expr, name, "ok")


@pytest.mark.parametrize("name", UNSIGNED)
@pytest.mark.parametrize("expr", RAISES)
def test_raises_as_torch(expr, name):
    _check(expr, name, "error")


@pytest.mark.parametrize("name", UNSIGNED)
@pytest.mark.parametrize("other", PROMOTE)
def test_promotion_and_casting_rules(name, other):
    for fn in ("promote_types", "can_cast"):
        for pair in ((name, other), (other, name)):
            kt, vt = _run(torch, f"T.{fn}(T.{pair[0]}, T.{pair[1]})", name)
            kn, vn = _run(ndgrad, f"T.{fn}(T.{pair[0]}, T.{pair[1]})", name)
            assert (kn, _norm(vn)) == (kt, _norm(vt)), (fn, pair)


@pytest.mark.parametrize("name", UNSIGNED)
def test_big_values_round_trip(name):
    top = np.iinfo(name).max
    arr = np.array([0, 1, top - 1, top], dtype=name)
    t = ndgrad.from_numpy(arr)
    assert t.dtype is getattr(ndgrad, name)
    assert t.numpy().dtype == arr.dtype and np.array_equal(t.numpy(), arr)
    assert t.tolist() == torch.from_numpy(arr).tolist()
    assert t[3].item() == int(top) and type(t[3].item()) is int
    assert repr(t) == repr(torch.from_numpy(arr)).replace("torch", "ndgrad")
    assert t.to(ndgrad.float64).tolist() == torch.from_numpy(arr).double().tolist()
    assert t.to(ndgrad.int64).tolist() == torch.from_numpy(arr).long().tolist()
    assert ndgrad.full((1,), -1, dtype=getattr(ndgrad, name)).item() == int(top)


@pytest.mark.parametrize("name", UNSIGNED)
def test_serialization(name, tmp_path):
    t = ndgrad.tensor([1, 2, 3], dtype=getattr(ndgrad, name))
    buf = io.BytesIO()
    ndgrad.save(t, buf)
    buf.seek(0)
    back = ndgrad.load(buf)
    assert back.dtype is t.dtype and back.tolist() == [1, 2, 3]
    assert pickle.loads(pickle.dumps(t.dtype)) is t.dtype
    # files torch writes load in ndgrad and the other way round
    buf = io.BytesIO()
    torch.save(torch.tensor([4, 5], dtype=getattr(torch, name)), buf)
    buf.seek(0)
    got = ndgrad.load(buf)
    assert got.dtype is t.dtype and got.tolist() == [4, 5]
    path = tmp_path / "t.pt"
    ndgrad.save(t, str(path))
    back = torch.load(str(path))
    assert back.dtype == getattr(torch, name) and back.tolist() == [1, 2, 3]


def test_checks_cost_nothing_until_an_unsigned_tensor_exists():
    """Note [Barebones unsigned dtypes]: importing ndgrad (and its subpackages) and working
    with other dtypes leaves the hot path's flag off; the first uint16 tensor turns it on."""
    import subprocess
    import sys
    code = ("import ndgrad, ndgrad.nn, ndgrad.optim, ndgrad.func\n"
            "from ndgrad.ops import _dispatch\n"
            "x = ndgrad.ones(3, requires_grad=True); (x * 2).sum().backward()\n"
            "ndgrad.tensor([1, 2], dtype=ndgrad.int32) + 1\n"
            "assert not _dispatch._UNSIGNED\n"
            "ndgrad.zeros(2, dtype=ndgrad.uint16)\n"
            "assert _dispatch._UNSIGNED\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", UNSIGNED)
def test_safetensors_both_ways(name):
    import safetensors.torch             # the test extra installs it

    from ndgrad.utils import safetensors as st
    top = int(np.iinfo(name).max)
    t = ndgrad.tensor([0, 1, top], dtype=getattr(ndgrad, name))
    back = safetensors.torch.load(st.save({"t": t}))["t"]
    assert back.dtype == getattr(torch, name) and back.tolist() == [0, 1, top]
    blob = safetensors.torch.save({"u": torch.tensor([5, top], dtype=getattr(torch, name))})
    got = st.load(blob)["u"]
    assert got.dtype is getattr(ndgrad, name) and got.tolist() == [5, top]
