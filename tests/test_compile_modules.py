"""torch.compile's module form and torch.jit's scripting API, against torch: ndgrad.compile(model)
returns an OptimizedModule (an nn.Module with torch's state_dict keys) that specializes on the
training flags (Note [Compiled modules and training flags]); Module.compile(); torch.compile's
mode/backend names; script/trace/save/load/freeze/fork (Note [Scripting runs Python])."""

import copy
import io
import pickle
import warnings
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad import nn


class Mode(nn.Module):
    """Training scales by 2, evaluation by 3."""

    def forward(self, x):
        return x * (2.0 if self.training else 3.0)


class Net(nn.Module):
    """Module-level (picklable) model whose training and eval graphs differ."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.bn = Mode()

    def forward(self, x):
        return self.bn(self.fc(x)).tanh()


def _net():
    ndgrad.manual_seed(0)
    return Net()


def test_compiled_module_is_an_optimized_module_with_torchs_keys():
    m = _net()
    c = ndgrad.compile(m)
    tm = torch.compile(torch.nn.Sequential(torch.nn.Linear(4, 3)))
    assert type(c).__name__ == type(tm).__name__ == "OptimizedModule"
    assert isinstance(c, nn.Module) and c._orig_mod is m
    assert list(c.state_dict()) == ["_orig_mod." + k for k in m.state_dict()]
    assert [p is q for p, q in zip(c.parameters(), m.parameters())] == [True] * 2
    assert c.fc is m.fc                              # attributes read through
    c.extra = 5
    assert m.extra == 5                              # and set through, as torch's
    assert repr(c).startswith("OptimizedModule(\n  (_orig_mod): Net(")


def test_compiled_module_follows_train_and_eval():
    m, ref = _net(), _net()
    c = ndgrad.compile(m)
    x = ndgrad.randn(8, 4)
    for mode in (True, False, True, False):
        c.train(mode)
        ref.train(mode)
        out, want = c(x), ref(x)
        assert m.training is mode and m.bn.training is mode
        np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-6,
                                   atol=1e-7)
    # one specialization per flag tuple, reused: the four calls traced twice
    compiled = c.__dict__["_guarded"]._compiled
    assert len(compiled.specializations()) == 1 and len(sum(compiled._other_modes.values(),
                                                            [])) == 1
    out.sum().backward()
    assert out.grad_fn is not None and m.fc.weight.grad is not None


def test_module_compile_in_place():
    m, ref = _net(), _net()
    assert m.compile() is None
    x = ndgrad.randn(6, 4)
    y = m(x)
    assert y.grad_fn.name() == "DifferentiableGraphBackward"
    m.eval()
    ref.eval()
    np.testing.assert_allclose(m(x).detach().numpy(), ref(x).detach().numpy(), rtol=1e-6)
    clone = copy.deepcopy(m)             # a copy compiles again on first use
    assert clone.fc.weight is not m.fc.weight
    np.testing.assert_allclose(clone(x).detach().numpy(), m(x).detach().numpy())
    back = pickle.loads(pickle.dumps(m))
    np.testing.assert_allclose(back(x).detach().numpy(), m(x).detach().numpy())
    with pytest.raises(TypeError, match="keywords"):
        m.compile("inductor")


def test_torch_compile_arguments():
    lin = nn.Linear(2, 2)
    for kw in ({"mode": "max-autotune"}, {"backend": "inductor"}, {"backend": "eager"},
               {"mode": "reduce-overhead", "fullgraph": False}, {"recompile_limit": 2}):
        c = ndgrad.compile(lin, **kw)
        assert c(ndgrad.ones(1, 2)).shape == (1, 2)
    assert ndgrad.compile(lin, disable=True) is lin
    for kw in ({"mode": "fast"}, {"mode": "default", "options": {}}):
        with pytest.raises(RuntimeError) as ours:
            ndgrad.compile(lin, **kw)
        with pytest.raises(RuntimeError) as theirs:
            torch.compile(torch.nn.Linear(2, 2), **kw)
        assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------------------- torch.jit
def test_script_module_shares_state_with_the_original():
    m = _net()
    s = ndgrad.jit.script(m)
    tl = torch.nn.Linear(2, 2)
    ts = torch.jit.script(tl)
    assert type(s).__name__ == type(ts).__name__ == "RecursiveScriptModule"
    assert isinstance(s, ndgrad.jit.ScriptModule) and s.original_name == "Net"
    assert list(s.state_dict()) == list(m.state_dict())
    assert s.fc.weight is m.fc.weight
    s.eval()
    ts.eval()
    assert m.training is tl.training is True      # a flag of its own, as torch's
    assert s.training is s.bn.training is ts.training is False
    x = ndgrad.randn(5, 4)
    np.testing.assert_array_equal(s(x).detach().numpy(), m.eval()(x).detach().numpy())
    m.train()
    assert not s.training
    seq = ndgrad.jit.script(nn.Sequential(nn.Linear(4, 2), nn.ReLU()))
    assert len(seq) == 2 and type(seq[0]).__name__ == "RecursiveScriptModule"
    assert seq(x).shape == (5, 2)
    assert "def forward" in s.code
    assert ndgrad.jit.script(s) is s


def _repr_modules(lib):
    class Gate(lib.nn.Module):
        def forward(self, x):
            return x * 2

    class Cell(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.dg = Gate()
            self.scripted = lib.jit.script(Gate())
            self.traced = lib.jit.trace(lib.nn.Linear(4, 4), lib.ones(1, 4))
            self.seq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Linear(4, 2))

        def forward(self, x):
            return self.seq(self.traced(self.scripted(self.dg(x))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [repr(lib.jit.script(Cell())), repr(lib.jit.trace(Cell(), lib.ones(2, 4))),
                repr(lib.jit.trace(Gate(), lib.ones(2))),
                repr(lib.jit.script(lib.nn.ModuleList([lib.nn.ReLU(), lib.nn.ReLU()])))]


def test_script_and_traced_module_reprs_match_torch():
    """torch prints original_name, a scripted module as RecursiveScriptModule and a traced one
    (and its submodules) by their original class names; a scripted child keeps its own."""
    assert _repr_modules(ndgrad) == _repr_modules(torch)


def _traced_rnns(lib):
    lib.manual_seed(0)
    mods = [lib.nn.LSTM(3, 4), lib.nn.GRU(3, 4, batch_first=True), lib.nn.RNN(3, 4),
            lib.nn.LSTMCell(3, 4), lib.nn.GRUCell(3, 4)]
    shapes = [((2, 1, 3), (5, 1, 3)), ((1, 2, 3), (1, 6, 3)), ((2, 1, 3), (4, 1, 3)),
              ((2, 3), (2, 3)), ((2, 3), (2, 3))]
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m, (s1, s2) in zip(mods, shapes):
            t = lib.jit.trace(m, lib.randn(*s1))
            for s in (s1, s2):
                r = t(lib.randn(*s))
                r = r[0] if isinstance(r, tuple) else r
                out.append((tuple(r.shape), r.detach().numpy().copy()))
    return out


def test_torch_jit_trace_of_rnn_modules_matches_torch():
    """RNN modules build their zero initial state inside forward; the trace check's second run
    lifts it as the traced run does (it was a constant there, and the check refused the
    trace), and a traced RNN runs other sequence lengths as torch's."""
    for (gs, g), (ws, w) in zip(_traced_rnns(ndgrad), _traced_rnns(torch)):
        assert gs == ws
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_script_of_a_lambda_is_torchs_error():
    for lib in (torch, ndgrad):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = lambda x: x + 1  # noqa: E731  (what is scripted)
            line = f.__code__.co_firstlineno
            with pytest.raises(RuntimeError, match=f"Expected a single top-level function: "
                                                   f".*test_compile_modules.py:{line}$"):
                lib.jit.script(f)


def test_script_function_keeps_python_control_flow():
    def f(x: ndgrad.Tensor) -> ndgrad.Tensor:
        if bool(x.sum() > 0):
            return x * 2
        return -x

    sf = ndgrad.jit.script(f)
    assert type(sf).__name__ == "ScriptFunction" and sf.name == "f"
    assert sf(ndgrad.tensor([1.0])).item() == 2.0 and sf(ndgrad.tensor([-1.0])).item() == 1.0
    assert "def f" in sf.code


def test_traced_module_accepts_other_batch_sizes_and_flags():
    m, ref = _net(), _net()
    t = ndgrad.jit.trace(m, ndgrad.randn(8, 4))
    tt = torch.jit.trace(torch.nn.Linear(4, 3), torch.randn(8, 4))
    assert type(t).__name__ == type(tt).__name__ == "TopLevelTracedModule"
    assert [n.kind() for n in t.graph.nodes()]          # the example trace's graph
    t.eval()
    ref.eval()
    assert m.training                  # the traced module's flags are its own
    x = ndgrad.randn(3, 4)
    np.testing.assert_allclose(t(x).detach().numpy(), ref(x).detach().numpy(), rtol=1e-6)


def test_save_load_freeze():
    m = _net().eval()
    s = ndgrad.jit.script(m)
    buf = io.BytesIO()
    ndgrad.jit.save(s, buf)
    buf.seek(0)
    back = ndgrad.jit.load(buf)
    x = ndgrad.randn(2, 4)
    assert type(back).__name__ == "RecursiveScriptModule"
    np.testing.assert_array_equal(back(x).detach().numpy(), s(x).detach().numpy())
    t = ndgrad.jit.trace(m, x)
    buf = io.BytesIO()
    t.save(buf)
    buf.seek(0)
    np.testing.assert_array_equal(ndgrad.jit.load(buf)(x).detach().numpy(),
                                  m(x).detach().numpy())
    assert ndgrad.jit.freeze(s) is s
    cases = [(lambda lib: lib.nn.Linear(1, 1).eval()),
             (lambda lib: lib.jit.script(lib.nn.Linear(1, 1)))]
    for make in cases:
        with pytest.raises(RuntimeError) as ours:
            ndgrad.jit.freeze(make(ndgrad))
        with pytest.raises(RuntimeError) as theirs:
            torch.jit.freeze(make(torch))
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(AttributeError):
        ndgrad.jit.save(m, io.BytesIO())


def test_load_without_the_class_says_why(tmp_path):
    # another process, where the saved module's class is not defined: a RuntimeError that
    # names the class and the remedy, not pickle's bare AttributeError
    import os
    import pathlib
    import subprocess
    import sys
    import textwrap
    src = textwrap.dedent("""
        import sys, ndgrad
        class Scaled(ndgrad.nn.Module):
            def forward(self, x):
                return 2 * x
        ndgrad.jit.save(ndgrad.jit.script(Scaled()), sys.argv[1])
    """)
    path = tmp_path / "scaled.pt"
    subprocess.run([sys.executable, "-c", src, str(path)], check=True,
                   env={**os.environ,
                        "PYTHONPATH": str(pathlib.Path(ndgrad.__file__).parent.parent)})
    with pytest.raises(RuntimeError, match=r"Can't get attribute 'Scaled'.*importable"):
        ndgrad.jit.load(str(path))
    archive = tmp_path / "torchscript.pt"       # torch's own archive: code ndgrad cannot run
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), str(archive))
    with pytest.raises(RuntimeError, match="TorchScript archive written by torch.jit.save"):
        ndgrad.jit.load(str(archive))


def test_decorators_futures_and_queries():
    @ndgrad.jit.ignore
    def a(x):
        return x + 1

    @ndgrad.jit.ignore(drop=True)
    def b(x):
        return x + 2

    assert a(1) == 2 and b(1) == 3
    assert ndgrad.jit.unused(a) is a and ndgrad.jit.export(a) is a
    assert ndgrad.jit.annotate(List[int], []) == []
    fut = ndgrad.jit.fork(lambda x: x * 3, ndgrad.ones(2))
    assert ndgrad.jit.wait(fut).tolist() == [3.0, 3.0]

    def boom():
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        ndgrad.jit.wait(ndgrad.jit.fork(boom))
    assert ndgrad.jit.is_scripting() is torch.jit.is_scripting() is False
    seen = []
    ndgrad.jit.trace(lambda x: (seen.append(ndgrad.jit.is_tracing()), x * 2)[1],
                     ndgrad.ones(2), check_trace=False)
    assert seen == [True] and ndgrad.jit.is_tracing() is False
    for obj, typ in (([1, 2], List[int]), ([1, "a"], List[int]), ({"a": 1}, Dict[str, int]),
                     ((1, "a"), Tuple[int, str]), (None, Optional[int]), (3, Optional[int]),
                     ((1, 2, 3), Tuple[int, ...])):
        assert ndgrad.jit.isinstance(obj, typ) == torch.jit.isinstance(obj, typ), (obj, typ)


class Doubled(nn.Linear):
    """super() in forward and a class attribute: both work on the scripted module."""

    scale = 2.0

    def forward(self, x):
        return super().forward(x) * type(self).scale


def test_scripted_subclass_calls_super_and_reads_class_attributes():
    ndgrad.manual_seed(1)
    m = Doubled(3, 2)
    x = ndgrad.randn(4, 3)
    for s in (ndgrad.jit.script(m), ndgrad.jit.trace(m, x), copy.deepcopy(ndgrad.jit.script(m))):
        np.testing.assert_allclose(s(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
        assert isinstance(s, ndgrad.jit.ScriptModule) and s.original_name == "Doubled"
    y = ndgrad.jit.trace(m, x)(x)
    y.sum().backward()
    assert m.weight.grad is not None           # the traced module's parameters are m's


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_running_statistics_update_once_per_compiled_call(backend):
    """Note [Calls that update their inputs]: the first call, the backward's re-run of the
    normalization and differentiate's example run must not update the statistics again."""
    def make():
        ndgrad.manual_seed(3)
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Tanh(),
                             nn.Unflatten(1, (3, 2)), nn.InstanceNorm1d(3, affine=True,
                                                                        track_running_stats=True)
                             ).double()
    m, ref = make(), make()
    cm = ndgrad.compile(m, backend=backend)
    x = ndgrad.randn(6, 4, dtype=ndgrad.float64)
    for mode in (True, True, True, False, True):
        cm.train(mode)
        ref.train(mode)
        out, want = cm(x), ref(x)
        np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
        if mode:
            out.pow(2).sum().backward()
            want.pow(2).sum().backward()
        for a, b in zip(m.buffers(), ref.buffers()):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
    for a, b in zip(m.parameters(), ref.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_compiled_function_calling_a_module_follows_its_flags():
    m, ref = _net(), _net()
    step = ndgrad.compile(lambda x: m(x).sum())
    x = ndgrad.randn(5, 4)
    for mode in (True, False, False, True):
        m.train(mode)
        ref.train(mode)
        np.testing.assert_allclose(step(x).item(), ref(x).sum().item(), rtol=1e-6)
    only_mode = Mode()                         # no parameters: nothing lifted, still guarded
    f = ndgrad.compile(lambda x: only_mode(x))
    assert f(ndgrad.ones(1)).item() == 2.0
    only_mode.eval()
    assert f(ndgrad.ones(1)).item() == 3.0
    t = ndgrad.jit.trace(lambda x: only_mode(x), ndgrad.ones(1))
    only_mode.train()
    with pytest.raises(RuntimeError, match="training and evaluation"):
        t(ndgrad.ones(1))


def test_compiled_model_with_dropout_draws_eagers_masks():
    """torch.compile(model) with dropout (Note [Random nodes]): the same masks as eager from
    the same seed in training, none in evaluation."""
    def make():
        ndgrad.manual_seed(4)
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 2))
    m, ref = make(), make()
    cm = ndgrad.compile(m)
    x = ndgrad.randn(6, 4)
    for mode in (True, True, False, True):
        cm.train(mode)
        ref.train(mode)
        ndgrad.manual_seed(10)
        out = cm(x)
        ndgrad.manual_seed(10)
        want = ref(x)
        np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
        if mode:
            out.sum().backward()
            want.sum().backward()
    for a, b in zip(m.parameters(), ref.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)


class OwnFlag(nn.Module):
    """Reads its own training flag in forward (no submodule does)."""

    def forward(self, x):
        return x * 2 if self.training else x * 3


@pytest.mark.parametrize("how", ["optimized", "in_place"])
def test_the_compiled_modules_own_flag_is_guarded(how):
    m = OwnFlag()
    c = ndgrad.compile(m) if how == "optimized" else m
    if how == "in_place":
        m.compile()
    assert c(ndgrad.ones(1)).item() == 2.0
    c.eval()
    assert c(ndgrad.ones(1)).item() == 3.0
    c.train()
    assert c(ndgrad.ones(1)).item() == 2.0


def test_replacing_or_adding_a_submodule_traces_again():
    ndgrad.manual_seed(2)
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
    cm = ndgrad.compile(m)
    x = ndgrad.randn(4, 3)
    cm(x)
    for change in (lambda: m.__setitem__(1, nn.Tanh()), lambda: m.append(nn.Sigmoid())):
        change()
        np.testing.assert_array_equal(cm(x).detach().numpy(), m(x).detach().numpy())
    f = ndgrad.compile(lambda x: m(x).sum())
    f(x)
    m[1] = nn.ReLU()
    np.testing.assert_array_equal(f(x).item(), m(x).sum().item())


class _Scaled(nn.Module):
    def __init__(self, n=3):
        super().__init__()
        self.lin = nn.Linear(n, 2)
        self.scale = 2.0
        self.kept = None

    def forward(self, x):
        y = self.lin(x) * self.scale
        self.kept = y.detach()          # a tensor stored for later: no new trace
        return y


def test_changed_module_attributes_trace_again():
    # Note [Guarded module attributes]: the values a trace read are guarded, as torch.compile
    # guards module attributes
    ndgrad.manual_seed(3)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Dropout(0.5), _Scaled(4))
    cm = ndgrad.compile(m)
    x = ndgrad.randn(6, 3)
    m.eval()
    cm(x)

    def same():
        np.testing.assert_array_equal(cm(x).detach().numpy(), m(x).detach().numpy())
    for change in (lambda: setattr(m[3], "scale", -1.5), lambda: setattr(m[1], "eps", 0.5),
                   lambda: delattr(m[3], "scale") or setattr(m[3], "scale", 4.0)):
        change()
        same()
    m.train()
    m[2].p = 0.0                       # dropout off: the training graph must see it
    ndgrad.manual_seed(4)
    a = cm(x)
    ndgrad.manual_seed(4)
    np.testing.assert_allclose(a.detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    m[1].momentum = 0.5                # the running statistics' update uses the new momentum
    before = m[1].running_mean.clone()
    cm(x)
    batch_mean = m[0](x).mean(0)
    np.testing.assert_allclose(m[1].running_mean.numpy(),
                               (0.5 * before + 0.5 * batch_mean).detach().numpy(), rtol=1e-5)


def test_attributes_assigned_by_forward_stay_eager_semantics():
    # Note [Guarded module attributes]: a forward that assigns its module's attributes (a call
    # counter, a tensor kept for later) cannot be replayed by generated code: each such call
    # returns its traced (eager) run, and after a few the kind of input runs eagerly
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.calls = 0

        def forward(self, x):
            self.calls = self.calls + 1
            return self.lin(x) * self.calls

    ndgrad.manual_seed(0)
    m = Counter()
    ref = copy.deepcopy(m)
    cm = ndgrad.compile(m)
    x = ndgrad.randn(2, 3)
    with pytest.warns(UserWarning, match="running eagerly"):
        for _ in range(5):
            np.testing.assert_array_equal(cm(x).detach().numpy(), ref(x).detach().numpy())
    assert m.calls == ref.calls == 5
    s = _Scaled()
    cs = ndgrad.compile(s)
    with pytest.warns(UserWarning, match="running eagerly"):
        for i in range(4):
            y = cs(ndgrad.full((2, 3), float(i)))
            assert s.kept is not None and ndgrad.equal(s.kept, y.detach())


def test_numpy_scalar_and_tensor_attributes_are_guarded():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.npscale = np.float32(2.0)
            self.t = ndgrad.tensor(2.0)

        def forward(self, x):
            return self.lin(x) * self.npscale * self.t

    m = M()
    cm = ndgrad.compile(m)
    x = ndgrad.randn(4, 3)
    for _ in range(2):
        cm(x)
    for change in (lambda: setattr(m, "npscale", np.float32(3.0)),
                   lambda: setattr(m, "t", ndgrad.tensor(-1.0))):
        change()
        np.testing.assert_array_equal(cm(x).detach().numpy(), m(x).detach().numpy())


def test_lazy_module_compiles_after_its_first_call():
    ndgrad.manual_seed(5)
    m = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.Linear(4, 2))
    cm = ndgrad.compile(m)
    x = ndgrad.randn(3, 6)
    first = cm(x)                      # initializes the lazy layer: the eager result
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: later calls are compiled
        for _ in range(3):
            np.testing.assert_array_equal(cm(x).detach().numpy(), m(x).detach().numpy())
    np.testing.assert_array_equal(first.detach().numpy(), m(x).detach().numpy())
    assert len(cm.__dict__["_guarded"]._compiled.specializations()) == 1


def test_scripting_a_compiled_module_follows_the_scripts_mode():
    ndgrad.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))
    m.compile()
    s = ndgrad.jit.script(m)
    s.eval()
    x = ndgrad.randn(4, 8)
    assert m.training
    np.testing.assert_array_equal(s(x).detach().numpy(), m[0](x).detach().numpy())
    t = ndgrad.jit.trace(OwnFlag(), ndgrad.ones(1))
    assert t(ndgrad.ones(1)).item() == 2.0
    t.eval()
    assert t(ndgrad.ones(1)).item() == 3.0          # the traced module's own flag


@pytest.mark.parametrize("norm", ["batch", "instance"])
def test_create_graph_through_a_compiled_normalization(norm):
    """A compiled backward holding a CallBackward runs op by op under create_graph: traced
    again, it baked the traced call's statistics in (wrong from the third call)."""
    ndgrad.manual_seed(0)
    layer = (nn.BatchNorm1d(3) if norm == "batch" else nn.InstanceNorm1d(3, affine=True)).double()
    shape = (4, 3) if norm == "batch" else (4, 3, 5)
    f = lambda x: (layer(x) ** 2).sum()  # noqa: E731
    cf = ndgrad.compile(f)
    for _ in range(4):
        x = ndgrad.randn(*shape, dtype=ndgrad.float64, requires_grad=True)
        hs = []
        for g in (f, cf):
            gx, = ndgrad.autograd.grad(g(x), x, create_graph=True)
            hs.append(ndgrad.autograd.grad((gx * x).sum(), x)[0].numpy())
        np.testing.assert_allclose(hs[1], hs[0], rtol=1e-9, atol=1e-12)


def test_torch_jit_trace_freezes_python_values_with_torchs_warning():
    # data-dependent Python in a traced model: torch warns (TracerWarning) and the trace keeps
    # the branch the example took; calls with inputs of the example's kind replay it
    def run(lib):
        lib.manual_seed(0)

        class Gate(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(3, 3)

            def forward(self, x):
                if x.sum() > 0:
                    return self.lin(x)
                return -x * x.sum().item()

        m = Gate()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = lib.jit.trace(m, lib.ones(1, 3))
        kinds = sorted({(type(w.message).__name__, str(w.message)[:45]) for w in caught
                        if not isinstance(w.message, DeprecationWarning)})
        neg, negs = -lib.ones(1, 3), -lib.ones(4, 3)
        with lib.no_grad():        # another grad mode, another batch size: still the branch
            frozen = [t(neg).tolist() == m.lin(neg).tolist(),
                      t(negs).tolist() == m.lin(negs).tolist()]
        return kinds, frozen
    assert run(ndgrad) == run(torch)


def test_jit_trace_of_a_function_refuses_data_dependent_python():
    """A plain function goes through seed 004's graph path, which refuses a read of a traced
    value (issue 11: TraceError naming the line) where torch only warns."""
    with pytest.raises(ndgrad.jit.TraceError, match=r"test_compile_modules\.py:\d+"):
        ndgrad.jit.trace(lambda x: x * float(x.max()), ndgrad.ones(2))


def test_torch_jit_trace_strict_refuses_dict_outputs():
    def run(lib):
        def f(x):
            return x * 2, {"s": x.sum()}
        with pytest.raises(RuntimeError) as e:
            lib.jit.trace(f, lib.ones(2))
        out = lib.jit.trace(f, lib.ones(2), strict=False)(lib.ones(2))
        return str(e.value), out[1]["s"].item()
    assert run(ndgrad) == run(torch)


def test_torchscript_entry_points_warn_deprecation_as_torch(tmp_path):
    def run(lib):
        buf = io.BytesIO()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = lib.jit.script(lib.nn.Linear(2, 2))
            lib.jit.trace(lib.nn.Linear(2, 2), lib.ones(1, 2))
            lib.jit.save(s, buf)
            buf.seek(0)
            lib.jit.load(buf)
            s.save(str(tmp_path / f"{lib.__name__}.pt"))   # (torch's method takes a path)
            lib.jit.freeze(s.eval())
        return sorted({str(w.message) for w in caught if w.category is DeprecationWarning
                       and "trace_method" not in str(w.message)})
    assert run(ndgrad) == run(torch)
