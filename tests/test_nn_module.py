"""Module semantics against torch: registration rules and errors, traversal order,
state_dict keys and ``_metadata``, load_state_dict messages/strictness/no half-loading, hooks
(order, arguments, replacement), repr strings, containers, init errors, and an MLP trained
20 steps by plain gradient descent giving torch's losses.

Each ``case`` runs once with ``(torch, torch.nn)`` and once with ``(ndgrad, ndgrad.nn)``
the
results (or exception types and messages) must be equal once ``torch.``/``ndgrad.`` are
normalized.
"""

import warnings

import numpy as np
import pytest

import ndgrad
import ndgrad.nn as nnn

torch = pytest.importorskip("torch")
tnn = torch.nn

from tests.nn_compare import check_module, to_ndgrad  # noqa: E402


def _norm(s):
    return str(s).replace("torch.", "X.").replace("ndgrad.", "X.")


def _outcome(f, T, nn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ("ok", _norm(f(T, nn)))
        except Exception as e:  # noqa: BLE001
            return (type(e).__name__, _norm(e))


cases = []


def case(f):
    cases.append(f)
    return f


@case
def reg1(T, nn):
    m = nn.Module()
    m.register_buffer("a.b", None)


@case
def reg2(T, nn):
    m = nn.Module()
    m.register_buffer("", None)


@case
def reg3(T, nn):
    m = nn.Module()
    m.register_buffer("x", 5)


@case
def reg4(T, nn):
    m = nn.Module()
    m.foo = 1
    m.register_buffer("foo", None)


@case
def reg5(T, nn):
    m = nn.Module()
    m.register_parameter("w", T.ones(2))


@case
def reg6(T, nn):
    m = nn.Module()
    m.register_parameter(3, None)


@case
def reg7(T, nn):
    m = nn.Module()
    m.add_module("a", 3)


@case
def reg8(T, nn):
    m = nn.Module()
    m.add_module("a.b", nn.Module())


@case
def reg9(T, nn):
    m = nn.Linear(2, 2)
    m.weight = T.ones(2, 2)


@case
def reg10(T, nn):
    m = nn.Sequential(nn.Linear(2, 2))
    setattr(m, "0", 3)


@case
def reg11(T, nn):
    m = nn.Module()
    m.register_buffer("b", T.ones(1))
    m.b = 3


@case
def reg12(T, nn):
    m = nn.Linear(2, 2)
    w = nn.Parameter(T.ones(2, 2))
    m.register_parameter("w2", w * 2)


@case
def reg13(T, nn):
    m = nn.Linear(2, 2)
    m.weight = None
    return list(dict(m.named_parameters())), m.weight


@case
def reg14(T, nn):
    class M(nn.Module):
        def __init__(self):
            self.x = nn.Parameter(T.ones(1))

    M()


@case
def reg15(T, nn):
    m = nn.Module()
    return m.nope


@case
def reg16(T, nn):
    nn.Module(3)


@case
def reg17(T, nn):
    nn.Module(a=3)


@case
def reg18(T, nn):
    m = nn.Module()
    m.x = nn.Buffer(T.ones(1), persistent=False)
    m.y = nn.Buffer(T.ones(2))
    return list(m.state_dict()), list(dict(m.named_buffers()))


@case
def reg19(T, nn):
    m = nn.Module()
    m.x = nn.Parameter(T.ones(1))
    m.x = nn.Linear(1, 1)
    return list(m._parameters), list(m._modules)


@case
def reg20(T, nn):
    m = nn.Module()
    m.register_buffer("x", T.ones(1))
    del m.x
    return list(m._buffers), hasattr(m, "x")


@case
def reg21(T, nn):
    m = nn.Module()
    m()


@case
def sub1(T, nn):
    m = nn.Sequential(nn.Linear(1, 1))
    return m.get_submodule("0.weight")


@case
def sub2(T, nn):
    m = nn.Sequential(nn.Linear(1, 1))
    return m.get_submodule("1")


@case
def sub3(T, nn):
    m = nn.Sequential(nn.Linear(1, 1))
    return m.get_parameter("0.bias").shape, m.get_parameter("0.x")


@case
def sub4(T, nn):
    m = nn.Sequential(nn.Linear(1, 1))
    return m.get_buffer("0.weight")


@case
def sub5(T, nn):
    m = nn.Sequential(nn.Linear(1, 1))
    return m.get_parameter("0.training")


@case
def to1(T, nn):
    m = nn.Linear(2, 2).to(T.float64)
    return m.weight.dtype, m.bias.dtype


@case
def to2(T, nn):
    nn.Linear(2, 2).to(T.int64)


@case
def to3(T, nn):
    m = nn.Linear(2, 2)
    m.register_buffer("i", T.ones(2, dtype=T.int64))
    m.half()
    return (
        m.weight.dtype,
        m.i.dtype,
        m.double().weight.dtype,
        m.float().bias.dtype,
        m.bfloat16().weight.dtype,
        m.to("cpu").weight.dtype,
        m.to(T.ones(1, dtype=T.float64)).weight.dtype,
    )


@case
def to4(T, nn):
    m = nn.Linear(2, 2)
    w = m.weight
    m.double()
    return w is m.weight, type(m.weight).__name__


@case
def train1(T, nn):
    m = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.Identity()))
    m.eval()
    return [x.training for x in m.modules()], [x.training for x in m.train().modules()]


@case
def train2(T, nn):
    nn.Linear(1, 1).train(1)


@case
def zg(T, nn):
    m = nn.Linear(2, 2)
    m(T.ones(1, 2)).sum().backward()
    m.zero_grad(set_to_none=False)
    a = m.weight.grad.tolist()
    m.zero_grad()
    return a, m.weight.grad


@case
def rg(T, nn):
    m = nn.Linear(2, 2).requires_grad_(False)
    return [p.requires_grad for p in m.parameters()]


@case
def named1(T, nn):
    lin = nn.Linear(1, 1)
    m = nn.Sequential(lin, nn.Identity(), lin)
    return (
        [n for n, _ in m.named_modules()],
        [n for n, _ in m.named_modules(remove_duplicate=False)],
        [n for n, _ in m.named_parameters(prefix="p")],
        [n for n, _ in m.named_parameters(remove_duplicate=False)],
        [n for n, _ in m.named_children()],
        [n for n, _ in m.named_parameters(recurse=False)],
        list(m.state_dict()),
    )


@case
def repr1(T, nn):
    return repr(
        nn.Sequential(
            nn.Linear(1, 2),
            nn.ModuleList([nn.Identity(), nn.Identity(), nn.Linear(1, 1)]),
            nn.ModuleDict({"b": nn.Flatten(), "a": nn.Unflatten(1, (2, 2))}),
            nn.Bilinear(1, 2, 3, bias=False),
        )
    )


@case
def repr2(T, nn):
    return repr(nn.ParameterList([nn.Parameter(T.ones(2, 3)), T.zeros(1)]))


@case
def repr3(T, nn):
    return repr(
        nn.ParameterDict({"b": nn.Parameter(T.ones(2, 3)), "a": T.zeros(1, dtype=T.float64)})
    )


@case
def repr4(T, nn):
    return (
        repr(nn.ModuleList()),
        repr(nn.Sequential()),
        repr(nn.LazyLinear(3)),
        repr(nn.ModuleList([nn.Identity()])),
    )


@case
def repr5(T, nn):
    class M(nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"

    m = M()
    m.sub = nn.Linear(1, 1)
    return repr(m), repr(M())


@case
def seq1(T, nn):
    s = nn.Sequential(nn.Linear(1, 1), nn.Identity(), nn.Flatten())
    r = [repr(s[1:]), repr(s[-1]), len(s)]
    s.append(nn.Linear(2, 2))
    s.insert(1, nn.Unflatten(1, (1, 1)))
    s.extend([nn.Identity()])
    r.append(repr(s))
    r.append(repr(s.pop(2)))
    r.append(repr(s))
    del s[0]
    r.append(repr(s))
    r.append(repr(s + s))
    r.append(repr(s * 2))
    r.append(repr(2 * s))
    return r


@case
def seq2(T, nn):
    s = nn.Sequential(nn.Identity())
    return s[3]


@case
def seq3(T, nn):
    from collections import OrderedDict

    s = nn.Sequential(OrderedDict([("a", nn.Linear(1, 2)), ("b", nn.Identity())]))
    return repr(s), list(s.state_dict())


@case
def seq4(T, nn):
    s = nn.Sequential(nn.Identity())
    s + 3


@case
def seq5(T, nn):
    s = nn.Sequential(nn.Identity())
    s * 0


@case
def ml1(T, nn):
    m = nn.ModuleList([nn.Identity(), nn.Linear(1, 1)])
    m.append(nn.Flatten())
    m.insert(0, nn.Linear(2, 2))
    m.extend([nn.Identity()])
    m[1] = nn.Linear(3, 3)
    del m[2]
    p = m.pop(0)
    return repr(m), repr(p), repr(m[1:]), repr(m + [nn.Identity()]), list(m.state_dict())


@case
def ml2(T, nn):
    m = nn.ModuleList([nn.Identity()])
    return m[5]


@case
def ml3(T, nn):
    nn.ModuleList(3)


@case
def md1(T, nn):
    m = nn.ModuleDict({"z": nn.Linear(1, 1), "a": nn.Identity()})
    m["q"] = nn.Flatten()
    m.update([("b", nn.Identity())])
    p = m.pop("a")
    return repr(m), list(m.keys()), "z" in m, len(m), repr(p), list(m.state_dict())


@case
def pl1(T, nn):
    p = nn.ParameterList([T.ones(1)])
    p.append(T.zeros(2))
    p.extend([nn.Parameter(T.ones(3))])
    p[0] = T.ones(4)
    return [type(x).__name__ for x in p], [n for n, _ in p.named_parameters()], repr(p[1:]), len(p)


@case
def pl2(T, nn):
    p = nn.ParameterList([T.ones(1)])
    p()


@case
def pd1(T, nn):
    p = nn.ParameterDict({"b": T.ones(1), "a": T.zeros(2)})
    p["c"] = nn.Parameter(T.ones(3))
    p.update({"e": T.ones(1), "d": T.ones(1)})
    q = p.copy()
    del q["a"]
    return (
        list(p.keys()),
        [n for n, _ in p.named_parameters()],
        list(q.keys()),
        "a" in p,
        p.get("zz"),
        p.pop("b").shape,
        len(p),
        list((p | q).keys()),
    )


@case
def sd1(T, nn):
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    sd = m.state_dict()
    del sd["1.bias"]
    sd["extra"] = T.ones(1)
    sd["0.zz"] = T.ones(1)
    sd["5.w"] = T.ones(1)
    return m.load_state_dict(sd)


@case
def sd2(T, nn):
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    sd = m.state_dict()
    del sd["1.bias"]
    sd["extra"] = T.ones(1)
    return m.load_state_dict(sd, strict=False)


@case
def sd3(T, nn):
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    sd = {k: v.clone() + 1 for k, v in m.state_dict().items()}
    sd["1.weight"] = T.ones(2, 2)
    before = [p.detach().clone() for p in m.parameters()]
    try:
        m.load_state_dict(sd)
    except RuntimeError as e:
        return str(e), len(before)


@case
def sd4(T, nn):
    m = nn.Linear(2, 3)
    sd = {"weight": T.ones(3, 2, dtype=T.float64), "bias": T.ones(3)}
    m.load_state_dict(sd, assign=True)
    return type(m.weight).__name__, m.weight.dtype, m.weight.requires_grad


@case
def sd5(T, nn):
    m = nn.Linear(2, 3)
    m.load_state_dict({"weight": 3, "bias": T.ones(3)})


@case
def sd6(T, nn):
    m = nn.Linear(2, 3)
    m.load_state_dict([1])


@case
def sd7(T, nn):
    m = nn.Linear(2, 3)
    sd = m.state_dict(keep_vars=True)
    sd2 = m.state_dict(prefix="p.")
    return (
        type(sd["weight"]).__name__,
        sd["weight"].requires_grad,
        list(sd2),
        sd2._metadata,
        m.state_dict()["weight"].requires_grad,
    )


@case
def sd8(T, nn):
    m = nn.LazyLinear(3)
    m.load_state_dict({"weight": T.ones(3, 4), "bias": T.ones(3)})
    return m, m.weight.shape


@case
def sd9(T, nn):
    m = nn.Module()
    m.register_buffer("a", T.ones(1), persistent=False)
    m.register_buffer("b", T.ones(2))
    m.c = nn.Parameter(T.ones(1))
    return list(m.state_dict()), [n for n, _ in m.named_buffers()]


@case
def lazy1(T, nn):
    m = nn.LazyLinear(3)
    return m.weight.shape


@case
def init1(T, nn):
    return (
        nn.init.calculate_gain("leaky_relu"),
        nn.init.calculate_gain("tanh"),
        nn.init.calculate_gain("selu"),
        nn.init.calculate_gain("conv2d"),
    )


@case
def init2(T, nn):
    nn.init.calculate_gain("foo")


@case
def init3(T, nn):
    nn.init.calculate_gain("leaky_relu", "a")


@case
def init4(T, nn):
    nn.init.xavier_uniform_(T.ones(3))


@case
def init5(T, nn):
    nn.init.kaiming_uniform_(T.ones(3, 3), mode="fan_x")


@case
def init6(T, nn):
    nn.init.eye_(T.ones(3))


@case
def init7(T, nn):
    nn.init.dirac_(T.ones(3, 3))


@case
def init8(T, nn):
    nn.init.dirac_(T.ones(3, 3, 3), groups=2)


@case
def init9(T, nn):
    t = T.ones(4, 2, 3)
    nn.init.dirac_(t, groups=2)
    return t.tolist()


@case
def init10(T, nn):
    nn.init.orthogonal_(T.ones(3))


@case
def init11(T, nn):
    nn.init.sparse_(T.ones(3))


@case
def init12(T, nn):
    return nn.init._calculate_fan_in_and_fan_out(T.ones(3, 4, 5, 6))


@case
def init13(T, nn):
    t = nn.init.eye_(T.ones(2, 3, requires_grad=True))
    return t.tolist(), t.requires_grad, t.grad_fn


@case
def init14(T, nn):
    nn.init.uniform_(T.ones(2), 1, 0)


@case
def init15(T, nn):
    nn.init.normal_(T.ones(2), 0, -1)


@case
def lin1(T, nn):
    nn.Linear(2, 3)(T.ones(4, 3))


@case
def lin2(T, nn):
    nn.functional.linear(T.ones(3), T.ones(3, 3, 3))


@case
def lin3(T, nn):
    return (
        nn.Linear(2, 3, dtype=T.float64).weight.dtype,
        nn.Bilinear(2, 3, 4).weight.shape,
        nn.Linear(2, 3, bias=False).bias,
        nn.Identity(3, a=5)(T.ones(1)).shape,
    )


@case
def lin4(T, nn):
    nn.Bilinear(2, 3, 4)(T.ones(5, 2), T.ones(5, 4))


@case
def unf1(T, nn):
    nn.Unflatten(1, 3)


@case
def unf2(T, nn):
    nn.Unflatten(1.0, (3,))


@case
def unf3(T, nn):
    nn.Unflatten(1, (3, "a"))


@case
def dir1(T, nn):
    m = nn.Linear(1, 1)
    return [k for k in dir(m) if not k.startswith("_")][:200] == sorted(
        k for k in dir(m) if not k.startswith("_")
    )[:200], "weight" in dir(m)


@case
def param1(T, nn):
    return (
        repr(nn.Parameter(T.ones(2), requires_grad=False)),
        repr(nn.Parameter()),
        nn.Parameter(nn.Parameter(T.ones(1))).requires_grad,
    )


@case
def param2(T, nn):
    nn.Parameter(T.ones(2, dtype=T.int64))


@case
def param3(T, nn):
    a = T.ones(2)
    p = nn.Parameter(a)
    a.add_(1)
    return (
        p.tolist(),
        isinstance(p, T.Tensor),
        p.is_leaf,
        type(p + 1).__name__,
        type(p.detach()).__name__,
    )


@case
def hook1(T, nn):
    m = nn.Linear(1, 1)
    m.register_forward_pre_hook(lambda mod, a, k: 3, with_kwargs=True)
    m(T.ones(1))


@case
def hook2(T, nn):
    m = nn.Identity()
    log = []
    m.register_forward_hook(lambda mod, a, o: log.append("a"))
    m.register_forward_hook(lambda mod, a, o: log.append("b"), prepend=True)
    h = m.register_forward_hook(lambda mod, a, o: log.append("c"), always_call=True)
    m.register_forward_pre_hook(lambda mod, a: (a[0] * 2,))
    m.register_forward_hook(lambda mod, a, k, o: o + 1, with_kwargs=True)
    r = m(T.ones(1))
    h.remove()
    m(T.ones(1))
    return log, r.tolist()


@case
def hook3(T, nn):
    class Bad(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Bad()
    log = []
    m.register_forward_hook(lambda mod, a, o: log.append(("always", o)), always_call=True)
    m.register_forward_hook(lambda mod, a, o: log.append("never"))
    try:
        m(T.ones(1))
    except ValueError:
        pass
    return log


@case
def hook4(T, nn):
    m = nn.Linear(1, 1)
    m.register_full_backward_hook(lambda *a: None)
    m.register_backward_hook(lambda *a: None)


@case
def hook5(T, nn):
    m = nn.Linear(2, 1)
    m.register_full_backward_hook(lambda mod, gi, go: (None, None))
    m(T.ones(1, 2, requires_grad=True)).sum().backward()


@case
def sdhook(T, nn):
    m = nn.Linear(1, 1)
    log = []
    m.register_state_dict_pre_hook(lambda mod, prefix, kv: log.append(("pre", prefix, kv)))
    m.register_state_dict_post_hook(
        lambda mod, sd, prefix, meta: log.append(("post", list(sd), prefix, meta))
    )
    m.register_load_state_dict_pre_hook(
        lambda mod, sd, prefix, meta, strict, mk, uk, em: log.append(
            ("lpre", list(sd), prefix, strict)
        )
    )
    m.register_load_state_dict_post_hook(lambda mod, ik: log.append(("lpost", ik)))
    m.load_state_dict(m.state_dict())
    return log


@case
def glob(T, nn):
    log = []
    h1 = nn.modules.module.register_module_forward_pre_hook(
        lambda m, a: log.append(("gpre", type(m).__name__))
    )
    h2 = nn.modules.module.register_module_forward_hook(
        lambda m, a, o: log.append(("gfwd", type(m).__name__))
    )
    m = nn.Sequential(nn.Identity())
    m.register_forward_pre_hook(lambda m, a: log.append("own"))
    m(T.ones(1))
    h1.remove()
    h2.remove()
    m(T.ones(1))
    return log


@case
def cp(T, nn):
    import copy
    import pickle

    m = nn.Sequential(nn.Linear(2, 2))
    m.register_buffer("b", T.ones(1))
    m.eval()
    c = copy.deepcopy(m)
    c[0].weight.data.fill_(7)
    p = pickle.loads(pickle.dumps(m))
    return (
        bool((m[0].weight != 7).all()),
        c.training,
        type(c[0].weight).__name__,
        list(c.state_dict()),
        bool((p[0].weight == m[0].weight).all()),
        p[0].weight.requires_grad,
        type(p[0].weight).__name__,
        repr(p),
    )


@case
def apply1(T, nn):
    m = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.Identity()))
    names = []
    m.apply(lambda x: names.append(type(x).__name__))
    return names


@case
def bufassign(T, nn):
    m = nn.Module()
    m.register_buffer("b", None, persistent=False)
    m.b = T.ones(1)
    return list(m.state_dict()), list(m._buffers)



@case
def cp_grad(T, nn):
    import copy
    import pickle

    p = nn.Parameter(T.ones(2))
    p.grad = T.ones(2) * 3
    m = nn.Linear(2, 2)
    m(T.ones(1, 2)).sum().backward()
    return copy.deepcopy(p).grad, copy.deepcopy(m).weight.grad, pickle.loads(pickle.dumps(p)).grad


@case
def buffer_grad(T, nn):
    b = nn.Buffer(T.ones(2, requires_grad=True) * 2)
    return b.requires_grad, b.is_leaf, nn.UninitializedBuffer().requires_grad


@case
def lazy_buffer(T, nn):
    import importlib

    mixin = importlib.import_module(T.__name__ + ".nn.modules.lazy").LazyModuleMixin

    class L(mixin, nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("rb", nn.UninitializedBuffer())
            self.w = nn.UninitializedParameter()

        def initialize_parameters(self, x):
            self.rb.materialize(x.shape)
            self.w.materialize((2,))

        def forward(self, x):
            return x

    m = L()
    keys = list(m.state_dict())
    m(T.ones(3))
    return keys, type(m.rb).__name__, type(m.w).__name__, m.rb.shape, list(m.state_dict())



@case
def extra_state(T, nn):
    class E(nn.Module):
        _version = 3

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(1, 1)
            self.count = 0

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]

    a = E()
    a.count = 7
    sd = a.state_dict()
    b = E()
    r = b.load_state_dict(sd)
    del sd["_extra_state"]
    try:
        E().load_state_dict(sd)
    except RuntimeError as e:
        err = str(e)
    return list(a.state_dict()), dict(a.state_dict()._metadata), b.count, r, err


@case
def unexpected_extra_state(T, nn):
    m = nn.Linear(1, 1)
    sd = m.state_dict()
    sd["_extra_state"] = 1
    return m.load_state_dict(sd, strict=False), m.load_state_dict(sd)



@case
def buffer_assign_rules(T, nn):
    out = []
    for setup in ("m.x = nn.Parameter(T.ones(1))", "m.x = nn.Linear(1, 1)", "m.x = 5",
                  "m.register_buffer('x', T.ones(1), persistent=False)"):
        m = nn.Module()
        exec(setup)
        try:
            m.x = nn.Buffer(T.zeros(2))
            out.append((list(m._parameters), list(m._buffers), list(m.state_dict())))
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, _norm(e)))
    return out



@case
def ctor_neg(T, nn):
    nn.Linear(-1, 2)


@case
def ctor_float(T, nn):
    nn.Linear(2.5, 3)


@case
def ctor_int_dtype(T, nn):
    nn.Linear(2, 3, dtype=T.int64)


@case
def bilinear_neg(T, nn):
    nn.Bilinear(2, -1, 3)


@case
def flatten_bad(T, nn):
    nn.Flatten(2, 1)(T.ones(2, 3, 4))


@case
def unflatten_bad(T, nn):
    nn.Unflatten(1, (2, 3))(T.ones(2, 5))


@case
def zero_features(T, nn):
    return nn.Linear(0, 3)(T.ones(2, 0)).shape



@case
def pickle_lazy(T, nn):
    import pickle

    m = pickle.loads(pickle.dumps(nn.Sequential(nn.LazyLinear(3))))
    before = repr(m)
    m(T.ones(2, 4))
    h = m.register_forward_hook(print)
    pickle.loads(pickle.dumps(h))
    return before, repr(m), list(m.state_dict())


@pytest.mark.parametrize("case", cases, ids=[c.__name__ for c in cases])
def test_same_as_torch(case):
    assert _outcome(case, ndgrad, nnn) == _outcome(case, torch, tnn)


@pytest.mark.parametrize("assign", [False, True])
def test_no_half_loading(assign):
    """A failing load_state_dict leaves every tensor and attribute as it was (torch copies the
    entries before the bad one)."""
    m = nnn.Sequential(nnn.Linear(2, 3), nnn.Linear(3, 1))
    m.register_buffer("stat", ndgrad.zeros(2))
    before = {k: v.clone() for k, v in m.state_dict().items()}
    objs = [m[0].weight, m[0].bias, m[1].weight]
    sd = {k: v + 1 for k, v in before.items()}
    sd["1.weight"] = ndgrad.ones(2, 2)
    with pytest.raises(RuntimeError, match="size mismatch for 1.weight"):
        m.load_state_dict(sd, assign=assign)
    for k, v in m.state_dict().items():
        assert bool((v == before[k]).all()), k
    assert [m[0].weight, m[0].bias, m[1].weight] == objs
    sd = {k: v + 1 for k, v in before.items()}
    sd["bogus"] = ndgrad.ones(1)
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "bogus"'):
        m.load_state_dict(sd, assign=assign)
    for k, v in m.state_dict().items():
        assert bool((v == before[k]).all()), k
    assert m.load_state_dict(sd, strict=False, assign=assign).unexpected_keys == ["bogus"]
    assert bool((m[0].bias == before["0.bias"] + 1).all())


def _hook_log(T, nn):
    log = []

    def sh(x):
        if x is None:
            return None
        if isinstance(x, tuple):
            return tuple(sh(v) for v in x)
        return (tuple(x.shape), round(float(x.detach().sum()), 9))

    m = nn.Linear(3, 2).double()
    with T.no_grad():
        m.weight.copy_(T.tensor(np.arange(6.0).reshape(2, 3) / 7))
        m.bias.copy_(T.tensor([0.1, -0.2]))
    m.register_forward_pre_hook(lambda mod, a: log.append(("pre", sh(a))))
    m.register_forward_pre_hook(
        lambda mod, a, k: log.append(("prekw", sh(a), sorted(k))), with_kwargs=True, prepend=True
    )
    m.register_forward_hook(lambda mod, a, o: log.append(("fwd", sh(a), sh(o))))
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("bpre", mod is m, sh(go))))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("bwd", sh(gi), sh(go))))
    m.register_full_backward_hook(
        lambda mod, gi, go: tuple(None if g is None else g * 2 for g in gi)
    )
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("bwd2", sh(gi), sh(go))))
    x = T.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    y = m(x)
    (y * T.tensor(np.arange(8.0).reshape(4, 2))).sum().backward()
    log.append(("xgrad", sh(x.grad), sh(m.weight.grad)))
    m(T.tensor(np.ones((1, 3)))).sum().backward()  # no input requires grad
    m2 = nn.Linear(3, 2).double()
    m2.register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
    x3 = T.tensor(np.ones((2, 3)), requires_grad=True)
    m2(x3).sum().backward()
    log.append(("x3", sh(x3.grad / m2.weight.sum(0))))

    class Two(nn.Module):  # two inputs, tuple output
        def forward(self, a, b):
            return a * 2, a * b

    t = Two()
    t.register_full_backward_hook(lambda mod, gi, go: log.append(("two", sh(gi), sh(go))))
    a = T.tensor(np.arange(3.0), requires_grad=True)
    ya, yb = t(a, T.tensor(np.ones(3) * 5))
    (ya.sum() + 3 * yb.sum()).backward()
    log.append(("a", sh(a.grad)))
    return log


def test_hooks_order_and_arguments():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _hook_log(ndgrad, nnn) == _hook_log(torch, tnn)


def test_backward_hook_warns_without_input_grad():
    m = nnn.Linear(2, 1)
    m.register_full_backward_hook(lambda *a: None)
    with pytest.warns(UserWarning, match="Full backward hook is firing"):
        m(ndgrad.ones(1, 2)).sum().backward()


@pytest.mark.parametrize(
    "make,shapes",
    [
        (lambda nn: nn.Linear(4, 3, dtype=torch_or(nn).float64), [(5, 4)]),
        (lambda nn: nn.Linear(4, 3, dtype=torch_or(nn).float64), [(2, 5, 4)]),
        (lambda nn: nn.Linear(4, 3, bias=False, dtype=torch_or(nn).float64), [(4,)]),
        (lambda nn: nn.Bilinear(3, 2, 4, dtype=torch_or(nn).float64), [(5, 3), (5, 2)]),
        (
            lambda nn: nn.Bilinear(3, 2, 4, bias=False, dtype=torch_or(nn).float64),
            [(2, 5, 3), (2, 5, 2)],
        ),
        (lambda nn: nn.Flatten(), [(2, 3, 4)]),
        (lambda nn: nn.Flatten(0, 1), [(2, 3, 4)]),
        (lambda nn: nn.Unflatten(-1, (2, 2)), [(3, 4)]),
        (lambda nn: nn.Identity(), [(3,)]),
        (
            lambda nn: nn.Sequential(
                nn.Linear(4, 3, dtype=torch_or(nn).float64), nn.Flatten(0), nn.Unflatten(0, (3, 2))
            ),
            [(2, 4)],
        ),
    ],
)
def test_layers_against_torch(make, shapes):
    rng = np.random.default_rng(0)
    inputs = [torch.tensor(rng.standard_normal(s)) for s in shapes]
    check_module(make(tnn), make(nnn), *inputs)


def torch_or(nn):
    return torch if nn is tnn else ndgrad


def test_lazy_linear():
    m = nnn.LazyLinear(3, dtype=ndgrad.float64)
    assert nnn.parameter.is_lazy(m.weight)
    y = m(ndgrad.ones(2, 5, dtype=ndgrad.float64))
    assert type(m) is nnn.Linear and m.in_features == 5 and y.shape == (2, 3)
    assert m.weight.dtype == ndgrad.float64 and type(m.weight) is nnn.Parameter
    bound = 1 / 5**0.5
    assert float(m.weight.detach().abs().max()) <= bound
    assert float(m.bias.detach().abs().max()) <= bound


def test_default_init_bounds():
    ndgrad.manual_seed(0)
    m = nnn.Linear(400, 300)
    bound = 1 / 400**0.5
    w = m.weight.detach().numpy()
    assert w.dtype == np.float32 and np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    assert abs(w.std() - bound / 3**0.5) < 0.01 * bound
    b = nnn.Bilinear(20, 3, 1000)
    assert float(b.bias.detach().abs().max()) <= 1 / 20**0.5


def test_mlp_training_trajectory():
    """20 steps of plain gradient descent from torch's weights give torch's losses."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((32, 6))
    Y = rng.standard_normal((32, 2))

    def build(T, nn):
        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(6, 16)
                self.fc2 = nn.Linear(16, 16)
                self.out = nn.Linear(16, 2)

            def forward(self, x):
                return self.out(T.tanh(self.fc2(T.tanh(self.fc1(x)))))

        return MLP().double()

    tm, nm = build(torch, tnn), build(ndgrad, nnn)
    nm.load_state_dict({k: ndgrad.tensor(v.numpy()) for k, v in tm.state_dict().items()})

    def train(T, m, lr=0.1):
        x, y = T.tensor(X), T.tensor(Y)
        losses = []
        for _ in range(20):
            m.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            with T.no_grad():
                for p in m.parameters():
                    p -= lr * p.grad
            losses.append(loss.item())
        return losses

    t_losses, n_losses = train(torch, tm), train(ndgrad, nm)
    np.testing.assert_allclose(n_losses, t_losses, rtol=1e-9)
    assert t_losses[-1] < t_losses[0]
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(nm.state_dict()[k].numpy(), v.numpy(), rtol=1e-9, atol=1e-12)


def test_state_dict_from_torch_loads():
    torch.manual_seed(0)   # float32 outputs near zero would make a relative check flaky
    tm = tnn.Sequential(tnn.Linear(3, 4), tnn.Bilinear(4, 4, 2))
    nm = nnn.Sequential(nnn.Linear(3, 4), nnn.Bilinear(4, 4, 2))
    sd = tm.state_dict()
    assert list(nm.state_dict()) == list(sd)
    assert dict(nm.state_dict()._metadata) == dict(sd._metadata)
    nm.load_state_dict({k: ndgrad.tensor(v.numpy()) for k, v in sd.items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)

    t_out = tm[1](*(tm[0](torch.tensor(x)),) * 2)
    n_out = nm[1](*(nm[0](to_ndgrad(torch.tensor(x))),) * 2)
    np.testing.assert_allclose(n_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def _graph(fn, depth=4):
    names = []

    def walk(g, d):
        if g is None or d > depth:
            return
        names.append((d, type(g).__name__))
        for n, _ in g.next_functions:
            walk(n, d + 1)

    walk(fn.grad_fn, 0)
    return names


@pytest.mark.parametrize(
    "shapes",
    [
        ((3, 4), (5, 4), (5,)),
        ((3, 4), (5, 4), None),
        ((2, 3, 4), (5, 4), (5,)),
        ((2, 3, 4), (5, 4), None),
        ((4,), (5, 4), (5,)),
        ((4,), (5, 4), None),
        ((4,), (4,), None),
    ],
)
def test_linear_records_what_torch_records(shapes):
    def run(T, F):
        xs, ws, bs = shapes
        x = T.ones(*xs, requires_grad=True)
        w = T.ones(*ws, requires_grad=True)
        b = T.ones(*bs, requires_grad=True) if bs else None
        wide = T.ones(*xs[:-1], 2 * xs[-1], requires_grad=True)
        nc = x.transpose(0, 1) if x.dim() == 3 else wide[..., ::2]  # non-contiguous
        # below depth 2 is matmul's own recording of a non-contiguous reshape
        return _graph(F.linear(x, w, b)), _graph(F.linear(nc, w, b), 2)
    assert run(ndgrad, nnn.functional) == run(torch, tnn.functional)


@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_records_what_torch_records(bias):
    def run(T, F):
        x1, x2 = T.ones(3, 4, requires_grad=True), T.ones(3, 2, requires_grad=True)
        w = T.ones(5, 4, 2, requires_grad=True)
        return _graph(F.bilinear(x1, x2, w, T.ones(5, requires_grad=True) if bias else None))
    assert run(ndgrad, nnn.functional) == run(torch, tnn.functional)


def _nested_hook_log(T, nn):
    log = []
    net = nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))).double()
    for name, mod in net.named_modules():
        mod.register_forward_pre_hook(lambda m, a, name=name: log.append(("fpre", name)))
        mod.register_forward_hook(lambda m, a, o, name=name: log.append(("fwd", name)))
        mod.register_full_backward_pre_hook(lambda m, go, name=name: log.append(("bpre", name)))
        mod.register_full_backward_hook(
            lambda m, gi, go, name=name: log.append(
                ("bwd", name, tuple(None if g is None else tuple(g.shape) for g in gi))))
    x = T.ones(5, 3, dtype=T.float64, requires_grad=True)
    net(x).sum().backward()
    net(T.ones(5, 3, dtype=T.float64)).sum().backward()
    return log


def test_nested_hooks_order():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _nested_hook_log(ndgrad, nnn) == _nested_hook_log(torch, tnn)


def test_checkpoint_files_round_trip_with_torch(tmp_path):
    """A state_dict saved by torch loads into the ndgrad model and the other way round (with
    ``_metadata``), and both give the same outputs."""
    nm = nnn.Sequential(nnn.Linear(3, 4), nnn.Bilinear(4, 4, 2))
    tm = tnn.Sequential(tnn.Linear(3, 4), tnn.Bilinear(4, 4, 2))
    torch.save(tm.state_dict(), tmp_path / "t.pt")
    sd = ndgrad.load(tmp_path / "t.pt")
    assert dict(sd._metadata) == dict(tm.state_dict()._metadata)
    assert str(nm.load_state_dict(sd)) == "<All keys matched successfully>"
    x = np.ones((2, 3), np.float32)
    n_out = nm[1](*(nm[0](ndgrad.tensor(x)),) * 2).detach().numpy()
    t_out = tm[1](*(tm[0](torch.tensor(x)),) * 2).detach().numpy()
    np.testing.assert_allclose(n_out, t_out, rtol=1e-6)
    with torch.no_grad():
        for p in tm.parameters():
            p.zero_()
    ndgrad.save(nm.state_dict(), tmp_path / "n.pt")
    result = tm.load_state_dict(torch.load(tmp_path / "n.pt"))
    assert str(result) == "<All keys matched successfully>"
    t_out = tm[1](*(tm[0](torch.tensor(x)),) * 2).detach().numpy()
    np.testing.assert_allclose(n_out, t_out, rtol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda T, F: F.linear(T.ones(2, 3), T.ones(4, 3, dtype=T.float64)),
    lambda T, F: F.linear(T.ones(2, 3), T.ones(4, 3), T.ones(4, dtype=T.float64)),
    lambda T, F: F.linear(T.ones(2, 3, 3), T.ones(4, 3), T.ones(5)),
    lambda T, F: F.linear(T.ones(2, 3), T.ones(4, 3), T.ones(5)),
    lambda T, F: F.linear(T.ones(()), T.ones(4, 3)),
    lambda T, F: F.linear(T.ones(3), T.ones(4, 2, 3)),
    lambda T, F: F.linear(T.ones(2, 3), 5),
    lambda T, F: F.linear(T.ones(2, 3), T.ones(4, 3), 5),
    lambda T, F: F.bilinear(T.ones(2, 3), T.ones(2, 3, 1), T.ones(4, 3, 3)),
    lambda T, F: F.bilinear(T.ones(2, 3), T.ones(3, 3), T.ones(4, 3, 3)),
    lambda T, F: F.bilinear(T.ones(2, 3), T.ones(2, 3), T.ones(4, 3)),
    lambda T, F: F.bilinear(T.ones(2, 2), T.ones(2, 3), T.ones(4, 3, 3)),
    lambda T, F: F.bilinear(T.ones(2, 3), T.ones(2, 3), T.ones(4, 3, 3), T.ones(5)),
    lambda T, F: F.bilinear(T.ones(2, 3), T.ones(2, 3), T.ones(4, 3, 3), T.ones(4, 1)),
    lambda T, F: F.bilinear(T.ones(2, 3), T.ones(2, 3), T.ones(4, 3, 3, dtype=T.float64)),
], ids=lambda f: "")
def test_functional_errors_as_torch(fn):
    def run(T, F):
        try:
            fn(T, F)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, _norm(e)
        return None
    assert run(ndgrad, nnn.functional) == run(torch, tnn.functional)
