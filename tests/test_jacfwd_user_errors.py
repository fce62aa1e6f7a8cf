"""jacfwd outside vmap computes all columns in one batched forward pass and falls back to one
pass per column only when the batching layer cannot run the function; an error the function
raises itself is raised as it is, after one call, as torch's jacfwd (one vmapped call) does."""

import pytest
import torch

import ndgrad


class Boom(RuntimeError):
    pass


def _raising(kind):
    def f(m, calls):
        def g(x):
            calls.append(1)
            x * 2                      # some work on the batched tangent first
            if kind == "runtime":
                raise RuntimeError("boom in f")
            if kind == "subclass":
                raise Boom("custom")
            if kind == "notimpl":
                raise NotImplementedError("not here")
            raise ValueError("bad value")
        return g
    return f


@pytest.mark.parametrize("kind", ["runtime", "subclass", "notimpl", "value"])
@pytest.mark.parametrize("transform", ["jacfwd", "hessian"])
def test_user_error_raised_once_as_torch(kind, transform):
    results = []
    for m in (torch, ndgrad):
        calls = []
        fn = getattr(m.func, transform)(_raising(kind)(m, calls))
        with pytest.raises(Exception) as info:
            fn(m.ones(3, dtype=m.float64))
        results.append((type(info.value).__name__, str(info.value), len(calls)))
    assert results[0] == results[1]
    assert results[1][2] == 1


def test_user_error_object_unchanged():
    err = RuntimeError("the very one")

    def f(x):
        raise err
    with pytest.raises(RuntimeError) as info:
        ndgrad.func.jacfwd(f)(ndgrad.ones(2))
    assert info.value is err


def test_batched_pass_calls_the_function_once():
    calls = []

    def f(x):
        calls.append(1)
        return (x * x).sum(0)
    j = ndgrad.func.jacfwd(f)(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ndgrad.float64))
    t = torch.func.jacfwd(lambda x: (x * x).sum(0))(
        torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64))
    assert j.tolist() == t.tolist()
    assert len(calls) == 1
