"""torch's alias spellings (``arccos``, ``divide``, ``greater``, ``fix`` ...), top-level
predicates and helpers (ndgrad/_compat.py), and the small Tensor predicates and layout queries
(ndgrad/_compat_methods.py), each against torch."""

import array
import warnings

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome

UNARY = {"absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
         "arcsinh": "asinh", "arctan": "atan", "arctanh": "atanh", "negative": "neg",
         "fix": "trunc"}
BINARY = {"divide": "div", "multiply": "mul", "subtract": "sub", "greater": "gt",
          "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne"}
DATA = {"arccosh": [1.5, 2.0, 3.25], "arccos": [-0.5, 0.25, 0.75],
        "arcsin": [-0.5, 0.25, 0.75], "arctanh": [-0.5, 0.25, 0.75]}


def _pair(m, values, rg=True):
    return m.tensor(values, dtype=m.float64, requires_grad=rg)


@pytest.mark.parametrize("alias", sorted(UNARY))
def test_unary_alias_values_gradients_and_inplace(alias):
    values = DATA.get(alias, [-1.5, 0.25, 2.3])
    res = {}
    for m in (torch, ndgrad):
        x = _pair(m, values)
        y = getattr(m, alias)(x)
        y.sum().backward()
        z = x.detach().clone()
        getattr(z, alias + "_")()
        res[m.__name__] = (y.detach().numpy(), x.grad.numpy(), z.numpy(),
                           getattr(x, alias)().detach().numpy())
    for a, b in zip(res["torch"], res["ndgrad"]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    # finite differences (float64)
    x = ndgrad.tensor(values, dtype=ndgrad.float64, requires_grad=True)
    assert ndgrad.autograd.gradcheck(getattr(ndgrad, alias), (x,))


@pytest.mark.parametrize("alias", sorted(UNARY))
def test_unary_alias_errors_name_the_alias(alias):
    for call in (lambda m: getattr(m, alias)("a"), lambda m: getattr(m.ones(2), alias)(1)):
        t, n = outcome(lambda c=call: c(torch)), outcome(lambda c=call: c(ndgrad))
        assert t[0] == n[0] == "TypeError"
    assert alias in outcome(lambda: getattr(ndgrad, alias)("a"))[1]


@pytest.mark.parametrize("alias", sorted(BINARY))
def test_binary_alias_matches_canonical_and_torch(alias):
    a, b = [1.0, -2.0, 3.5], [1.0, 2.0, -1.0]
    res = {}
    for m in (torch, ndgrad):
        x, y = _pair(m, a), _pair(m, b)
        out = getattr(m, alias)(x, y)
        meth = getattr(x, alias)(y)
        scalar = getattr(m, alias)(x, 2)
        z = x.detach().clone()
        getattr(z, alias + "_")(y.detach())
        outs = [out, meth, scalar, z]
        if out.dtype.is_floating_point:
            out.sum().backward()
            outs += [x.grad, y.grad]
        res[m.__name__] = [o.detach().numpy() for o in outs]
        res[m.__name__ + "dtype"] = str(out.dtype).split(".")[1]
    assert res["torchdtype"] == res["ndgraddtype"]
    for p, q in zip(res["torch"], res["ndgrad"]):
        np.testing.assert_array_equal(p, q)
    err = outcome(lambda: getattr(ndgrad, alias)(ndgrad.ones(2), "s"))
    assert err[0] == "TypeError" and alias in err[1]
    err = outcome(lambda: getattr(ndgrad.ones(2), alias + "_")("s"))
    assert err[0] == "TypeError" and alias + "_" in err[1]


def test_keyword_arguments_and_out_of_aliases():
    for m in (torch, ndgrad):
        x = m.tensor([7.0, -7.0])
        assert m.divide(x, 2, rounding_mode="floor").tolist() == [3.0, -4.0]
        assert x.divide(2, rounding_mode="trunc").tolist() == [3.0, -3.0]
        assert m.subtract(x, 1, alpha=2).tolist() == [5.0, -9.0]
        o = m.zeros(2)
        m.fix(m.tensor([1.5, -1.5]), out=o)
        assert o.tolist() == [1.0, -1.0]
        assert m.concatenate([x, x], axis=0).tolist() == m.concat((x, x)).tolist()
        y = x.clone()
        m.negative_(y)
        m.arctan_(y)
        m.fix_(y)
        assert y.tolist() == [-1.0, 1.0]
    assert outcome(lambda: ndgrad.concat(ndgrad.ones(2)))[0] == \
        outcome(lambda: torch.concat(torch.ones(2)))[0] == "TypeError"


def test_bitwise_not_method():
    for m in (torch, ndgrad):
        assert m.tensor([0, 5]).bitwise_not().tolist() == [-1, -6]
        assert m.tensor([True]).bitwise_not().tolist() == [False]


def _same(fn):
    t, n = outcome(lambda: fn(torch)), outcome(lambda: fn(ndgrad))
    assert t == n, (t, n)


@pytest.mark.parametrize("fn", [
    lambda m: m.numel(m.ones(2, 3)),
    lambda m: m.detach(m.ones(2, requires_grad=True)).requires_grad,
    lambda m: (m.is_floating_point(m.ones(1)), m.is_floating_point(m.ones(1, dtype=m.int64))),
    lambda m: (m.is_complex(m.ones(1)), m.is_complex(m.ones(1, dtype=m.complex64))),
    lambda m: (m.is_conj(m.ones(1)), m.is_neg(m.ones(1)), m.is_inference(m.ones(1))),
    lambda m: (m.get_device(m.ones(1)), m.is_distributed(m.ones(1))),
    lambda m: (m.is_storage(m.ones(1).untyped_storage()), m.is_storage(m.ones(1)),
               m.is_storage(3)),
    lambda m: m.is_nonzero(m.tensor([0.5])),
    lambda m: m.is_nonzero(m.tensor([0])),
    lambda m: m.is_nonzero(m.tensor([1, 2])),
    lambda m: m.is_nonzero(m.tensor([])),
    lambda m: m.ones(1).is_nonzero(),
    lambda m: (m.is_same_size(m.ones(2), m.ones(2)), m.ones(2).is_same_size(m.ones(3))),
    lambda m: [m.tensor([1], dtype=d).is_signed() for d in
               (m.uint8, m.bool, m.int8, m.int64, m.float16, m.float32, m.complex64)],
    lambda m: m.is_signed(m.ones(1)),
    lambda m: [m.can_cast(a, b) for a in (m.float64, m.int32, m.bool, m.complex64, m.uint8)
               for b in (m.float32, m.int64, m.bool, m.complex128, m.int8)],
    lambda m: m.numel("a"),
    lambda m: m.detach(1.0),
    lambda m: m.get_device([1]),
    lambda m: m.is_same_size(m.ones(1), "a"),
    lambda m: m.ones(1).is_same_size(2),
])
def test_predicates_match_torch(fn):
    _same(fn)


def test_tensor_flags_and_queries():
    for m in (torch, ndgrad):
        x = m.ones(2, 3)
        assert x.is_cpu is True and x.name is None
        for flag in ("is_meta", "is_mkldnn", "is_quantized", "is_nested", "is_xla", "is_xpu",
                     "is_mps", "is_vulkan", "is_ipu", "is_maia", "is_mtia", "is_sparse_csr"):
            assert getattr(x, flag) is False, flag
        with pytest.warns(UserWarning, match="volatile was removed"):
            assert x.volatile is False
        assert x.const_data_ptr() == x.data_ptr()
        assert x.is_set_to(x) and not x.is_set_to(x.clone()) and not x.is_set_to(x.view(3, 2))
        assert x[0].is_set_to(x[0]) and not x[0].is_set_to(x[1])
        assert (x.sparse_dim(), x.dense_dim()) == (0, 2)
        assert x.dim_order() == (0, 1)
        assert x.t().dim_order() == (1, 0)
        c = m.ones(2, 3, 4, 5).to(memory_format=m.channels_last)
        assert c.dim_order() == (0, 2, 3, 1)
        assert m.ones(2, 1, 3).dim_order() == (0, 1, 2)


@pytest.mark.parametrize("name", ["indices", "values", "coalesce"])
def test_sparse_accessors_on_dense_raise_torch_errors(name):
    _same(lambda m: getattr(m.ones(2), name)())


def test_chalf_and_record_stream():
    assert outcome(lambda: torch.ones(1).record_stream(None)) == \
        outcome(lambda: ndgrad.ones(1).record_stream(None))
    # ndgrad has no complex32: chalf raises rather than pretending
    assert outcome(lambda: ndgrad.ones(1).chalf())[0] == "TypeError"


@pytest.mark.parametrize("shape,wrap,value", [
    ((3, 3), False, 5.0), ((5, 2), True, 1.0), ((7, 3), True, 2.0), ((7, 3), False, 2.0),
    ((2, 5), True, 3.0), ((2, 2, 2), False, 1.0), ((2,), False, 1.0), ((2, 3, 2), False, 1.0)])
def test_fill_diagonal_matches_torch(shape, wrap, value):
    def run(m):
        x = m.arange(float(np.prod(shape)), dtype=m.float64).reshape(shape).requires_grad_()
        y = x * 1
        y.fill_diagonal_(value, wrap=wrap)
        (y * y).sum().backward()
        return y.detach().numpy().tolist(), x.grad.numpy().tolist()
    _same(run)


def test_fill_diagonal_int_tensor_and_leaf_error():
    _same(lambda m: m.zeros(3, 3, dtype=m.int64).fill_diagonal_(7).tolist())
    _same(lambda m: m.zeros(2, 2, requires_grad=True).fill_diagonal_(1))


def test_hardshrink_prelu_methods():
    for m in (torch, ndgrad):
        x = m.tensor([-1.0, -0.2, 0.3, 2.0], dtype=m.float64, requires_grad=True)
        w = m.tensor([0.25], dtype=m.float64, requires_grad=True)
        h, p = x.hardshrink(0.5), x.prelu(w)
        (h.sum() + p.sum()).backward()
        if m is torch:
            ref = (h.detach().numpy(), p.detach().numpy(), x.grad.numpy(), w.grad.numpy())
        else:
            for a, b in zip(ref, (h.detach().numpy(), p.detach().numpy(), x.grad.numpy(),
                                  w.grad.numpy())):
                np.testing.assert_allclose(a, b)


def test_orgqr_is_householder_product():
    a = np.random.default_rng(0).standard_normal((4, 3))
    res = []
    for m in (torch, ndgrad):
        qr, tau = m.geqrf(m.tensor(a))
        res.append((m.orgqr(qr, tau).numpy(), qr.orgqr(tau).numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], atol=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], atol=1e-12)


@pytest.mark.parametrize("name", ["solve", "lstsq", "eig", "symeig", "matrix_rank"])
def test_removed_functions_raise_torch_errors(name):
    _same(lambda m: getattr(m, name)(m.eye(2), m.eye(2)))
    if hasattr(torch.Tensor, name):
        _same(lambda m: getattr(m.eye(2), name)(m.eye(2)))


def test_range_is_inclusive_and_warns():
    for args, kw in (((0, 3), {}), ((0, 1, 0.25), {}), ((0, 1, 0.3), {}), ((3, 0, -1), {}),
                     ((0, 3), {"dtype": "int64"}), ((1, 2), {"requires_grad": True})):
        res = []
        for m in (torch, ndgrad):
            k = {a: getattr(m, b) if a == "dtype" else b for a, b in kw.items()}
            with pytest.warns(UserWarning, match="range is deprecated"):
                r = m.range(*args, **k)
            res.append((r.tolist(), str(r.dtype).split(".")[1], r.requires_grad))
        assert res[0] == res[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in ((3, 0), (0, 3, 0), (0, 3, -1)):
            _same(lambda m, a=args: m.range(*a))


def test_asarray_sharing_copy_dtype_and_requires_grad():
    for m in (torch, ndgrad):
        t = m.ones(2)
        assert m.asarray(t) is t and m.asarray(t, dtype=m.float32) is t
        assert m.asarray(t, copy=True) is not t
        a = np.zeros(3)
        x = m.asarray(a)
        x[0] = 5.0
        assert a[0] == 5.0 and x.dtype == m.float64
        y = m.asarray(a, copy=True)
        y[1] = 7.0
        assert a[1] == 0.0
        assert m.asarray(a, dtype=m.float32).dtype == m.float32
        assert m.asarray(a[::2]).tolist() == [5.0, 0.0]
        r = m.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="unspecified requires_grad"):
            assert m.asarray(r) is r
        c = m.asarray(r, dtype=m.float64)
        assert c.requires_grad and c.grad_fn is not None
        c.sum().backward()
        assert r.grad.tolist() == [1.0, 1.0]
        assert not m.asarray(r, requires_grad=False).requires_grad
        assert m.asarray(np.ones(2, dtype=np.float32), requires_grad=True).requires_grad
        assert m.asarray([1.0, 2.0]).dtype == m.float32
        assert m.asarray([1, 2]).dtype == m.int64
        assert m.asarray(np.float64(2.0)).dtype == m.float64
        assert m.asarray(array.array("f", [1.0, 2.0])).tolist() == [1.0, 2.0]
    for fn in (lambda m: m.asarray(m.ones(2), dtype=m.float64, copy=False),
               lambda m: m.asarray(np.ones(2), dtype=m.float32, copy=False),
               lambda m: m.asarray([1.0], copy=False),
               lambda m: m.asarray(bytearray(b"ab"))):
        _same(fn)


def test_frombuffer_shares_and_checks():
    for m in (torch, ndgrad):
        b = bytearray(8)
        t = m.frombuffer(b, dtype=m.float32, count=1, offset=4)
        t[0] = 1.0
        assert np.frombuffer(b, dtype=np.float32).tolist() == [0.0, 1.0]
        assert m.frombuffer(b"abcd", dtype=m.uint8).tolist() == [97, 98, 99, 100]
    b = bytearray(8)
    for fn in (lambda m: m.frombuffer(b"", dtype=m.float32),
               lambda m: m.frombuffer(b, dtype=m.float32, offset=9),
               lambda m: m.frombuffer(b, dtype=m.float32, offset=4, count=2),
               lambda m: m.frombuffer(b, dtype=m.float32, count=0),
               lambda m: m.frombuffer(b, dtype=m.float64, offset=1),
               lambda m: m.frombuffer([1], dtype=m.float32),
               lambda m: m.frombuffer(b, dtype=m.float32, requires_grad=True).requires_grad):
        _same(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.vander(m.tensor([1.0, 2.0, 3.0])).tolist(),
    lambda m: m.vander(m.tensor([1, 2, 3]), N=2, increasing=True).tolist(),
    lambda m: (m.vander(m.tensor([True, False])).tolist(),
               str(m.vander(m.tensor([True])).dtype)[-5:]),
    lambda m: m.vander(m.ones(2), N=0).shape,
    lambda m: m.vander(m.tensor([2.0, 3.0]), N=1).tolist(),
    lambda m: m.vander(m.ones(2, 2)),
    lambda m: m.vander(m.ones(2), N=-1),
])
def test_vander_matches_torch(fn):
    _same(fn)


def test_vander_gradient():
    x = ndgrad.tensor([0.5, -1.5, 2.0], dtype=ndgrad.float64, requires_grad=True)
    assert ndgrad.autograd.gradcheck(lambda v: ndgrad.vander(v, N=4), (x,))


def test_global_switches_match_torch():
    try:
        for m in (torch, ndgrad):
            assert m.is_warn_always_enabled() is False
            m.set_warn_always(True)
            assert m.is_warn_always_enabled() is True
            m.set_warn_always(False)
            assert m.get_deterministic_debug_mode() == 0
            m.set_deterministic_debug_mode("warn")
            assert m.are_deterministic_algorithms_enabled()
            assert m.is_deterministic_algorithms_warn_only_enabled()
            m.set_deterministic_debug_mode(2)
            assert m.get_deterministic_debug_mode() == 2
            m.set_deterministic_debug_mode("default")
            assert not m.are_deterministic_algorithms_enabled()
            m.set_anomaly_enabled(True, False)
            assert m.is_anomaly_enabled() and not m.is_anomaly_check_nan_enabled()
            m.set_anomaly_enabled(False)
            assert not m.is_anomaly_enabled()
    finally:
        torch.set_deterministic_debug_mode(0)
        ndgrad.set_deterministic_debug_mode(0)
        torch.set_anomaly_enabled(False)
        ndgrad.set_anomaly_enabled(False)
    for fn in (lambda m: m.set_warn_always("x"), lambda m: m.set_deterministic_debug_mode(7),
               lambda m: m.set_deterministic_debug_mode("x"),
               lambda m: m.set_deterministic_debug_mode(1.0),
               lambda m: m.set_flush_denormal("x")):
        _same(fn)
    # NumPy cannot flush denormals: False, torch's answer where the CPU lacks the feature
    assert ndgrad.set_flush_denormal(True) is False


@pytest.mark.parametrize("expr", [
    "m.sym_int(2.7)", "m.sym_int(-2.7)", "m.sym_int(m.tensor(2.5))", "m.sym_float(3)",
    "m.sym_float(m.tensor(2.5))", "m.sym_max(1, 2)", "m.sym_max(1, 2.0)", "m.sym_max(3, 2.0)",
    "m.sym_min(1, 2.0)", "m.sym_min(np.int64(4), 3)", "m.sym_not(True)", "m.sym_not(0)",
    "m.sym_sqrt(4)", "m.sym_sqrt(m.tensor(2.5))", "m.sym_ite(True, 1, 2)", "m.sym_ite(False, 1, 2)",
    "m.sym_sum([1, 2, 3])", "m.sym_sum([1.5, 2])", "m.sym_sum([])",
    "m.sym_sum([m.tensor(1.5), m.tensor(2.0)]).item()",
    "m.sym_ite(1, 1, 2)", "m.sym_max('a', 1)", "m.sym_max(m.ones(()), 1)"])
def test_sym_helpers_match_torch(expr):
    t = outcome(lambda: eval(expr, {"m": torch, "np": np}))
    n = outcome(lambda: eval(expr, {"m": ndgrad, "np": np}))
    assert t[0] == n[0]
    if t[0] == "ok":
        assert t[1] == n[1] and type(t[1]) is type(n[1])
    else:
        assert t[1].split(",")[0] == n[1].split(",")[0].replace("ndgrad", "torch")


def test_to_dlpack_round_trip():
    t = ndgrad.arange(3)
    u = torch.from_dlpack(ndgrad.to_dlpack(t))
    u[0] = 9
    assert t.tolist() == [9, 1, 2]


def test_storage_type_and_legacy_storage_classes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in (torch, ndgrad):
            for d, name in ((m.float32, "FloatStorage"), (m.float64, "DoubleStorage"),
                            (m.int64, "LongStorage"), (m.bool, "BoolStorage"),
                            (m.uint8, "ByteStorage"), (m.complex64, "ComplexFloatStorage")):
                x = m.ones(2, dtype=d)
                cls = x.storage_type()
                assert cls is getattr(m, name) and cls.__name__ == name
                assert cls.dtype == d and isinstance(x.storage(), cls)
            assert not isinstance(m.ones(1).storage(), m.DoubleStorage)
            assert len(m.FloatStorage(3)) == 3     # torch leaves it uninitialized
            assert m.LongStorage([1, 2]).tolist() == [1, 2] and len(m.FloatStorage([1.0])) == 1
            assert m.is_storage(m.FloatStorage(2))


@pytest.mark.parametrize("fn", [
    lambda m: m.arange(6.0)[:3].resize_(2, 2).tolist(),
    lambda m: m.arange(6.0)[2:4].resize_(4).tolist(),
    lambda m: m.arange(6.0).reshape(2, 3).t().resize_(3).tolist(),
    lambda m: m.arange(6.0).reshape(2, 3).t().resize_(2, 3).tolist(),
    lambda m: m.arange(6.0).resize_(8)[:6].tolist(),
    lambda m: m.ones(2, requires_grad=True).resize_(3),
    lambda m: m.ones(3).resize_as_(m.ones(2, 2)).shape,
])
def test_resize_within_storage_as_torch(fn):
    t, n = outcome(lambda: fn(torch)), outcome(lambda: fn(ndgrad))
    assert t[0] == n[0] and str(t[1]) == str(n[1]).replace("ndgrad", "torch")


def test_resize_of_a_view_shares_its_base():
    for m in (torch, ndgrad):
        b = m.arange(6.0)
        v = b[:3]
        v.resize_(2, 2)
        v[1, 1] = 9.0
        assert b.tolist() == [0.0, 1.0, 2.0, 9.0, 4.0, 5.0] and b._version == v._version == 2
