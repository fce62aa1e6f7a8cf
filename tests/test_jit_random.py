"""Random draws in compiled functions (ndgrad/jit/random_nodes.py, Note [Random nodes]): a
compiled call draws at run time exactly what the eager call draws from the same generator
state (bitwise-equal outputs and gradients) and leaves the generator in the same state."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import ndgrad
import ndgrad.nn as nn
import ndgrad.nn.functional as F
from ndgrad.jit import TraceError, trace_graph
from ndgrad.jit.passes import eliminate_common_subexpression, eliminate_dead_code
from ndgrad.jit.random_nodes import is_random
from ndgrad.jit.stack_batching import fold_constants


def _state() -> np.ndarray:
    return ndgrad.default_generator.get_state().numpy().copy()


def _arrays(out) -> list:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().numpy().copy() for o in outs]


def _leaves(args) -> list:
    return [a for a in args if isinstance(a, ndgrad.Tensor) and a.requires_grad]


def _run(fn, args, calls: int, seed: int) -> tuple:
    """Outputs, gradients of the leaves (from the sum of the outputs) and the generator state
    after ``calls`` calls from ``seed``."""
    ndgrad.manual_seed(seed)
    outs, grads = [], []
    for _ in range(calls):
        out = fn(*args)
        outs.append(_arrays(out))
        leaves = _leaves(args)
        res = [o for o in (out if isinstance(out, tuple) else (out,)) if o.requires_grad]
        if leaves and res:
            loss = sum(o.double().sum() for o in res)
            grads.append([None if g is None else g.numpy().copy() for g in
                          ndgrad.autograd.grad(loss, leaves, allow_unused=True)])
    return outs, grads, _state()


def _assert_same(a: tuple, b: tuple) -> None:
    (oa, ga, sa), (ob, gb, sb) = a, b
    for xs, ys in zip(oa, ob):
        assert len(xs) == len(ys)
        for x, y in zip(xs, ys):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
    assert len(ga) == len(gb)
    for xs, ys in zip(ga, gb):
        for x, y in zip(xs, ys):
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(sa, sb)


def _x(*shape, grad=False, seed=0):
    arr = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ndgrad.tensor(arr, requires_grad=grad)


CASES = {
    "dropout": (lambda x: F.dropout(x, 0.3), lambda: (_x(8, 5, grad=True),)),
    "dropout_p0_p1": (lambda x: (F.dropout(x, 0.0) * 2, F.dropout(x, 1.0)),
                      lambda: (_x(4, 3, grad=True),)),
    "dropout_inplace": (lambda x: F.dropout(x * 1, 0.5, inplace=True),
                        lambda: (_x(6, 4, grad=True),)),
    "dropout_transposed": (lambda x: F.dropout(x.t() * 2, 0.5), lambda: (_x(3, 7, grad=True),)),
    "dropout1d": (lambda x: F.dropout1d(x, 0.5), lambda: (_x(2, 3, 4, grad=True),)),
    "dropout1d_unbatched": (lambda x: F.dropout1d(x, 0.5), lambda: (_x(3, 4, grad=True),)),
    "dropout2d": (lambda x: F.dropout2d(x, 0.5), lambda: (_x(2, 3, 2, 2, grad=True),)),
    "dropout3d": (lambda x: F.dropout3d(x, 0.5), lambda: (_x(2, 3, 2, 2, 2, grad=True),)),
    "alpha_dropout": (lambda x: F.alpha_dropout(x, 0.2, training=True),
                      lambda: (_x(8, 5, grad=True),)),
    "feature_alpha_dropout": (lambda x: F.feature_alpha_dropout(x, 0.2, training=True),
                              lambda: (_x(2, 3, 4, grad=True),)),
    "creation": (lambda x: x + ndgrad.rand(4, 3) * ndgrad.randn(4, 3)
                 + ndgrad.randint(0, 5, (4, 3)) + ndgrad.normal(1.0, 2.0, (4, 3)),
                 lambda: (_x(4, 3, grad=True),)),
    "creation_float64": (lambda x: x + ndgrad.randn(4, 3, dtype=ndgrad.float64),
                         lambda: (_x(4, 3, grad=True),)),
    "like": (lambda x: x * ndgrad.rand_like(x) + ndgrad.randn_like(x)
             + ndgrad.randint_like(x, 3), lambda: (_x(4, 3, grad=True),)),
    "randperm": (lambda x: x[ndgrad.randperm(5)], lambda: (_x(5, 2, grad=True),)),
    "bernoulli": (lambda x: ndgrad.bernoulli(x.sigmoid()) * x, lambda: (_x(6, 3, grad=True),)),
    "bernoulli_p": (lambda x: ndgrad.bernoulli(x, 0.3) + x, lambda: (_x(6, 3, grad=True),)),
    "fills": (lambda x: x * ndgrad.empty(4, 3).uniform_(-1, 1) + ndgrad.empty(4, 3).normal_()
              + ndgrad.empty(4, 3).exponential_() + ndgrad.empty(4, 3).bernoulli_(0.4)
              + ndgrad.empty(4, 3).cauchy_() + ndgrad.empty(4, 3).log_normal_()
              + ndgrad.empty(4, 3).geometric_(0.5) + ndgrad.empty(4, 3).random_(0, 9),
              lambda: (_x(4, 3, grad=True),)),
    "fill_of_input": (lambda x: (x * 2).uniform_() + x, lambda: (_x(4, 3, grad=True),)),
    "normal_tensor": (lambda x: ndgrad.normal(x, 0.5) * x, lambda: (_x(4, 3, grad=True),)),
    "multinomial": (lambda x: (ndgrad.multinomial(x.abs() + 0.1, 2),
                               ndgrad.multinomial(x.abs() + 0.1, 5, True)),
                    lambda: (_x(3, 4),)),
    "attention_dropout": (lambda q: F.scaled_dot_product_attention(q, q * 2, q, dropout_p=0.3),
                          lambda: (_x(2, 4, 5, grad=True),)),
    "rrelu": (lambda x: F.rrelu(x, training=True), lambda: (_x(6, 3, grad=True),)),
    "rrelu_inplace": (lambda x: F.rrelu(x * 1, training=True, inplace=True),
                      lambda: (_x(6, 3, grad=True),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_draws_what_eager_draws(name):
    fn, make = CASES[name]
    args = make()
    compiled = ndgrad.compile(fn)
    _assert_same(_run(compiled, args, 3, seed=11), _run(fn, args, 3, seed=11))
    # later calls from another seed too (the first call traced, these only run the code)
    _assert_same(_run(compiled, args, 2, seed=5), _run(fn, args, 2, seed=5))
    (spec,) = compiled.specializations()           # compiled, with its random nodes
    assert any(is_random(n) for n in spec.graph.all_nodes()) == (name != "dropout_p0_p1")


def test_dropout_module():
    ndgrad.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Dropout(0.5), nn.Linear(6, 2))
    x = _x(8, 4)
    compiled = ndgrad.compile(m)
    _assert_same(_run(compiled, (x,), 2, seed=3), _run(m, (x,), 2, seed=3))
    g_c = [p.grad for p in m.parameters()]
    assert all(g is None for g in g_c)
    ndgrad.manual_seed(4)
    compiled(x).sum().backward()
    grads_c = [p.grad.numpy().copy() for p in m.parameters()]
    m.zero_grad(set_to_none=True)
    ndgrad.manual_seed(4)
    m(x).sum().backward()
    for a, p in zip(grads_c, m.parameters()):
        np.testing.assert_array_equal(a, p.grad.numpy())
    # a function compiled in eval mode draws nothing
    m.eval()
    f_eval = ndgrad.compile(lambda x: m(x))
    before = _state()
    np.testing.assert_array_equal(f_eval(x).detach().numpy(), m(x).detach().numpy())
    np.testing.assert_array_equal(f_eval(x).detach().numpy(), m(x).detach().numpy())
    np.testing.assert_array_equal(before, _state())


def test_transformer_layer_with_dropout():
    ndgrad.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
    x = _x(2, 3, 8)
    _assert_same(_run(ndgrad.compile(layer), (x,), 2, seed=4), _run(layer, (x,), 2, seed=4))


def test_dropout_masks_are_torchs():
    x = np.ones((4, 50), np.float32)
    torch.manual_seed(123)
    want = torch.nn.functional.dropout(torch.tensor(x), 0.3)
    ndgrad.manual_seed(123)
    ndgrad.compile(lambda x: F.dropout(x, 0.3))(ndgrad.tensor(x))   # the tracing call
    ndgrad.manual_seed(123)
    got = ndgrad.compile(lambda x: F.dropout(x, 0.3))(ndgrad.tensor(x))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_two_dropouts_of_one_shape_draw_two_masks():
    x = ndgrad.ones(64)
    f = ndgrad.compile(lambda x: (F.dropout(x, 0.5), F.dropout(x, 0.5)))
    f(x)
    a, b = f(x)
    assert not np.array_equal(a.numpy(), b.numpy())
    g = trace_graph(lambda x: F.dropout(x, 0.5) + F.dropout(x, 0.5), (x,)).graph
    eliminate_common_subexpression(g)
    assert sum(is_random(n) for n in g.nodes()) == 2


def test_unused_draws_still_advance_the_generator():
    def fn(x):
        ndgrad.randn(5)                 # unused, drawn
        x.new_zeros(3).uniform_()       # unused fill of a constant
        F.dropout(x, 0.5)               # unused
        return x * 2

    x = _x(4)
    r = trace_graph(fn, (x,))
    eliminate_dead_code(r.graph.block())
    fold_constants(r.graph)
    assert sum(is_random(n) for n in r.graph.nodes()) == 3
    compiled = ndgrad.compile(fn)
    _assert_same(_run(compiled, (x,), 3, seed=2), _run(fn, (x,), 3, seed=2))
    code = compiled.code
    assert code.count("= _draw_randn_array(") == code.count("= _draw_dropout_noise(") == 1
    assert code.count("= _uniform_fwd(") == 1


def test_recompiles_per_shape_and_numba_backend():
    fn = lambda x: (F.dropout(x.sin() * 2 + 1, 0.5) * 3).tanh()   # noqa: E731
    for backend in ("numpy", "numba"):
        compiled = ndgrad.compile(fn, backend=backend)
        for shape in ((4, 3), (5, 2), (4, 3)):
            x = _x(*shape, grad=True)
            got, want = _run(compiled, (x,), 2, seed=7), _run(fn, (x,), 2, seed=7)
            np.testing.assert_array_equal(got[2], want[2])      # the generator's state
            for xs, ys in zip(got[0] + got[1], want[0] + want[1]):
                for a, b in zip(xs, ys):
                    np.testing.assert_array_equal(a == 0, b == 0)   # the same masks
                    # the numba tier's sin/tanh are within a few ulps of NumPy's
                    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        assert len(compiled.specializations()) == 2


def test_create_graph_through_compiled_dropout():
    def fn(x):
        return F.dropout(x, 0.5) * x * x

    x = _x(5, 3, grad=True).double().detach().requires_grad_()
    compiled = ndgrad.compile(fn)
    res = []
    for f in (compiled, fn):
        ndgrad.manual_seed(8)
        f(x)                                     # a call before: the first one traces
        y = f(x)
        (g,) = ndgrad.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = ndgrad.autograd.grad((g * g).sum(), x)
        res.append((y.detach().numpy(), g.detach().numpy(), gg.numpy(), _state()))
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)
    # the backward reads the forward's mask (a captured value): it draws nothing
    (spec,) = compiled.specializations()
    assert sum(is_random(n) for n in spec.gradient.f.all_nodes()) == 1
    assert not any(is_random(n) for n in spec.gradient.df.all_nodes())
    # the masks are 0 or 2: the second derivative is 2 * mask^2 * 2x... checked by autograd
    assert ndgrad.autograd.gradcheck(lambda x: fn(x) * 0 + x.sin(), (x,))


def test_jit_trace_and_check_trace():
    w = _x(3, 3, grad=True, seed=1)

    def fn(x):
        return F.dropout(x @ w, 0.5).tanh().sum() + ndgrad.randn(2).sum() * 0

    x = _x(4, 3, grad=True)
    ndgrad.manual_seed(5)
    traced = ndgrad.jit.trace(fn, (x,))        # check_trace runs fn again on other values
    after_trace = _state()
    ndgrad.manual_seed(5)
    fn(x)
    np.testing.assert_array_equal(after_trace, _state())    # as one eager call
    _assert_same(_run(traced, (x,), 2, seed=6), _run(fn, (x,), 2, seed=6))
    # a random fill of an empty tensor: the check ignores empty's garbage, never read
    y = ndgrad.ones(300)
    fill = lambda y: y + ndgrad.empty(300).uniform_() + y.new_empty(300).normal_()  # noqa: E731
    _assert_same(_run(ndgrad.jit.trace(fill, (y,)), (y,), 2, seed=1), _run(fill, (y,), 2, seed=1))


def test_threads_share_the_generator():
    f = ndgrad.compile(lambda x: F.dropout(x, 0.5))
    x = ndgrad.ones(32)
    f(x)
    ndgrad.manual_seed(1)
    masks: list = []

    def work():
        for _ in range(20):
            masks.append(f(x).numpy() != 0)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = _state()
    ndgrad.manual_seed(1)
    eager = [F.dropout(x, 0.5).numpy() != 0 for _ in range(40)]
    np.testing.assert_array_equal(after, _state())
    # each call drew one whole mask: the set of masks is eager's, in some interleaving
    assert sorted(m.tobytes() for m in masks) == sorted(m.tobytes() for m in eager)


def test_explicit_generators():
    g = ndgrad.Generator()

    def fn(x):
        return x + ndgrad.rand(3, generator=g) + ndgrad.randn(3)

    x = _x(3)
    compiled = ndgrad.compile(fn)
    res = []
    for f in (compiled, fn):
        g.manual_seed(4)
        ndgrad.manual_seed(4)
        outs = [f(x).numpy().copy() for _ in range(3)]
        res.append((outs, g.get_state().numpy().copy(), _state()))
    for a, b in zip(res[0][0], res[1][0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(res[0][1], res[1][1])
    np.testing.assert_array_equal(res[0][2], res[1][2])
    # an op of the table given generator= is refused (its forward reads the eager call's)
    with pytest.raises(TraceError, match="generator="):
        ndgrad.compile(lambda x: x.uniform_(generator=g))(ndgrad.zeros(2))


def _poisson(x):
    # Poisson draws by NumPy's algorithm on ndgrad's generator (as the Poisson distribution's
    # sampler), outside ``draw``
    from ndgrad._generator import numpy_generator
    return x + ndgrad.from_numpy(numpy_generator(None).poisson(2.0, 4).astype(np.float32))


def test_draws_the_tracer_cannot_see_still_raise():
    x = _x(4)
    with pytest.raises(TraceError, match="random numbers were drawn"):
        ndgrad.compile(_poisson)(x)
    # fullgraph=False: the eager run after the failed trace draws what eager draws
    f = ndgrad.compile(lambda x: _poisson(x) + ndgrad.randn(4), fullgraph=False)
    ndgrad.manual_seed(3)
    with pytest.warns(UserWarning, match="running eagerly"):
        got = f(x).numpy()
    s = _state()
    ndgrad.manual_seed(3)
    want = (_poisson(x) + ndgrad.randn(4)).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(s, _state())


def test_gumbel_softmax_noise_is_a_recorded_draw():
    # its exponential draws go through ``draw`` (Note [Draws in traced functions]): a compiled
    # call draws what eager draws, and leaves the generator where eager leaves it
    x = _x(4)
    f = ndgrad.compile(lambda x: F.gumbel_softmax(x, tau=0.5) + ndgrad.randn(4))
    for _ in range(2):
        ndgrad.manual_seed(5)
        got = f(x).numpy()
        s = _state()
        ndgrad.manual_seed(5)
        want = (F.gumbel_softmax(x, tau=0.5) + ndgrad.randn(4)).numpy()
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(s, _state())


def test_run_time_checks_of_multinomial():
    f = ndgrad.compile(lambda p: ndgrad.multinomial(p, 1))
    f(ndgrad.tensor([0.2, 0.8]))
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        f(ndgrad.tensor([0.0, 0.0]))
    with pytest.raises(RuntimeError, match="invalid multinomial distribution") as e:
        torch.multinomial(torch.tensor([0.0, 0.0]), 1)
    assert "sum of probabilities" in str(e.value)


def test_supported_ops_include_the_random_ops():
    ops = ndgrad.jit.supported_ops()
    for name in ("bernoulli", "normal", "uniform", "exponential", "random"):
        assert name in ops
