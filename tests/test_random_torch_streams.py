"""bernoulli (and dropout's masks), exponential_, cauchy_, geometric_, log_normal_, multinomial
and the Poisson / Binomial / Cauchy distributions draw torch's numbers after
``manual_seed`` (Note [Random streams] in ndgrad/_generator.py), and leave the stream where
torch leaves it."""

import numpy as np
import pytest
import torch

import ndgrad

CASES = {
    "bernoulli_scalar": lambda m: m.empty(50).bernoulli_(0.3),
    "bernoulli_scalar_f16": lambda m: m.empty(20, dtype=m.float16).bernoulli_(0.7),
    "bernoulli_probs_f32": lambda m: m.bernoulli(m.full((3, 17), 0.4)),
    "bernoulli_probs_f64": lambda m: m.bernoulli(m.full((40,), 0.4, dtype=m.float64)),
    "bernoulli_probs_bf16": lambda m: m.bernoulli(m.full((40,), 0.4, dtype=m.bfloat16)),
    "bernoulli_p_arg": lambda m: m.bernoulli(m.ones(30), 0.2),
    "bernoulli_tensor_p": lambda m: m.empty(2, 9).bernoulli_(m.linspace(0, 1, 9)),
    "dropout": lambda m: m.nn.functional.dropout(m.ones(4, 6), 0.4),
    "dropout_transposed": lambda m: m.nn.functional.dropout(m.ones(3, 5).t(), 0.5),
    "dropout_permuted": lambda m: m.nn.functional.dropout(m.ones(2, 3, 4).permute(2, 0, 1), 0.5),
    "dropout_expanded": lambda m: m.nn.functional.dropout(m.ones(4).expand(3, 4), 0.5),
    "dropout_strided": lambda m: m.nn.functional.dropout(m.ones(3, 8)[:, ::2], 0.5),
    "dropout2d": lambda m: m.nn.functional.dropout2d(m.ones(2, 3, 2, 2), 0.5),
    "alpha_dropout": lambda m: m.nn.functional.alpha_dropout(m.ones(3, 4), 0.3, training=True),
    "dropout_module": lambda m: m.nn.Dropout(0.2)(m.ones(5, 5)),
    "exponential": lambda m: m.empty(30, dtype=m.float64).exponential_(),
    "exponential_f32": lambda m: m.empty(30).exponential_(),
    "multinomial_one": lambda m: m.multinomial(m.rand(4, 9) + 0.1, 1),
    "multinomial_no_replacement": lambda m: m.multinomial(m.rand(3, 9) + 0.1, 4),
    "multinomial_replacement": lambda m: m.multinomial(m.tensor([0.1, 0.5, 0.4]), 12,
                                                       replacement=True),
    "multinomial_replacement_rows": lambda m: m.multinomial(m.rand(2, 5, dtype=m.float64), 6,
                                                            replacement=True),
    "cauchy": lambda m: m.empty(30, dtype=m.float64).cauchy_(0.5, 2.0),
    "cauchy_f32": lambda m: m.empty(3, 7).cauchy_(),
    "geometric": lambda m: m.empty(30).geometric_(0.3),
    "geometric_long": lambda m: m.empty(9, dtype=m.long).geometric_(0.5),
    # log_normal_: one-at-a-time Box-Muller for any size; an odd count keeps a value that the
    # next small randn uses first
    "log_normal": lambda m: m.cat([m.empty(31, dtype=m.float64).log_normal_(0.1, 0.5),
                                   m.randn(3, dtype=m.float64)]),
    "log_normal_f32": lambda m: m.empty(5).log_normal_(),
    "cauchy_distribution": lambda m: m.distributions.Cauchy(0.0, 2.0).sample((6,)),
    "poisson_distribution": lambda m: m.distributions.Poisson(m.tensor([2.0, 9.0])).sample((5,)),
    "binomial_distribution": lambda m: m.distributions.Binomial(
        10, probs=m.tensor([0.3, 0.8])).sample((4,)),
    "random_from_to": lambda m: m.empty(9, dtype=m.long).random_(-3, 100),
    "random_to_f32": lambda m: m.empty(9).random_(7),
    "random_to_u8": lambda m: m.empty(9, dtype=m.uint8).random_(200),
    "random_bool": lambda m: m.empty(9, dtype=m.bool).random_(0, 2),
    "random_legacy_type": lambda m: m.LongTensor(2, 5).random_(1, 6),
    "random_to_keyword": lambda m: m.empty(9).random_(to=7),
    # random_(from, None): from ``from`` up to random_()'s bound
    "random_from_none_f32": lambda m: m.empty(9).random_(3, None),
    "random_from_none_i64": lambda m: m.empty(9, dtype=m.long).random_(5, None),
    "random_from_none_i8": lambda m: m.empty(9, dtype=m.int8).random_(-3, None),
    "random_from_none_f16": lambda m: m.empty(9, dtype=m.half).random_(0, None),
    "random_generator": lambda m: m.empty(9, dtype=m.int32).random_(
        generator=m.Generator().manual_seed(3)),
}
# random_() without bounds: the whole range of each dtype
for _d in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
           "uint8", "bool"):
    CASES[f"random_full_{_d}"] = (lambda d: lambda m: m.empty(2, 9, dtype=getattr(m, d))
                                  .random_())(_d)


@pytest.mark.parametrize("case", sorted(CASES))
def test_draws_match_torch(case):
    out = []
    for m in (torch, ndgrad):
        m.manual_seed(123)
        r = CASES[case](m)
        after = m.rand(3, dtype=m.float64)          # the stream continues where torch's does
        values = r.tolist() if r.dtype == m.int64 else r.float().numpy().tolist()
        out.append((values, after.numpy().tolist()))
    assert out[0] == out[1]


def test_exponential_rate_within_two_ulps():
    torch.manual_seed(0)
    ndgrad.manual_seed(0)
    t = torch.empty(200, dtype=torch.float64).exponential_(2.5).numpy()
    n = ndgrad.empty(200, dtype=ndgrad.float64).exponential_(2.5).numpy()
    assert np.all(np.abs(t - n) <= 2 * np.spacing(np.abs(t)))


def test_attention_dropout_matches_torch():
    out = []
    for m in (torch, ndgrad):
        m.manual_seed(0)
        q = m.randn(2, 2, 5, 4, dtype=m.float64)
        m.manual_seed(1)
        r = m.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
        out.append(r.numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12)


def test_generator_argument_and_gradgradcheck_stream():
    g = [torch.Generator().manual_seed(5), ndgrad.Generator().manual_seed(5)]
    a = [m.bernoulli(m.full((10,), 0.5), generator=gi).tolist()
         for m, gi in zip((torch, ndgrad), g)]
    assert a[0] == a[1]
    after = []
    for m in (torch, ndgrad):        # gradgradcheck draws its grad_outputs as torch does
        m.manual_seed(9)
        x = m.rand(3, dtype=m.float64, requires_grad=True)
        assert m.autograd.gradgradcheck(lambda t: (t * t).sin(), (x,))
        after.append(m.rand(2).tolist())
    assert after[0] == after[1]


RANDOM_ERRORS = {
    "none": lambda m: m.zeros(3).random_(None),
    "to none": lambda m: m.zeros(3).random_(to=None),
    "from past half's bound": lambda m: m.zeros(3, dtype=m.half).random_(3000, None),
    "from past float's bound": lambda m: m.zeros(3).random_(2 ** 24 + 1, None),
    "from out of int8": lambda m: m.zeros(3, dtype=m.int8).random_(200, None),
}


@pytest.mark.parametrize("case", RANDOM_ERRORS)
def test_random_bounds_errors_match_torch(case):
    outcomes = []
    for lib in (torch, ndgrad):
        try:
            RANDOM_ERRORS[case](lib)
            outcomes.append(None)
        except (TypeError, RuntimeError) as e:
            outcomes.append((type(e), str(e).replace("ndgrad", "torch")))
    assert outcomes[0] == outcomes[1] and outcomes[0] is not None
