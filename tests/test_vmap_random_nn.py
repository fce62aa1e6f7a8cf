"""Channel dropout and rrelu inside vmap against torch.func: dropout1d/2d/3d check the
logical (one entry's) rank, with torch's errors and warnings in every randomness mode, and
draw per entry as the mode asks; rrelu has no vmap support in torch and is refused."""

import warnings

import numpy as np
import pytest
import torch

import ndgrad

from _compare import outcome

SHAPES = {"dropout1d": [(4, 5), (4, 3, 5), (4, 2, 3, 5), (4, 2, 3, 5, 2)],
          "dropout2d": [(4, 5, 2), (4, 3, 5, 2), (4, 2, 3, 5, 2), (4, 1, 2, 3, 5, 2)],
          "dropout3d": [(4, 3, 5, 2), (4, 2, 3, 5, 2), (4, 1, 2, 3, 5, 2)]}
CASES = [(name, shape, training) for name, shapes in SHAPES.items() for shape in shapes
         for training in (True, False)]


def _run(m, name, shape, training, randomness):
    fn = getattr(m.nn.functional, name)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = outcome(lambda: tuple(m.func.vmap(lambda x: fn(x, 0.5, training),
                                              randomness=randomness)(m.ones(*shape)).shape))
    return r, [str(x.message).replace("torch.", "ndgrad.") for x in w]


@pytest.mark.parametrize("randomness", ["error", "different", "same"])
@pytest.mark.parametrize("name,shape,training", CASES)
def test_channel_dropout_in_vmap_as_torch(name, shape, training, randomness):
    assert _run(ndgrad, name, shape, training, randomness) == \
        _run(torch, name, shape, training, randomness)


def test_channel_dropout_in_vmap_draws_per_mode():
    ndgrad.manual_seed(0)
    x = ndgrad.ones(8, 2, 6, 4, 3)
    f = ndgrad.nn.functional.dropout2d
    same = ndgrad.func.vmap(lambda t: f(t, 0.5), randomness="same")(x).numpy()
    diff = ndgrad.func.vmap(lambda t: f(t, 0.5), randomness="different")(x).numpy()
    for y in (same, diff):
        assert set(np.unique(y)) <= {0.0, 2.0}
        # whole channels: constant over the spatial dims of each (entry, channel)
        assert (y == y[..., :1, :1]).all()
    assert (same == same[:1]).all()
    assert not (diff == diff[:1]).all()


@pytest.mark.parametrize("randomness", ["error", "different", "same"])
@pytest.mark.parametrize("case", ["train", "eval", "inplace", "module", "unbatched"])
def test_rrelu_refused_in_vmap_as_torch(case, randomness):
    def run(m):
        F = m.nn.functional
        fn = {"train": lambda x: F.rrelu(x, training=True),
              "eval": lambda x: F.rrelu(x, training=False),
              "inplace": lambda x: F.rrelu(x.clone(), training=True, inplace=True),
              "module": lambda x: m.nn.RReLU()(x),
              "unbatched": lambda x: x + F.rrelu(m.ones(5), training=True)}[case]
        return outcome(lambda: m.func.vmap(fn, randomness=randomness)(m.ones(4, 5)))
    t, n = run(torch), run(ndgrad)
    assert t[0] == n[0] == "RuntimeError" and t[1] == n[1]


@pytest.mark.parametrize("case", ["classes", "out_of_range", "in_dims_1", "nested", "infer"])
def test_one_hot_under_vmap_matches_torch(case):
    # a comparison with arange(num_classes) per entry: no range check, num_classes required
    def run(m):
        F, vmap = m.nn.functional, m.func.vmap
        x = m.tensor([[0, 2], [1, 1]])
        if case == "classes":
            return vmap(lambda v: F.one_hot(v, 3))(x)
        if case == "out_of_range":
            return vmap(lambda v: F.one_hot(v, 3))(m.tensor([[0, 5], [1, -1]]))
        if case == "in_dims_1":
            return vmap(lambda v: F.one_hot(v, 4), in_dims=1)(x)
        if case == "nested":
            return vmap(vmap(lambda v: F.one_hot(v, 3)))(x)
        return vmap(lambda v: F.one_hot(v))(x)
    t, n = outcome(lambda: run(torch)), outcome(lambda: run(ndgrad))
    assert t[0] == n[0]
    if t[0] == "ok":
        assert n[1].tolist() == t[1].tolist()
    else:
        assert n[1] == t[1]


@pytest.mark.parametrize("fn", [lambda m, v: v.nonzero(), lambda m, v: m.nonzero(v),
                                lambda m, v: m.unique(v), lambda m, v: v.unique(),
                                lambda m, v: m.unique_consecutive(v)])
def test_dynamic_shape_refusal_uses_torchs_words(fn):
    # refused even when every entry's result has the same shape (all ones here)
    msgs = []
    for m in (torch, ndgrad):
        with pytest.raises(RuntimeError) as e:
            m.func.vmap(lambda v, m=m: fn(m, v))(m.ones(2, 2))
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


def _dropout_draws(m, fn, shape, randomness):
    m.manual_seed(3)
    out = m.func.vmap(fn, randomness=randomness)(m.ones(*shape))
    return out.tolist(), m.rand(3).tolist()         # and where the generator stands after


@pytest.mark.parametrize("randomness", ["different", "same"])
@pytest.mark.parametrize("case", ["dropout", "dropout_matmul", "dropout2d", "alpha_dropout"])
def test_dropout_in_vmap_draws_torchs_values(case, randomness):
    """Dropout of a batched tensor draws what torch's one draw over the batch draws (the
    proxy's draw is taken back before the per-entry draws), and leaves the generator where
    torch's does."""
    def fn(m):
        F = m.nn.functional
        return {"dropout": lambda x: F.dropout(x, 0.5),
                "dropout_matmul": lambda x: F.dropout(x @ m.ones(6, 3), 0.3),
                "dropout2d": lambda x: F.dropout2d(x.view(2, 3, 1, 1), 0.5),
                "alpha_dropout": lambda x: F.alpha_dropout(x, 0.4, True)}[case]
    got = _dropout_draws(ndgrad, fn(ndgrad), (4, 6), randomness)
    want = _dropout_draws(torch, fn(torch), (4, 6), randomness)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
