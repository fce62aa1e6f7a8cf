"""ndgrad.distributions' argument validation, constraints, transforms, biject_to/transform_to,
utils and kl_divergence, each program run under torch and ndgrad and compared (errors by type
and message, values numerically)."""

import warnings

import numpy as np
import pytest
import torch

import ndgrad
from tests._compare import outcome


@pytest.fixture(autouse=True)
def _torch_validates():
    """torch.compile's first run (tests/programs/training_boilerplate.py) turns torch's default
    argument validation off for the whole process (torch/_dynamo/eval_frame.py)."""
    old = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(old)


def _same(fn):
    """``fn(lib)`` under both libraries: equal values, or the same error type and words."""
    t = outcome(lambda: fn(torch))
    n = outcome(lambda: fn(ndgrad))
    assert t[0] == n[0], (t, n)
    if t[0] != "ok":
        assert n[1] == t[1], (t, n)
        return t
    tv, nv = t[1], n[1]
    if isinstance(tv, torch.Tensor):
        np.testing.assert_allclose(nv.detach().numpy(), tv.detach().numpy(), rtol=1e-6,
                                   atol=1e-7)
    elif isinstance(tv, (tuple, list)):
        assert len(tv) == len(nv)
        for a, b in zip(tv, nv):
            if isinstance(a, torch.Tensor):
                np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6)
            else:
                assert a == b
    else:
        assert tv == nv
    return t


def T(lib, x, **kw):
    return lib.tensor(x, **kw)


VALIDATION = {
    "negative scale": lambda L: L.distributions.Normal(T(L, [0.0, 1.0]), T(L, [1.0, -1.0])),
    "nan loc": lambda L: L.distributions.Normal(T(L, [float("nan")]), T(L, [1.0])),
    "probs above one": lambda L: L.distributions.Bernoulli(T(L, [1.5])),
    "probs and logits": lambda L: L.distributions.Bernoulli(T(L, 0.5), T(L, 0.0)),
    "neither probs nor logits": lambda L: L.distributions.Categorical(),
    "scalar probs": lambda L: L.distributions.Categorical(T(L, 0.5)),
    "scalar logits": lambda L: L.distributions.Categorical(logits=T(L, 0.5)),
    "negative probs": lambda L: L.distributions.Categorical(T(L, [0.5, -0.5, 1.0])),
    "uniform low >= high": lambda L: L.distributions.Uniform(T(L, [1.0]), T(L, [0.0])),
    "geometric probs zero": lambda L: L.distributions.Geometric(T(L, [0.0, 0.5])),
    "binomial fractional count": lambda L: L.distributions.Binomial(T(L, [2.5]), T(L, [0.5])),
    "gamma zero rate": lambda L: L.distributions.Gamma(T(L, 1.0), T(L, 0.0)),
    "dirichlet scalar": lambda L: L.distributions.Dirichlet(T(L, 1.0)),
    "dirichlet nonpositive": lambda L: L.distributions.Dirichlet(T(L, [1.0, 0.0])),
    "mvn scalar loc": lambda L: L.distributions.MultivariateNormal(T(L, 0.0), L.eye(1)),
    "mvn two matrices": lambda L: L.distributions.MultivariateNormal(
        L.zeros(2), L.eye(2), precision_matrix=L.eye(2)),
    "mvn no matrix": lambda L: L.distributions.MultivariateNormal(L.zeros(2)),
    "mvn vector cov": lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.ones(2)),
    "mvn vector tril": lambda L: L.distributions.MultivariateNormal(L.zeros(2),
                                                                    scale_tril=L.ones(2)),
    "mvn indefinite": lambda L: L.distributions.MultivariateNormal(
        L.zeros(2), T(L, [[1.0, 2.0], [2.0, 1.0]])),
    "mvn not lower": lambda L: L.distributions.MultivariateNormal(
        L.zeros(2), scale_tril=T(L, [[1.0, 2.0], [0.0, 1.0]])),
    "lowrank bad factor": lambda L: L.distributions.LowRankMultivariateNormal(
        L.zeros(2), L.ones(3, 1), L.ones(2)),
    "lowrank bad diag": lambda L: L.distributions.LowRankMultivariateNormal(
        L.zeros(2), L.ones(2, 1), L.ones(3)),
    "lowrank vector factor": lambda L: L.distributions.LowRankMultivariateNormal(
        L.zeros(2), L.ones(2), L.ones(2)),
    "lowrank batch mismatch": lambda L: L.distributions.LowRankMultivariateNormal(
        L.zeros(3, 2), L.ones(4, 2, 1), L.ones(2)),
    "independent too many": lambda L: L.distributions.Independent(
        L.distributions.Normal(L.zeros(2), 1.0), 2),
    "transformed not transform": lambda L: L.distributions.TransformedDistribution(
        L.distributions.Normal(0.0, 1.0), [1]),
    "transformed not list": lambda L: L.distributions.TransformedDistribution(
        L.distributions.Normal(0.0, 1.0), 3),
    "transformed short base": lambda L: L.distributions.TransformedDistribution(
        L.distributions.Normal(0.0, 1.0), L.distributions.StickBreakingTransform()),
    "broadcast_all bad": lambda L: L.distributions.utils.broadcast_all(T(L, 1.0), "a"),
    "cache size": lambda L: L.distributions.ExpTransform(cache_size=2),
    "multinomial tensor count": lambda L: L.distributions.Multinomial(T(L, 3), L.ones(2)),
    "student df": lambda L: L.distributions.StudentT(T(L, [-1.0])),
    "negative binomial probs one": lambda L: L.distributions.NegativeBinomial(
        T(L, [2.0]), T(L, [1.0])),
    "mixture not categorical": lambda L: L.distributions.MixtureSameFamily(
        L.distributions.Normal(0.0, 1.0), L.distributions.Normal(L.zeros(2), 1.0)),
    "mixture sizes": lambda L: L.distributions.MixtureSameFamily(
        L.distributions.Categorical(L.ones(3)), L.distributions.Normal(L.zeros(2), 1.0)),
    "relaxed temperature missing probs": lambda L: L.distributions.RelaxedBernoulli(
        T(L, 1.0)),
}


@pytest.mark.parametrize("case", list(VALIDATION))
def test_constructor_validation_matches_torch(case):
    result = _same(lambda L: VALIDATION[case](L) and None)
    assert result[0] != "ok", case


SAMPLE_VALIDATION = {
    "not a tensor": lambda L: L.distributions.Normal(0.0, 1.0).log_prob(0.5),
    "outside support": lambda L: L.distributions.Exponential(T(L, [1.0, 2.0])).log_prob(
        T(L, [1.0, -1.0])),
    "event shape": lambda L: L.distributions.Dirichlet(L.ones(3)).log_prob(L.ones(2) / 2),
    "not broadcastable": lambda L: L.distributions.Normal(L.zeros(3), 1.0).log_prob(
        L.zeros(2)),
    "not integer": lambda L: L.distributions.Poisson(T(L, 2.0)).log_prob(T(L, 1.5)),
    "not simplex": lambda L: L.distributions.Dirichlet(L.ones(2)).log_prob(T(L, [0.5, 0.6])),
    "not in interval": lambda L: L.distributions.Uniform(0.0, 1.0).log_prob(T(L, 2.0)),
    "cdf outside": lambda L: L.distributions.Gamma(1.0, 1.0).cdf(T(L, -1.0)),
    "categorical index": lambda L: L.distributions.Categorical(L.ones(3)).log_prob(T(L, 3)),
    "one hot": lambda L: L.distributions.OneHotCategorical(L.ones(3)).log_prob(
        T(L, [1.0, 1.0, 0.0])),
    "binomial above count": lambda L: L.distributions.Binomial(
        3, T(L, 0.5)).log_prob(T(L, 4.0)),
    "lognormal nonpositive": lambda L: L.distributions.LogNormal(0.0, 1.0).log_prob(
        T(L, -1.0)),
    "pareto below scale": lambda L: L.distributions.Pareto(T(L, 2.0), T(L, 1.0)).log_prob(
        T(L, 1.0)),
    "multinomial too many": lambda L: L.distributions.Multinomial(2, L.ones(2)).log_prob(
        T(L, [2.0, 1.0])),
    "mixture support": lambda L: L.distributions.MixtureSameFamily(
        L.distributions.Categorical(L.ones(2)), L.distributions.Exponential(L.ones(2))
    ).log_prob(T(L, -1.0)),
}


@pytest.mark.parametrize("case", list(SAMPLE_VALIDATION))
def test_sample_validation_matches_torch(case):
    assert _same(SAMPLE_VALIDATION[case])[0] == "ValueError"


def test_validation_can_be_turned_off():
    D = ndgrad.distributions
    d = D.Normal(ndgrad.tensor(0.0), ndgrad.tensor(-1.0), validate_args=False)
    assert bool(d.log_prob(ndgrad.tensor(0.0)).isnan())
    assert D.Exponential(1.0, validate_args=False).log_prob(ndgrad.tensor(-1.0)).item() == 1.0
    try:
        D.Distribution.set_default_validate_args(False)
        D.Normal(0.0, -1.0)
        assert D.Normal(0.0, 1.0, validate_args=True)._validate_args
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_base_class_raises_not_implemented_like_torch():
    for attr in ("mean", "variance", "stddev", "mode", "support", "arg_constraints"):
        _same(lambda L, attr=attr: getattr(L.distributions.Distribution(validate_args=False),
                                           attr))
    for meth in ("rsample", "sample", "entropy", "enumerate_support"):
        _same(lambda L, meth=meth: getattr(L.distributions.Distribution(validate_args=False),
                                           meth)())
    _same(lambda L: L.distributions.Distribution(validate_args=False).log_prob(L.zeros(1)))
    _same(lambda L: L.distributions.Distribution(validate_args=False).expand((2,)))

    def custom(L):
        class MyNormal(L.distributions.Normal):
            def __init__(self, loc):
                super().__init__(loc, 1.0)
        return MyNormal(L.zeros(2)).expand((3, 2))
    _same(custom)

    def no_constraints(L):
        class Bare(L.distributions.Distribution):
            pass
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            Bare(validate_args=True)
        return str(w[0].message).split("'")[0]
    _same(no_constraints)


CONSTRAINT_VALUES = [
    [0.0, 1.0, -1.0, 0.5, float("nan"), 3.0],
    [[0.2, 0.8], [0.5, 0.6], [1.0, 0.0]],
    [[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.3], [0.3, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]],
]

CONSTRAINTS = {
    "real": (lambda C: C.real, 0), "positive": (lambda C: C.positive, 0),
    "nonnegative": (lambda C: C.nonnegative, 0), "boolean": (lambda C: C.boolean, 0),
    "unit_interval": (lambda C: C.unit_interval, 0),
    "nonnegative_integer": (lambda C: C.nonnegative_integer, 0),
    "positive_integer": (lambda C: C.positive_integer, 0),
    "integer_interval": (lambda C: C.integer_interval(0, 2), 0),
    "greater_than": (lambda C: C.greater_than(0.5), 0),
    "greater_than_eq": (lambda C: C.greater_than_eq(0.5), 0),
    "less_than": (lambda C: C.less_than(0.5), 0),
    "interval": (lambda C: C.interval(-1.0, 1.0), 0),
    "half_open_interval": (lambda C: C.half_open_interval(-1.0, 1.0), 0),
    "simplex": (lambda C: C.simplex, 1), "one_hot": (lambda C: C.one_hot, 1),
    "real_vector": (lambda C: C.real_vector, 1),
    "independent": (lambda C: C.independent(C.positive, 1), 1),
    "multinomial": (lambda C: C.multinomial(1), 1),
    "lower_triangular": (lambda C: C.lower_triangular, 2),
    "lower_cholesky": (lambda C: C.lower_cholesky, 2),
    "corr_cholesky": (lambda C: C.corr_cholesky, 2),
    "square": (lambda C: C.square, 2), "symmetric": (lambda C: C.symmetric, 2),
    "positive_definite": (lambda C: C.positive_definite, 2),
    "positive_semidefinite": (lambda C: C.positive_semidefinite, 2),
    "cat": (lambda C: C.cat([C.positive, C.real], 0, [1, 1]), 0),
    "stack": (lambda C: C.stack([C.positive, C.real], 0), 0),
}


@pytest.mark.parametrize("name", list(CONSTRAINTS))
def test_constraints_match_torch(name):
    make, rank = CONSTRAINTS[name]
    tc = make(torch.distributions.constraints)
    nc = make(ndgrad.distributions.constraints)
    assert repr(nc) == repr(tc)
    assert nc.event_dim == tc.event_dim and nc.is_discrete == tc.is_discrete
    values = np.array(CONSTRAINT_VALUES[rank])
    assert tuple(nc.check(ndgrad.tensor(values)).numpy().tolist()) == \
        tuple(tc.check(torch.tensor(values)).numpy().tolist())


def test_dependent_constraints():
    C = ndgrad.distributions.constraints
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    assert C.dependent(is_discrete=True, event_dim=1).event_dim == 1
    _same(lambda L: L.distributions.constraints.dependent.check(L.zeros(1)))
    _same(lambda L: L.distributions.constraints.dependent.event_dim)
    D = ndgrad.distributions
    assert C.is_dependent(D.Uniform.support) and C.is_dependent(D.Binomial.support)
    assert repr(D.Uniform(0.0, 2.0).support) == repr(torch.distributions.Uniform(0.0, 2.0)
                                                       .support).replace("torch", "ndgrad")
    assert (C.cat([C.positive, C.real], 0, [1, 2]).check(ndgrad.tensor([1.0, -1.0, 2.0]))
            .tolist() == [True, True, True])
    assert C.stack([C.positive, C.real], 0).check(ndgrad.tensor([-1.0, -1.0])).tolist() == \
        [False, True]


TRANSFORMS = {
    "exp": (lambda D: D.ExpTransform(), [0.3, -1.2]),
    "power": (lambda D, L=None: D.PowerTransform(2.5), [0.3, 1.2]),
    "sigmoid": (lambda D: D.SigmoidTransform(), [0.3, -1.2]),
    "softplus": (lambda D: D.SoftplusTransform(), [0.3, -1.2]),
    "tanh": (lambda D: D.TanhTransform(), [0.3, -1.2]),
    "abs": (lambda D: D.AbsTransform(), [0.3, -1.2]),
    "affine": (lambda D: D.AffineTransform(1.0, -2.0), [0.3, -1.2]),
    "affine_event": (lambda D: D.AffineTransform(1.0, 3.0, event_dim=1), [0.3, -1.2]),
    "softmax": (lambda D: D.SoftmaxTransform(), [0.3, -1.2]),
    "stick_breaking": (lambda D: D.StickBreakingTransform(), [0.3, -1.2]),
    "lower_cholesky": (lambda D: D.LowerCholeskyTransform(), [[0.3, 0.1], [-1.2, 0.4]]),
    "positive_definite": (lambda D: D.PositiveDefiniteTransform(), [[0.3, 0.1], [-1.2, 0.4]]),
    "compose": (lambda D: D.ComposeTransform([D.ExpTransform(), D.AffineTransform(0.5, 2.0)]),
                [0.3, -1.2]),
    "independent": (lambda D: D.IndependentTransform(D.SigmoidTransform(), 1), [0.3, -1.2]),
    "inverse": (lambda D: D.ExpTransform().inv, [0.3, 1.2]),
    "reshape": (lambda D: D.ReshapeTransform((2,), (2, 1)), [0.3, 1.2]),
    "cdf": (lambda D: D.CumulativeDistributionTransform(D.Normal(0.0, 1.0)), [0.3, -1.2]),
    "cat": (lambda D: D.CatTransform([D.ExpTransform(), D.SigmoidTransform()], 0, [1, 1]),
            [0.3, -1.2]),
    "cat_event": (lambda D: D.CatTransform([D.IndependentTransform(D.ExpTransform(), 1),
                                            D.AffineTransform(0.0, 2.0)], -1, [2, 1]),
                  [[0.3, -1.2, 0.5]]),
    "stack": (lambda D: D.StackTransform([D.ExpTransform(), D.TanhTransform()], 1),
              [[0.3, -1.2]]),
    "corr_cholesky": (lambda D: D.CorrCholeskyTransform(), [0.3, -1.2, 0.7]),
    "identity": (lambda D: D.identity_transform, [0.3, -1.2]),
}


def _transform_program(name):
    make, x = TRANSFORMS[name]

    def program(L):
        t = make(L.distributions)
        xt = L.tensor(x, dtype=L.float64, requires_grad=True)
        y = t(xt)
        out = [y, t.inv(y), t.domain.event_dim, t.codomain.event_dim, t.bijective,
               repr(t).replace("torch", "ndgrad"), tuple(t.forward_shape(tuple(xt.shape))),
               tuple(t.inverse_shape(tuple(y.shape)))]
        try:
            ladj = t.log_abs_det_jacobian(xt, y)
            out.append(ladj)
            if ladj.requires_grad:
                ladj.sum().backward()
                out.append(xt.grad)
        except NotImplementedError:
            out.append("no jacobian")
        try:
            sign = t.sign
            out.append(sign if isinstance(sign, int) else float(sign))
        except NotImplementedError:
            out.append("no sign")
        return out
    return program


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transforms_match_torch(name):
    assert _same(_transform_program(name))[0] == "ok"


def test_transform_shape_errors_match_torch():
    cases = [
        lambda L: L.distributions.ReshapeTransform((2,), (3,)),
        lambda L: L.distributions.ReshapeTransform((2,), (2, 1)).forward_shape((3,)),
        lambda L: L.distributions.ReshapeTransform((2,), (2, 1)).inverse_shape((1,)),
        lambda L: L.distributions.CorrCholeskyTransform().forward_shape((4,)),
        lambda L: L.distributions.CorrCholeskyTransform().inverse_shape((2, 3)),
        lambda L: L.distributions.CatTransform([L.distributions.ExpTransform()], 0, [2])(
            L.zeros(3)),
        lambda L: L.distributions.StackTransform([L.distributions.ExpTransform()], 0)(
            L.zeros(3)),
        lambda L: L.distributions.StickBreakingTransform().forward_shape(()),
    ]
    for fn in cases:
        assert _same(fn)[0] != "ok"


def test_transform_caching_and_equality():
    D = ndgrad.distributions
    t = D.ExpTransform(cache_size=1)
    x = ndgrad.tensor([0.1])
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    assert t.inv.inv is t
    assert D.ExpTransform() == D.ExpTransform() and D.ExpTransform() != D.TanhTransform()
    assert D.AffineTransform(1.0, 2.0) == D.AffineTransform(1.0, 2.0)
    assert D.AffineTransform(1.0, 2.0) != D.AffineTransform(1.0, 3.0)
    c = D.ComposeTransform([D.ExpTransform(), D.SigmoidTransform()])
    assert c.inv.inv is c and c.with_cache(1)._cache_size == 1
    assert D.ExpTransform().with_cache(1)._cache_size == 1
    _same(lambda L: L.distributions.transforms.PowerTransform(2.0).with_cache(1)._cache_size)
    _same(lambda L: L.distributions.transforms.Transform().with_cache(1)._cache_size)
    _same(lambda L: L.distributions.transforms.ComposeTransform(
        [L.distributions.ExpTransform(), L.distributions.StickBreakingTransform()]).event_dim)


CONSTRAINTS_TO_TRANSFORM = ["real", "positive", "nonnegative", "greater_than",
                            "greater_than_eq", "less_than", "interval", "half_open_interval",
                            "unit_interval", "simplex", "real_vector", "independent",
                            "lower_cholesky", "positive_definite", "boolean", "corr_cholesky",
                            "cat", "stack"]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", CONSTRAINTS_TO_TRANSFORM)
def test_biject_to_and_transform_to_match_torch(registry, name):
    make, rank = CONSTRAINTS[name]
    x = ([[0.3, -0.2], [0.1, 0.5]] if rank == 2 and name != "corr_cholesky"
         else [0.3, -1.2, 0.5] if name == "corr_cholesky" else [0.3, -1.2])

    def program(L):
        t = getattr(L.distributions, registry)(make(L.distributions.constraints))
        return repr(t).replace("torch", "ndgrad"), t(L.tensor(x, dtype=L.float64))
    _same(program)


def test_constraint_registry_register():
    D = ndgrad.distributions
    _same(lambda L: L.distributions.constraint_registry.ConstraintRegistry().register(3, len))
    reg = D.constraint_registry.ConstraintRegistry()

    @reg.register(D.constraints.positive)
    def _factory(c):
        return D.SoftplusTransform()
    assert isinstance(reg(D.constraints.greater_than(3.0)), D.SoftplusTransform)


UTILS = {
    "broadcast_all": lambda L: L.distributions.utils.broadcast_all(
        L.tensor([1.0, 2.0], dtype=L.float64), 3, L.zeros(2, 1)),
    "broadcast_numbers": lambda L: L.distributions.utils.broadcast_all(1.0, 2),
    "logits_to_probs": lambda L: L.distributions.utils.logits_to_probs(
        L.tensor([[0.1, 2.0, -1.0]])),
    "logits_to_probs_binary": lambda L: L.distributions.utils.logits_to_probs(
        L.tensor([0.1, 2.0]), is_binary=True),
    "probs_to_logits": lambda L: L.distributions.utils.probs_to_logits(
        L.tensor([0.0, 0.3, 1.0])),
    "probs_to_logits_binary": lambda L: L.distributions.utils.probs_to_logits(
        L.tensor([0.0, 0.3, 1.0]), is_binary=True),
    "clamp_probs": lambda L: L.distributions.utils.clamp_probs(L.tensor([0.0, 1.0])),
    "tril_to_vec": lambda L: L.distributions.utils.tril_matrix_to_vec(
        L.arange(9.0).reshape(3, 3), -1),
    "vec_to_tril": lambda L: L.distributions.utils.vec_to_tril_matrix(L.arange(6.0), 0),
    "vec_to_tril_bad": lambda L: L.distributions.utils.vec_to_tril_matrix(L.arange(5.0)),
    "tril_bad_diag": lambda L: L.distributions.utils.tril_matrix_to_vec(L.ones(2, 2), 2),
}


@pytest.mark.parametrize("name", list(UTILS))
def test_utils_match_torch(name):
    _same(UTILS[name])
