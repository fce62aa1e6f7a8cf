"""allow_mutation_on_saved_tensors and increment_version against torch."""

import pytest
import torch

import ndgrad


def _run(lib, body):
    AM = lib.autograd.graph.allow_mutation_on_saved_tensors
    try:
        return body(lib, AM)
    except Exception as e:                      # noqa: BLE001 - compared with torch's
        return type(e), str(e)


def _grad_doc(lib, AM):
    with AM():
        a = lib.ones(3, requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b.sin_()
        out.backward()
    return a.grad


def _outside(lib, AM):
    with AM():
        a = lib.ones(3, requires_grad=True)
        out = (a ** 2).sum()
    out.backward()


def _nested(lib, AM):
    with AM():
        with AM():
            pass


def _view_of_saved_base(lib, AM):
    with AM():
        a = lib.arange(4., requires_grad=True)
        b = a.clone()
        v = b[1:3]
        out = (v ** 2).sum()
        b.mul_(10)
        out.backward()
    return a.grad


def _offset_view_written(lib, AM):
    with AM():
        a = lib.arange(4., requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b[1:3].mul_(10)
        out.backward()
    return a.grad


def _offset_zero_view_written(lib, AM):
    with AM():
        a = lib.arange(4., requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b[0:2].mul_(10)
        out.backward()
    return a.grad


def _twice(lib, AM):
    with AM():
        a = lib.arange(4., requires_grad=True)
        b = a.clone()
        b.add_(1)
        out = (b ** 2).sum()
        b.add_(1)
        b.add_(1)
        out.backward()
    return a.grad


def _data_and_no_grad(lib, AM):
    with AM():
        a = lib.arange(4., requires_grad=True)
        b = a.clone()
        out = (b ** 3).sum()
        b.data.add_(1)
        with lib.no_grad():
            b.mul_(3)
        out.backward()
    return a.grad


def _out_and_copy(lib, AM):
    with AM():
        a = lib.arange(4., requires_grad=True)
        b = a.clone()
        c = a.clone()
        out = (b * c).sum()
        with lib.no_grad():
            lib.add(b, 5, out=b)
            c.copy_(lib.zeros(4))
        out.backward()
    return a.grad


def _optimizer_step(lib, AM):
    lib.manual_seed(0)
    with AM():
        lin = lib.nn.Linear(3, 2)
        x = lib.ones(1, 3, requires_grad=True)
        out = lin(x).sum()
        opt = lib.optim.SGD(lin.parameters(), lr=1.0)
        for p in lin.parameters():
            p.grad = lib.ones_like(p)
        opt.step()
        out.backward()
    return x.grad


def _inner_hooks(lib, AM):
    with AM():
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):
            a = lib.ones(2, requires_grad=True)
            out = (a * a).sum()
        out.backward()
    return a.grad


CASES = [_grad_doc, _outside, _nested, _view_of_saved_base, _offset_view_written,
         _offset_zero_view_written, _twice, _data_and_no_grad, _out_and_copy, _optimizer_step,
         _inner_hooks]


@pytest.mark.parametrize("body", CASES, ids=lambda f: f.__name__)
def test_allow_mutation_on_saved_tensors_as_torch(body):
    ours, theirs = _run(ndgrad, body), _run(torch, body)
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, ndgrad.Tensor)
        assert ours.tolist() == theirs.tolist()
    else:
        assert ours == theirs


def test_context_closes_cleanly():
    from ndgrad import _write_watch
    with pytest.raises(RuntimeError, match="cannot be nested"):
        _nested(ndgrad, ndgrad.autograd.graph.allow_mutation_on_saved_tensors)
    assert _write_watch.watch is None
    with ndgrad.autograd.graph.allow_mutation_on_saved_tensors() as ctx:
        a = ndgrad.ones(2, requires_grad=True)
        (a * a).sum()
    assert ctx.saved == {} and _write_watch.watch is None


@pytest.mark.parametrize("arg", ["tensor", "list", "bad", "bad list", "str", "generator"])
def test_increment_version_as_torch(arg):
    def run(lib):
        t = lib.ones(2)
        v = t._version
        value = {"tensor": t, "list": [t, t], "bad": 3, "bad list": [t, 3], "str": "ab",
                 "generator": (t for _ in range(2))}[arg]
        try:
            lib.autograd.graph.increment_version(value)
        except RuntimeError as e:
            return str(e), t._version - v
        return t._version - v
    assert run(ndgrad) == run(torch)


def test_increment_version_makes_saved_tensor_stale():
    a = ndgrad.ones(2, requires_grad=True)
    b = a * 1
    out = (b * b).sum()
    ndgrad.autograd.graph.increment_version(b)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        out.backward()
