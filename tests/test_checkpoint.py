"""Activation checkpointing against PyTorch: ``checkpoint`` (reentrant and non-reentrant) and
``checkpoint_sequential`` give PyTorch's values and gradients on the same model, with PyTorch's
restrictions, warnings and errors; the random state is restored for the recomputation; and
checkpointing lowers the peak memory of a small MLP (tracemalloc, ndgrad only)."""

import gc
import tracemalloc
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as torch_ckpt

import ndgrad
import ndgrad.utils.checkpoint as nd_ckpt

LIBS = (torch, ndgrad)
CKPT = {torch: torch_ckpt, ndgrad: nd_ckpt}


def vals(t):
    return None if t is None else np.round(np.asarray(t.detach().tolist()), 9).tolist()


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared between libraries
        return type(e).__name__, str(e)
    return None


def run_warned(fn):
    """``fn()``'s result (or error) and the warnings it emitted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = ("ok", fn())
        except Exception as e:  # noqa: BLE001 - compared between libraries
            out = (type(e).__name__, str(e))
    return out, [str(w.message) for w in caught]


def params(L, n=3):
    rng = np.random.default_rng(7)
    return [L.tensor(rng.standard_normal((3, 3)) * 0.7, dtype=L.float64, requires_grad=True)
            for _ in range(n)]


def mlp(ps):
    def f(h):
        for p in ps:
            h = (h @ p).tanh()
        return h
    return f


def inputs(L, requires_grad=True):
    return L.tensor([[1.0, 2.0, -1.0], [0.5, -0.3, 0.2]], dtype=L.float64,
                    requires_grad=requires_grad)


# ---------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_gives_torch_gradients(reentrant):
    def run(L):
        ps, x = params(L), inputs(L)
        y = CKPT[L].checkpoint(mlp(ps), x, use_reentrant=reentrant)
        r = [y.grad_fn.name(), y.requires_grad, vals(y)]
        ((y ** 2).sum() + y[0, 1]).backward()
        return r + [vals(x.grad)] + [vals(p.grad) for p in ps]
    assert run(torch) == run(ndgrad)


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("segments", [1, 2, 3, 5])
def test_checkpoint_sequential_gives_torch_gradients(reentrant, segments):
    def run(L):
        ps, x = params(L, 4), inputs(L)
        fs = [lambda h, p=p: (h @ p).tanh() for p in ps] + [lambda h: h.sin(),
                                                              lambda h: h * 2]
        y = CKPT[L].checkpoint_sequential(fs, segments, x, use_reentrant=reentrant)
        y.sum().backward()
        return [vals(y), vals(x.grad)] + [vals(p.grad) for p in ps]
    assert run(torch) == run(ndgrad)


@pytest.mark.parametrize("reentrant", [True, False])
def test_several_outputs(reentrant):
    def run(L):
        x = inputs(L)
        a, b = CKPT[L].checkpoint(lambda t: (t.exp(), t.sin() * 3), x,
                                  use_reentrant=reentrant)
        (a * b).sum().backward()
        return vals(x.grad)
    assert run(torch) == run(ndgrad)


def test_non_reentrant_works_with_autograd_grad_and_parameters():
    def run(L):
        ps, x = params(L), inputs(L)
        y = CKPT[L].checkpoint(mlp(ps), x, use_reentrant=False)
        return [vals(g) for g in L.autograd.grad((y * y).sum(), [x] + ps)]
    assert run(torch) == run(ndgrad)


def test_non_reentrant_with_keyword_arguments():
    def run(L):
        x = inputs(L)
        y = CKPT[L].checkpoint(lambda t, scale=1.0: t.exp() * scale, x, scale=3.0,
                               use_reentrant=False)
        y.sum().backward()
        return vals(x.grad)
    assert run(torch) == run(ndgrad)


def test_non_reentrant_input_not_requiring_grad_still_reaches_parameters():
    def run(L):
        ps, x = params(L), inputs(L, requires_grad=False)
        y = CKPT[L].checkpoint(mlp(ps), x, use_reentrant=False)
        y.sum().backward()
        return y.requires_grad, [vals(p.grad) for p in ps]
    assert run(torch) == run(ndgrad)


def test_non_reentrant_double_backward():
    def run(L):
        x = inputs(L)
        y = CKPT[L].checkpoint(lambda t: t.exp().sin() * t, x, use_reentrant=False)
        g, = L.autograd.grad(y.sum(), x, create_graph=True)
        gg, = L.autograd.grad((g * g).sum(), x)
        return vals(g), vals(gg)
    assert run(torch) == run(ndgrad)


@pytest.mark.parametrize("reentrant", [True, False])
def test_backward_twice(reentrant):
    def run(L):
        x = inputs(L)
        y = CKPT[L].checkpoint(lambda t: t.exp().sin(), x, use_reentrant=reentrant)
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        first = vals(x.grad)
        z = CKPT[L].checkpoint(lambda t: t.exp().sin(), x, use_reentrant=reentrant)
        z.sum().backward()
        return first, error_of(lambda: z.sum().backward())
    t, n = run(torch), run(ndgrad)
    assert t == n
    assert "Trying to backward through the graph a second time" in n[1][1]


def test_inplace_inside_the_checkpointed_function():
    def run(L):
        x = inputs(L)

        def f(t):
            u = t * 2
            u.add_(1)
            u[0] = u[0] * u[1]
            return u.exp()
        y = CKPT[L].checkpoint(f, x, use_reentrant=False)
        y.sum().backward()
        return vals(x.grad)
    assert run(torch) == run(ndgrad)


@pytest.mark.parametrize("reentrant", [True, False])
def test_input_modified_in_place_after_checkpoint_raises(reentrant):
    def run(L):
        h = inputs(L) * 1
        y = CKPT[L].checkpoint(lambda t: t.exp().sin(), h, use_reentrant=reentrant)
        h.mul_(2)
        err = error_of(lambda: y.sum().backward())
        return err[0], err[1].split(" is at version")[0], "is at version 1; expected " \
            "version 0 instead" in err[1]
    assert run(torch) == run(ndgrad)


# ---------------------------------------------------------------------------- restrictions
@pytest.mark.parametrize("how", ["autograd.grad", "backward(inputs=)"])
def test_reentrant_refuses_grad_and_backward_inputs(how):
    def run(L):
        x = inputs(L)
        y = CKPT[L].checkpoint(mlp(params(L)), x, use_reentrant=True)
        if how == "autograd.grad":
            return error_of(lambda: L.autograd.grad(y.sum(), x))
        return error_of(lambda: y.sum().backward(inputs=[x]))
    t, n = run(torch), run(ndgrad)
    assert t == n
    assert "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad()" in n[1]


def test_reentrant_without_inputs_requiring_grad_warns_and_gives_no_grad():
    def run(L):
        ps, x = params(L), inputs(L, requires_grad=False)
        return run_warned(lambda: CKPT[L].checkpoint(mlp(ps), x,
                                                     use_reentrant=True).requires_grad)
    t, n = run(torch), run(ndgrad)
    assert t == n == (("ok", False), ["None of the inputs have requires_grad=True. Gradients "
                                      "will be None"])


def test_missing_use_reentrant_warns():
    def run(L):
        x = inputs(L)
        a = run_warned(lambda: CKPT[L].checkpoint(lambda t: t * 2, x).grad_fn.name())
        b = run_warned(lambda: vals(CKPT[L].checkpoint_sequential([lambda t: t * 2,
                                                                   lambda t: t.sin()], 2, x)))
        return a, b
    t, n = run(torch), run(ndgrad)
    assert t == n
    assert n[0][1][0].startswith("torch.utils.checkpoint: the use_reentrant parameter should "
                                 "be passed explicitly.")


def test_reentrant_rejects_keyword_arguments():
    def run(L):
        return error_of(lambda: CKPT[L].checkpoint(lambda t, s=1: t * s, inputs(L), s=3,
                                                   use_reentrant=True))
    assert run(torch) == run(ndgrad) == ("ValueError", "Unexpected keyword arguments: s")


@pytest.mark.parametrize("reentrant", [True, False])
def test_recomputation_runs_under_the_forwards_autocast(reentrant):
    # forward inside ``autocast``, backward outside (the usual AMP loop): the recomputation
    # casts as the forward did, so the saved bfloat16 tensors match and the gradients are
    # torch's
    def run(L):
        L.manual_seed(0)
        net = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.GELU(), L.nn.Linear(8, 2))
        x = L.tensor(np.linspace(-1, 1, 12).reshape(3, 4), dtype=L.float32,
                     requires_grad=True)
        with L.autocast("cpu", dtype=L.bfloat16):
            y = CKPT[L].checkpoint(net, x, use_reentrant=reentrant)
        y.float().sum().backward()
        return str(y.dtype).split(".")[-1], vals(x.grad), vals(net[0].weight.grad)
    assert run(ndgrad) == run(torch)


def test_context_fn_determinism_check_and_debug():
    # context_fn's first manager wraps the forward, its second the recomputation;
    # determinism_check="none" accepts other shapes; torch's ValueErrors for the rest
    import contextlib

    def run(L):
        log = []

        @contextlib.contextmanager
        def tag(name):
            log.append(name + " in")
            yield
            log.append(name + " out")

        x = inputs(L)
        y = CKPT[L].checkpoint(lambda t: t.exp().sin(), x, use_reentrant=False,
                               context_fn=lambda: (tag("forward"), tag("recompute")))
        log.append("backward")
        y.sum().backward()
        calls = [0]

        def f(t):
            calls[0] += 1
            return t.exp() if calls[0] == 1 else t[:1].exp()
        z = CKPT[L].checkpoint(f, inputs(L), use_reentrant=False, determinism_check="none")
        errors = [error_of(lambda: z.sum().backward())]
        w = CKPT[L].checkpoint(lambda t: t.exp(), x, use_reentrant=False, debug=True)
        errors += [error_of(lambda kw=kw: CKPT[L].checkpoint(L.exp, x, **kw)) for kw in (
            {"use_reentrant": True, "context_fn": lambda: (None, None)},
            {"use_reentrant": True, "debug": True},
            {"use_reentrant": False, "determinism_check": "shapes"},
            {"use_reentrant": False, "debug": True,
             "context_fn": lambda: (contextlib.nullcontext(), contextlib.nullcontext())})]
        return log, vals(x.grad), vals(w), errors
    assert run(ndgrad) == run(torch)


@pytest.mark.parametrize("segments", [0, 4])
def test_checkpoint_sequential_segment_errors(segments):
    def run(L):
        fs = [L.nn.Tanh(), L.nn.Sigmoid()]
        return error_of(lambda: CKPT[L].checkpoint_sequential(fs, segments, inputs(L),
                                                              use_reentrant=False))
    assert run(ndgrad) == run(torch)


def test_recomputation_saving_fewer_tensors_raises_checkpoint_error():
    def run(L):
        calls = [0]

        def f(t):
            calls[0] += 1
            return t.exp().exp() if calls[0] == 1 else t.exp() * 1
        y = CKPT[L].checkpoint(f, inputs(L), use_reentrant=False)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        return type(e.value).__name__, str(e.value).split("\n\n")[0]
    t, n = run(torch), run(ndgrad)
    assert t == n
    assert n[1].endswith("Number of tensors saved during forward: 2\nNumber of tensors saved "
                         "during recomputation: 1.")


def test_recomputation_with_other_shapes_raises_checkpoint_error():
    def run(L):
        calls = [0]

        def f(t):
            calls[0] += 1
            return t.exp() if calls[0] == 1 else t[:1].exp()
        y = CKPT[L].checkpoint(f, inputs(L), use_reentrant=False)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        return type(e.value).__name__, str(e.value).split("\n")[:2]
    t, n = run(torch), run(ndgrad)
    assert t == n
    assert "have different metadata than during the forward pass" in n[1][0]


def test_recomputation_stops_once_every_saved_tensor_is_back():
    def run(L):
        log = []

        def f(t):
            log.append("start")
            a = t.exp()                 # the only tensor saved for backward
            log.append("after exp")
            return a * 2
        y = CKPT[L].checkpoint(f, inputs(L), use_reentrant=False)
        y.sum().backward()
        return log
    assert run(torch) == run(ndgrad) == ["start", "after exp", "start"]


# ---------------------------------------------------------------------------- random state
@pytest.mark.parametrize("reentrant", [True, False])
def test_random_values_are_recomputed_identically(reentrant):
    ndgrad.manual_seed(1)
    x = ndgrad.ones(5, dtype=ndgrad.float64, requires_grad=True)
    y = nd_ckpt.checkpoint(lambda t: t * ndgrad.rand(5, dtype=ndgrad.float64), x,
                           use_reentrant=reentrant)
    ndgrad.rand(5)                       # the stream moves on before backward
    y.sum().backward()
    assert x.grad.tolist() == y.tolist()          # d(x * r)/dx = r, the forward's r


@pytest.mark.parametrize("reentrant", [True, False])
def test_without_preserve_rng_state_the_recomputation_draws_new_values(reentrant):
    x = ndgrad.ones(5, dtype=ndgrad.float64, requires_grad=True)
    y = nd_ckpt.checkpoint(lambda t: t * ndgrad.rand(5, dtype=ndgrad.float64), x,
                           use_reentrant=reentrant, preserve_rng_state=False)
    y.sum().backward()
    assert x.grad.tolist() != y.tolist()


def test_recomputation_leaves_the_random_stream_where_it_was():
    ndgrad.manual_seed(3)
    x = ndgrad.ones(4, requires_grad=True)
    y = nd_ckpt.checkpoint(lambda t: t * ndgrad.rand(4), x, use_reentrant=False)
    y.sum().backward()
    with_ckpt = ndgrad.rand(4).tolist()
    ndgrad.manual_seed(3)
    ndgrad.rand(4)
    assert ndgrad.rand(4).tolist() == with_ckpt


# ---------------------------------------------------------------------------- memory
def _peak(mode):
    rng = np.random.default_rng(0)
    width, batch = 64, 256
    ws = [ndgrad.tensor(rng.standard_normal((width, width)) / 8.0, requires_grad=True)
          for _ in range(12)]
    layers = [lambda h, w=w: (h @ w).tanh() for w in ws]
    x = ndgrad.tensor(rng.standard_normal((batch, width)), requires_grad=True)

    def step():
        if mode == "none":
            h = x
            for f in layers:
                h = f(h)
        else:
            h = nd_ckpt.checkpoint_sequential(layers, 4, x, use_reentrant=(mode == "reentrant"))
        (h * h).sum().backward()
    step()                               # .grad buffers exist before measuring
    gc.collect()
    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


_PEAKS: dict = {}


@pytest.mark.parametrize("mode", ["reentrant", "non_reentrant"])
def test_checkpointing_lowers_peak_memory(mode):
    if "none" not in _PEAKS:
        _PEAKS["none"] = _peak("none")
    assert _peak(mode) / _PEAKS["none"] < 0.8


# ---------------------------------------------------------------------------- more programs
def _nested(L, reentrant):
    x = inputs(L)

    def inner(a):
        return CKPT[L].checkpoint(lambda b: b.exp().sin(), a, use_reentrant=reentrant) * a
    y = CKPT[L].checkpoint(inner, x, use_reentrant=reentrant)
    y.sum().backward()
    return vals(x.grad)


def _non_tensor_arguments_and_outputs(L, reentrant):
    x = inputs(L)
    y, k = CKPT[L].checkpoint(lambda a, s: (a.exp() * s, 7), x, 3.0, use_reentrant=reentrant)
    y.sum().backward()
    return vals(x.grad), k


def _view_input(L, reentrant):
    x = inputs(L)
    v = (x * 1)[1:]
    y = CKPT[L].checkpoint(lambda a: a.exp() * a, v, use_reentrant=reentrant)
    y.sum().backward()
    return vals(x.grad)


def _in_no_grad_mode(L, reentrant):
    x = inputs(L)
    with L.no_grad():
        y = CKPT[L].checkpoint(lambda a: a.exp(), x, use_reentrant=reentrant)
    return y.requires_grad, y.grad_fn


def _outputs_used_by_two_backward_passes(L, reentrant):
    x = inputs(L)
    a, b = CKPT[L].checkpoint(lambda t: (t.exp(), t.sin()), x, use_reentrant=reentrant)
    a.sum().backward(retain_graph=True)
    b.sum().backward()
    return vals(x.grad)


def _user_hooks_around_checkpoint(L, reentrant):
    x = inputs(L)
    log = []
    with L.autograd.graph.saved_tensors_hooks(lambda t: log.append("pack") or t,
                                              lambda t: log.append("unpack") or t):
        y = CKPT[L].checkpoint(lambda a: a.exp().sin(), x, use_reentrant=reentrant)
    y.sum().backward()
    return vals(x.grad), log


PROGRAMS = {f.__name__[1:]: f for f in (
    _nested, _non_tensor_arguments_and_outputs, _view_input, _in_no_grad_mode,
    _outputs_used_by_two_backward_passes, _user_hooks_around_checkpoint)}


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("prog", PROGRAMS)
def test_more_checkpoint_programs(prog, reentrant):
    t = PROGRAMS[prog](torch, reentrant)
    n = PROGRAMS[prog](ndgrad, reentrant)
    assert t == n
