"""The compiled call's node (ndgrad/jit/executor.py): captures kept without SavedTensor
wrappers, version checks and double backward through them, and a backward that fails after
freeing its captures."""

import numpy as np
import pytest

import ndgrad
from ndgrad.autograd.gradcheck import gradgradcheck
from ndgrad.jit import executor


def _compiled(fn, *example):
    cf = ndgrad.compile(fn)
    cf(*[x.detach().clone().requires_grad_(x.requires_grad) for x in example])   # traces
    return cf


def _x(*shape, rg=True, seed=0):
    rng = np.random.default_rng(seed)
    return ndgrad.tensor(rng.standard_normal(shape), requires_grad=rg)


def test_captures_are_bare_arrays_and_version_checked_tensors():
    x, w = _x(3), _x(3, seed=1)
    cf = _compiled(lambda x, w: (x * w).exp(), x, w)
    y = cf(x, w)
    saved = y.grad_fn._saved
    assert type(saved) is executor._Captures
    assert all(type(a) is np.ndarray for a in saved.arrays)
    # the captured inputs and the node's own output are checked; nothing else is wrapped
    assert {id(t) for _, t, _ in saved.checks} >= {id(x), id(w)}
    y.sum().backward()
    e = (x * w).exp().detach().numpy()
    np.testing.assert_array_equal(x.grad.numpy(), e * w.detach().numpy())
    np.testing.assert_array_equal(w.grad.numpy(), e * x.detach().numpy())


def test_inplace_change_of_a_captured_output_raises_eagers_error():
    def run(fn):
        x = _x(3)
        y = fn(x)
        with ndgrad.no_grad():
            y.mul_(2)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        return str(info.value)

    f = lambda x: x.exp()   # noqa: E731  (exp's backward reads its output)
    e, c = run(f), run(_compiled(f, _x(3)))
    assert "modified by an inplace operation" in c
    assert "output 0 of DifferentiableGraph" in c
    tail = "is at version 1; expected version 0 instead"
    assert tail in c and tail in e


def test_inference_tensor_captured_raises_eagers_error():
    with ndgrad.inference_mode():
        x = ndgrad.ones(3)
    w = ndgrad.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError) as eager:
        x * w
    cf = ndgrad.compile(lambda x, w: x * w)
    for _ in range(2):        # the tracing call, then the compiled one
        with pytest.raises(RuntimeError) as comp:
            cf(x, w)
        assert str(comp.value) == str(eager.value)


def test_double_backward_through_a_captured_output():
    x = _x(4)
    cf = _compiled(lambda x: x.exp() * x.sin(), x)
    assert gradgradcheck(cf, (x,))
    y = cf(x)
    (g,) = ndgrad.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = ndgrad.autograd.grad(g.sum(), x)
    xe = x.detach().clone().requires_grad_(True)
    (ge,) = ndgrad.autograd.grad((xe.exp() * xe.sin()).sum(), xe, create_graph=True)
    (gge,) = ndgrad.autograd.grad(ge.sum(), xe)
    np.testing.assert_allclose(gg.numpy(), gge.numpy(), rtol=1e-12)


class _Boom(ndgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom in backward")


def _failing_df(real):
    """The compiled df wrapped so that it raises after taking (and freeing) its inputs."""
    class Failing:
        owned = True
        code = real.code

        def call_owned(self, args):
            args.clear()
            raise ValueError("boom in backward")

        def __call__(self, *args):
            raise ValueError("boom in backward")
    return Failing()


def test_a_failed_backward_raises_the_same_error_on_retry_as_eager():
    x = _x(3)
    y = _Boom.apply(x).sum()
    for _ in range(2):
        with pytest.raises(ValueError, match="boom in backward"):
            y.backward()

    cf = _compiled(lambda x: x.tanh().sum(), x)
    plan = cf.specializations()[0]._plan
    y = cf(x)
    y.backward(retain_graph=True)          # builds the variant the engine uses
    (mask,) = plan.df_variants
    plan.df_variants[mask] = _failing_df(plan.df_for(mask))
    x.grad = None
    with pytest.raises(ValueError, match="boom in backward"):
        y.backward()
    assert y.grad_fn._saved == ()          # the captures were handed over and are gone
    with pytest.raises(ValueError, match="boom in backward"):
        y.backward()                       # eager's retry: the node's error again
    assert x.grad is None


def test_an_interrupted_backward_raises_the_second_backward_error_on_retry():
    x = _x(3)
    cf = _compiled(lambda x: x.tanh().sum(), x)
    plan = cf.specializations()[0]._plan
    y = cf(x)

    class Interrupted:
        owned = True

        def call_owned(self, args):
            args.clear()
            raise KeyboardInterrupt

    y.backward(retain_graph=True)
    (mask,) = plan.df_variants
    plan.df_variants[mask] = Interrupted()
    with pytest.raises(KeyboardInterrupt):
        y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_gradients_reach_accumulate_grad_without_copies(monkeypatch):
    from ndgrad.autograd import accumulate_grad
    copies = []
    real = accumulate_grad._clone_obey_contract
    monkeypatch.setattr(accumulate_grad, "_clone_obey_contract",
                        lambda g, v: copies.append(g) or real(g, v))
    rng = np.random.default_rng(3)
    x = ndgrad.tensor(rng.standard_normal((8, 5)))
    w = ndgrad.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    b = ndgrad.tensor(rng.standard_normal(4), requires_grad=True)
    cf = _compiled(lambda x, w, b: (x @ w + b).tanh().pow(2).mean(), x, w, b)
    cf(x, w, b).backward()
    assert not copies          # df's fresh arrays are stolen by AccumulateGrad
    xe, we, be = x.detach(), w.detach().requires_grad_(True), b.detach().requires_grad_(True)
    (xe @ we + be).tanh().pow(2).mean().backward()
    np.testing.assert_allclose(w.grad.numpy(), we.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), be.grad.numpy(), rtol=1e-12)
