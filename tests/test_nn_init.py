"""nn.init: distributions (bounds and moments), gains, fans, the deterministic initializers
against torch, errors against torch, generator= and no-grad behaviour."""

import math
import warnings

import numpy as np
import pytest

import ndgrad
from ndgrad.nn import init

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy().astype(np.float64)


@pytest.mark.parametrize("args", [("linear",), ("conv1d",), ("conv_transpose3d",), ("sigmoid",),
                                  ("tanh",), ("relu",), ("leaky_relu",), ("leaky_relu", 0.2),
                                  ("leaky_relu", 3), ("selu",)])
def test_calculate_gain(args):
    assert init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)


@pytest.mark.parametrize("shape", [(3, 4), (5, 3, 2), (6, 2, 3, 4), (2, 3, 1, 2, 2)])
def test_fans(shape):
    assert init._calculate_fan_in_and_fan_out(ndgrad.empty(*shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


def _errors(fn):
    out = []
    for T, ini in ((torch, torch.nn.init), (ndgrad, init)):
        try:
            fn(T, ini)
            out.append(None)
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e)))
    return out


@pytest.mark.parametrize("fn", [
    lambda T, ini: ini.calculate_gain("foo"),
    lambda T, ini: ini.calculate_gain("leaky_relu", "a"),
    lambda T, ini: ini.calculate_gain("leaky_relu", True),
    lambda T, ini: ini.xavier_uniform_(T.empty(3)),
    lambda T, ini: ini.xavier_normal_(T.empty(())),
    lambda T, ini: ini.kaiming_uniform_(T.empty(3, 3), mode="fan_x"),
    lambda T, ini: ini.kaiming_normal_(T.empty(3)),
    lambda T, ini: ini.eye_(T.empty(3)),
    lambda T, ini: ini.dirac_(T.empty(3, 3)),
    lambda T, ini: ini.dirac_(T.empty(3, 3, 3), groups=2),
    lambda T, ini: ini.orthogonal_(T.empty(3)),
    lambda T, ini: ini.sparse_(T.empty(3), 0.5),
    lambda T, ini: ini.uniform_(T.empty(2), 1, 0),
    lambda T, ini: ini.normal_(T.empty(2), 0, -1),
    lambda T, ini: ini.uniform_(T.ones(3, 3, dtype=T.int64)),
    lambda T, ini: ini.normal_(T.ones(3, 3, dtype=T.int64)),
    lambda T, ini: ini.trunc_normal_(T.ones(3, 3, dtype=T.int64)),
    lambda T, ini: ini.xavier_uniform_(T.ones(3, 3, dtype=T.int64)),
    lambda T, ini: ini.kaiming_normal_(T.ones(3, 3, dtype=T.int64)),
    lambda T, ini: ini.orthogonal_(T.ones(3, 3, dtype=T.int64)),
    lambda T, ini: ini.sparse_(T.ones(3, 3, dtype=T.int64), 0.5),
    lambda T, ini: ini.uniform_(T.ones(3, 3, dtype=T.bool)),
], ids=lambda f: "")
def test_errors_as_torch(fn):
    t_err, n_err = _errors(fn)
    assert n_err == t_err


@pytest.mark.parametrize("name", ["eye_", "dirac_", "ones_", "zeros_", "constant_"])
def test_deterministic_as_torch(name):
    shapes = {"eye_": [(3, 5), (4, 2)], "dirac_": [(4, 2, 3), (6, 3, 3, 3), (2, 4, 1, 3, 3)],
              "ones_": [(2, 3)], "zeros_": [(4,)], "constant_": [(2, 2)]}[name]
    extra = (0.25,) if name == "constant_" else ()
    for shape in shapes:
        t = getattr(torch.nn.init, name)(torch.empty(*shape), *extra)
        n = getattr(init, name)(ndgrad.empty(*shape), *extra)
        np.testing.assert_array_equal(_np(n), t.numpy())
    if name == "dirac_":
        t = torch.nn.init.dirac_(torch.empty(6, 2, 3), groups=3)
        n = init.dirac_(ndgrad.empty(6, 2, 3), groups=3)
        np.testing.assert_array_equal(_np(n), t.numpy())


def test_uniform_normal_moments():
    ndgrad.manual_seed(0)
    u = _np(init.uniform_(ndgrad.empty(300, 300), -2.0, 3.0))
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 0.03 and abs(u.std() - 5 / math.sqrt(12)) < 0.02
    n = _np(init.normal_(ndgrad.empty(300, 300), 1.5, 0.5))
    assert abs(n.mean() - 1.5) < 0.01 and abs(n.std() - 0.5) < 0.01


def test_trunc_normal():
    ndgrad.manual_seed(1)
    t = _np(init.trunc_normal_(ndgrad.empty(300, 300), mean=0.5, std=2.0, a=-1.0, b=3.0))
    assert t.min() >= -1.0 and t.max() <= 3.0
    al, be = (-1.0 - 0.5) / 2.0, (3.0 - 0.5) / 2.0          # moments of the truncated normal

    def pdf(x):
        return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)

    def cdf(x):
        return (1 + math.erf(x / math.sqrt(2))) / 2

    z = cdf(be) - cdf(al)
    mean = 0.5 + 2.0 * (pdf(al) - pdf(be)) / z
    std = 2.0 * math.sqrt(1 + (al * pdf(al) - be * pdf(be)) / z - ((pdf(al) - pdf(be)) / z) ** 2)
    assert abs(t.mean() - mean) < 0.02 and abs(t.std() - std) < 0.02
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        init.trunc_normal_(ndgrad.empty(3), mean=10.0)


@pytest.mark.parametrize("fn,kwargs,shape", [
    ("xavier_uniform_", {"gain": 2.0}, (200, 300)),
    ("xavier_normal_", {"gain": 0.5}, (200, 30, 3)),
    ("kaiming_uniform_", {"a": math.sqrt(5)}, (300, 200)),
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}, (100, 20, 5, 3)),
    ("kaiming_normal_", {"nonlinearity": "tanh"}, (300, 200)),
    ("kaiming_normal_", {"a": 0.1, "mode": "fan_out"}, (300, 200)),
])
def test_scaled_initializers(fn, kwargs, shape):
    ndgrad.manual_seed(2)
    w = _np(getattr(init, fn)(ndgrad.empty(*shape), **kwargs))
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(ndgrad.empty(*shape))
    if fn.startswith("xavier"):
        std = kwargs["gain"] * math.sqrt(2.0 / (fan_in + fan_out))
    else:
        fan = fan_out if kwargs.get("mode") == "fan_out" else fan_in
        gain = init.calculate_gain(kwargs.get("nonlinearity", "leaky_relu"), kwargs.get("a", 0))
        std = gain / math.sqrt(fan)
    if fn.endswith("uniform_"):
        bound = math.sqrt(3.0) * std
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - std) < 0.03 * std and abs(w.mean()) < 0.03 * std


@pytest.mark.parametrize("shape,gain", [((4, 6), 1.0), ((6, 4), 2.0), ((3, 2, 2), 1.0)])
def test_orthogonal(shape, gain):
    w = _np(init.orthogonal_(ndgrad.empty(*shape, dtype=ndgrad.float64), gain=gain))
    m = w.reshape(shape[0], -1)
    if m.shape[0] <= m.shape[1]:
        np.testing.assert_allclose(m @ m.T, gain ** 2 * np.eye(m.shape[0]), atol=1e-12)
    else:
        np.testing.assert_allclose(m.T @ m, gain ** 2 * np.eye(m.shape[1]), atol=1e-12)


def test_sparse():
    w = _np(init.sparse_(ndgrad.empty(10, 7), sparsity=0.25, std=0.5))
    assert ((w == 0).sum(0) == math.ceil(0.25 * 10)).all()


def test_generator_and_seed():
    a = _np(init.normal_(ndgrad.empty(5), generator=ndgrad.Generator().manual_seed(7)))
    b = _np(init.normal_(ndgrad.empty(5), generator=ndgrad.Generator().manual_seed(7)))
    np.testing.assert_array_equal(a, b)
    ndgrad.manual_seed(3)
    c = _np(init.kaiming_uniform_(ndgrad.empty(4, 4)))
    ndgrad.manual_seed(3)
    d = _np(init.kaiming_uniform_(ndgrad.empty(4, 4)))
    np.testing.assert_array_equal(c, d)
    with pytest.raises(TypeError, match="generator"):
        init.uniform_(ndgrad.empty(2), generator=3)


def test_same_seed_same_weights_as_torch():
    """uniform_/normal_ draw torch's numbers (Note [Random streams] in ndgrad/_generator.py),
    so a seeded layer starts from torch's weights."""
    import torch
    for make in (lambda nn: nn.Linear(5, 3), lambda nn: nn.Bilinear(2, 3, 4)):
        torch.manual_seed(1)
        t = make(torch.nn)
        ndgrad.manual_seed(1)
        n = make(ndgrad.nn)
        for (name, tp), (_, np_) in zip(t.named_parameters(), n.named_parameters()):
            np.testing.assert_array_equal(_np(np_), tp.detach().numpy(), err_msg=name)
    g1, g2 = torch.Generator().manual_seed(4), ndgrad.Generator().manual_seed(4)
    np.testing.assert_array_equal(
        _np(init.normal_(ndgrad.empty(3, 7, dtype=ndgrad.float64), 1.0, 2.0, generator=g2)),
        torch.nn.init.normal_(torch.empty(3, 7, dtype=torch.float64), 1.0, 2.0,
                              generator=g1).numpy())


def test_in_place_without_history():
    p = ndgrad.nn.Parameter(ndgrad.empty(3, 4))
    v = p._version
    out = init.xavier_uniform_(p)
    assert out is p and p.is_leaf and p.grad_fn is None and p.requires_grad
    assert p._version > v and p.dtype == ndgrad.float32
    h = ndgrad.empty(2, 2, dtype=ndgrad.float16)
    assert init.normal_(h).dtype == ndgrad.float16
    y = ndgrad.nn.Linear(4, 2)(ndgrad.ones(1, 4))
    y.sum().backward()                      # the parameters still work with autograd


def test_zero_element_warns():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        init.kaiming_uniform_(ndgrad.empty(0, 3))
    assert any("zero-element" in str(x.message) for x in w)


def test_deprecated_aliases():
    with pytest.warns(FutureWarning, match="nn.init.normal_"):
        init.normal(ndgrad.empty(2))


@pytest.mark.parametrize("name,args,shape", [
    ("trunc_normal_", (), (7, 9)),                      # rejection from normal samples
    ("trunc_normal_", (0.5, 2.0, -1.0, 3.0), (20, 3)),
    ("trunc_normal_", (0.0, 1.0, 2.0, 4.0), (5, 40)),   # uniform candidates, accept/reject
    ("sparse_", (0.3,), (10, 4)),
    ("xavier_normal_", (), (5, 5)),
    ("kaiming_normal_", (), (17, 3)),
    ("orthogonal_", (), (4, 6)),
    ("orthogonal_", (2.0,), (6, 3)),
])
def test_seeded_draws_equal_torch(name, args, shape):
    """float64: the same seed (default generator, or generator=) gives torch's values
    (orthogonal_ to LAPACK rounding)."""
    for use_gen in (False, True):
        kw_t = {"generator": torch.Generator().manual_seed(5)} if use_gen else {}
        kw_n = {"generator": ndgrad.Generator().manual_seed(5)} if use_gen else {}
        if name == "sparse_" and use_gen:
            continue
        torch.manual_seed(3)
        t = getattr(torch.nn.init, name)(torch.empty(*shape, dtype=torch.float64), *args, **kw_t)
        ndgrad.manual_seed(3)
        n = getattr(init, name)(ndgrad.empty(*shape, dtype=ndgrad.float64), *args, **kw_n)
        tol = 1e-14 if name == "orthogonal_" else 0
        np.testing.assert_allclose(_np(n), t.numpy(), rtol=0, atol=tol)
