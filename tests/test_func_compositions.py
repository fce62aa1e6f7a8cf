"""Seeded random compositions of ``ndgrad.func`` transforms, checked against ``torch.func``.

Each case is a base function from ``BASES`` (written once for both libraries, taking a ``Lib``
namespace) wrapped in 2 or 3 transforms from ``TRANSFORMS``. Every transform turns a function of
one float64 tensor ``x`` into another function of the same ``x`` (vmap layers build their
batched input from ``x``, reductions make scalars for grad/hessian), so any stack composes and
the outer layers still differentiate through the inner ones. The composed function runs in
ndgrad and in torch on the same input; values must match, and where torch raises ndgrad must
raise the same exception class. ``ERROR_CASES`` checks the message words of the errors that
users of vmap/grad run into.
"""

from __future__ import annotations

import random
from typing import Any, Callable

import numpy as np
import pytest
import torch
import torch.func as tfunc
import torch.nn.functional as tF

import ndgrad
import ndgrad.func as nfunc
import ndgrad.nn.functional as nF

# torch's own mse_loss under vmap warns about resizing an out tensor (its internals)
pytestmark = pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")

SEED = 20261127
N_CASES = 330


class Lib:
    """The library under test: ``t`` (ndgrad or torch), ``func``, ``F`` and cached constants."""

    def __init__(self, t: Any, func: Any, F: Any) -> None:
        self.t, self.func, self.F = t, func, F
        self._consts: dict = {}
        # modules are built here, outside any vmap (their init draws random numbers); their
        # parameters are replaced by every functional_call
        nn = ndgrad.nn if t is ndgrad else torch.nn
        self.modules = {"lin_in": nn.Linear(3, 2, dtype=t.float64),
                        "lin_w": nn.Linear(3, 2, dtype=t.float64)}

    def const(self, name: str, shape: tuple, dtype: str = "float64", hi: int = 0) -> Any:
        """A constant drawn once per name from a fixed seed, the same in both libraries."""
        key = (name, shape, dtype)
        if key not in self._consts:
            rng = np.random.default_rng([len(name), *map(ord, name)])
            if dtype == "int64":
                a = rng.integers(0, hi, shape).astype(np.int64)
            else:
                a = rng.uniform(-1.0, 1.0, shape)
            self._consts[key] = self.t.from_numpy(a.copy()) if self.t is ndgrad \
                else torch.from_numpy(a.copy())
        return self._consts[key]


def _libs() -> tuple:
    return Lib(ndgrad, nfunc, nF), Lib(torch, tfunc, tF)


# ------------------------------------------------------------------------------ base functions
# (name, input shape, fn(L, x)). Inputs are uniform in [-1, 1] away from kinks' measure-zero sets.
def _chain(L, x):
    return (x.sin() * x.exp()).tanh() + x.abs() * 0.5


def _relu_where_clamp(L, x):
    return L.t.where(x > 0, x.relu() * 2.0, x.clamp(-0.4, 0.4)) + x.clamp(min=-0.3)


def _matmul(L, x):
    return x @ L.const("W34", (3, 4))


def _mv(L, x):
    return L.t.mv(L.const("M46", (4, 6)), x.reshape(6)).sin()


def _dot(L, x):
    return L.t.dot(x, x.cos()) * x


def _reductions(L, x):
    return L.t.stack([x.sum(), x.mean(), (x * x).sum(-1).sum(), x.exp().mean()])


def _max_dim(L, x):
    return x.max(dim=-1).values + x.min(dim=0)[0].sum()


def _softmax(L, x):
    return x.softmax(-1) * x.logsumexp(-1, keepdim=True)


def _log_softmax(L, x):
    return L.F.log_softmax(x * 2.0, dim=0)


def _indexing(L, x):
    idx = L.t.from_numpy(np.array([2, 0, 1])) if L.t is ndgrad \
        else torch.from_numpy(np.array([2, 0, 1]))
    return L.t.cat([x[1:, ::2].reshape(-1), x[..., 0], x[:, idx].reshape(-1)])


def _cat_stack(L, x):
    y = L.t.stack([x, x * x], dim=1)
    return L.t.cat([y.reshape(-1), x.flip(0)]).reshape(2, -1).transpose(0, 1)


def _reshape_transpose(L, x):
    return (x.reshape(3, 2).t() @ x.reshape(2, 3)).exp()


def _cross_entropy(L, x):
    logits = L.F.linear(x, L.const("Wce", (4, 3)), L.const("bce", (4,)))
    return L.F.cross_entropy(logits, L.const("tce", (2,), "int64", hi=4))


def _mse(L, x):
    out = L.F.linear(x.tanh(), L.const("Wmse", (2, 3)))
    return L.F.mse_loss(out, L.const("ymse", (2, 2)), reduction="sum")


def _inplace(L, x):
    y = x * 2.0
    y.add_(1.0)
    y.mul_(x)
    z = y.clone()
    z[0] = z[0] * 3.0
    return z.sin()


def _norms(L, x):
    return L.t.stack([x.norm(), L.t.linalg.vector_norm(x, ord=3),
                      L.t.linalg.vector_norm(x, ord=1)]) * x.sum()


def _fcall_input(L, x):
    m = L.modules["lin_in"]
    params = {"weight": L.const("Wfc", (2, 3)), "bias": L.const("bfc", (2,))}
    return L.func.functional_call(m, params, (x.sin(),))


def _fcall_weight(L, x):
    m = L.modules["lin_w"]
    params = {"weight": x, "bias": L.const("bfw", (2,))}
    return L.func.functional_call(m, params, (L.const("xfw", (4, 3)),)).tanh()


def _full_reductions(L, x):
    return L.t.stack([x.prod(), x.max(), x.amax(), x.std(), x.var(dim=0).sum(),
                      x.logsumexp((0, 1))]) + x.mean()


def _inplace_view(L, x):
    y = x.exp()
    y[:, 1:].mul_(x[:, :2])
    y.t()[0].add_(x[0])
    return y.tanh()


def _gram_einsum(L, x):
    return L.t.einsum("ij,kj->ik", x, x.tanh()) + L.t.outer(x[0], x[1]) + x @ x.t()


def _nn_activations(L, x):
    y = L.F.gelu(x) + L.F.silu(x) * x.sigmoid() + L.F.gelu(x, approximate="tanh")
    return y + (x * x + 1.0).sqrt().log1p() + x.pow(3)


def _layer_norm(L, x):
    return L.F.layer_norm(x * 2.0, (3,), L.const("wln", (3,)), L.const("bln", (3,)))


def _shape_ops(L, x):
    a, b = x.unbind(0)
    c = L.t.cat(x.chunk(3, dim=1), dim=0).squeeze(-1)
    return L.t.stack([a * b, c[:3] + c[3:]]).unsqueeze(0).expand(2, 2, 3).permute(2, 0, 1)


def _gather_scan(L, x):
    idx = x.argmax(dim=1, keepdim=True)
    g = x.gather(1, idx) * x.index_select(1, L.t.tensor([2, 0]))
    return L.t.cat([g.reshape(-1), x.cumsum(1).reshape(-1), x.roll(1, 1).reshape(-1)]) \
        .masked_fill(L.t.tensor([True, False] * 7), 0.5)


BASES: list = [
    ("gram_einsum", (2, 3), _gram_einsum), ("nn_activations", (2, 3), _nn_activations),
    ("shape_ops", (2, 3), _shape_ops), ("layer_norm", (2, 3), _layer_norm),
    ("gather_scan", (2, 3), _gather_scan),
    ("full_reductions", (2, 3), _full_reductions), ("inplace_view", (2, 3), _inplace_view),
    ("chain", (3,), _chain), ("relu_where_clamp", (4,), _relu_where_clamp),
    ("matmul", (2, 3), _matmul), ("mv", (2, 3), _mv), ("dot", (3,), _dot),
    ("reductions", (2, 2), _reductions), ("max_dim", (2, 3), _max_dim),
    ("softmax", (2, 2), _softmax), ("log_softmax", (3,), _log_softmax),
    ("indexing", (2, 3), _indexing), ("cat_stack", (3,), _cat_stack),
    ("reshape_transpose", (6,), _reshape_transpose), ("cross_entropy", (2, 3), _cross_entropy),
    ("mse", (2, 3), _mse), ("inplace", (3,), _inplace), ("norms", (3,), _norms),
    ("fcall_input", (3,), _fcall_input), ("fcall_weight", (2, 3), _fcall_weight),
]


# ------------------------------------------------------------------------------ transforms
# Each maps (L, g, params) to a new function of the same x.
def _vmap0(L, g, p):
    return lambda x: L.func.vmap(g, in_dims=0, out_dims=p["out"])(L.t.stack([x, x.cos()], 0))


def _vmap1(L, g, p):
    return lambda x: L.func.vmap(g, in_dims=1, out_dims=p["out"])(L.t.stack([x, x.sin()], 1))


def _vmap_none(L, g, p):
    b = L.const("vnone", (2,))
    return lambda x: L.func.vmap(lambda a, s: g(a) * s, in_dims=(None, 0),
                                 out_dims=p["out"])(x, b)


def _grad(L, g, p):
    return lambda x: L.func.grad(lambda y: g(y).sin().sum())(x)


def _grad_and_value(L, g, p):
    def h(x):
        gx, v = L.func.grad_and_value(lambda y: (g(y) * g(y)).sum())(x)
        return gx * v
    return h


def _vjp(L, g, p):
    def h(x):
        out, fn = L.func.vjp(g, x)
        return fn(out.cos())[0]
    return h


def _vmap_vjp(L, g, p):
    def h(x):
        out, fn = L.func.vjp(g, x)
        return L.func.vmap(fn)(L.t.stack([out.cos(), out.sin() + 1.0]))[0]
    return h


def _jvp(L, g, p):
    def h(x):
        out, tan = L.func.jvp(g, (x,), (x.cos(),))
        return out + tan
    return h


def _jacrev(L, g, p):
    return lambda x: L.func.jacrev(g)(x)


def _jacfwd(L, g, p):
    return lambda x: L.func.jacfwd(g)(x)


def _hessian(L, g, p):
    return lambda x: L.func.hessian(lambda y: g(y).sin().sum())(x)


TRANSFORMS: list = [
    ("vmap0", _vmap0), ("vmap1", _vmap1), ("vmap_none", _vmap_none), ("grad", _grad),
    ("grad_and_value", _grad_and_value), ("vjp", _vjp), ("vmap_vjp", _vmap_vjp),
    ("jvp", _jvp), ("jacrev", _jacrev), ("jacfwd", _jacfwd), ("hessian", _hessian),
]
_JACS = {"jacrev", "jacfwd", "hessian"}


_FORWARD = {"jvp", "jacfwd", "hessian"}
_VMAPS = {"vmap0", "vmap1", "vmap_none"}
_REVERSE = {"grad", "grad_and_value", "vjp", "vmap_vjp", "jacrev", "hessian"}
_DIFF = _FORWARD | _REVERSE
_VECTORIZING = _VMAPS | {"vmap_vjp", "jacrev", "jacfwd", "hessian"}


def _excluded(base: str, names: list) -> bool:
    """Cases left out: ``names`` lists the transforms innermost first."""
    # keep the Jacobian blow-up small: at most two Jacobian layers per case
    if sum(n in _JACS for n in names) > 2:
        return True
    for i, n in enumerate(names):
        # torch bug: grad_and_value above another differentiating transform (seen with grad,
        # grad_and_value, jacrev, jvp, hessian below it) fails torch's internal assert
        # "level.has_value() && level <= current_level" (functorch/ADInterpreters.cpp)
        if n == "grad_and_value" and _DIFF & set(names[:i]):
            return True
        # torch limitation: in-place ops under forward-over-forward-over-reverse (a forward
        # transform around hessian) raise "ZeroTensors are immutable" on the zero tangents
        # (also seen with jacfwd below hessian)
        if base == "inplace" and n == "hessian" and _FORWARD & set(names[:i] + names[i + 1:]):
            return True
    order = sum(2 if n == "hessian" else n in _DIFF for n in names)
    # torch bug: two vectorizing transforms (vmap, vmap over vjp_fn, jacrev, jacfwd, hessian)
    # around mse_loss raise "The size of tensor a (8) must match the size of tensor b (4)"
    if base == "mse" and sum(n in _VECTORIZING for n in names) >= 2:
        return True
    # torch bug: torch's derivatives of layer_norm's forward-mode formula and its third
    # derivatives are wrong (jvp of jvp, jacrev of jvp, grad of jacfwd, jacrev(grad(jacrev))
    # differ by ~1 from float64 finite differences and from the same function written with
    # mean/rsqrt, which ndgrad matches); its first and second reverse derivatives are right
    if base == "layer_norm" and (order >= 3 or _FORWARD & set(names) and order >= 2):
        return True
    # torch bug: third derivatives of norms, max, std (hessian counts twice) raise "one of the
    # variables needed for gradient computation has been modified by an inplace operation"
    # (a MaskedFill output inside torch's own backward formulas)
    return base in ("norms", "full_reductions") and order >= 3


# Forward-mode transforms are drawn twice as often as the others (vmap over and under them
# is vectorized: Note [Vectorized vmap]).
_WEIGHTS = [2 if name in {"jvp", "jacfwd", "hessian"} else 1 for name, _ in TRANSFORMS]
_VMAP_IDX = [i for i, (name, _) in enumerate(TRANSFORMS) if name in {"vmap0", "vmap1",
                                                                   "vmap_none"}]


def _draw_cases(n: int, seed: int, nested: bool = False) -> list:
    """``n`` (base index, [(transform index, params)], input array) triples; ``nested``:
    2 or 3 vmaps nested directly in each other, maybe with one other transform around or
    inside them."""
    rng = random.Random(seed)
    cases = []
    while len(cases) < n:
        b = rng.randrange(len(BASES))
        depth = rng.choice([2, 2, 3])
        stack = []
        if nested:
            picks = [rng.choice(_VMAP_IDX) for _ in range(depth)]
            if depth == 2 and rng.random() < 0.6:
                picks.insert(rng.choice([0, 2]), rng.randrange(len(TRANSFORMS)))
        else:
            picks = rng.choices(range(len(TRANSFORMS)), _WEIGHTS, k=depth)
        for t in picks:
            stack.append((t, {"out": rng.choice([0, -1])}))
        if _excluded(BASES[b][0], [TRANSFORMS[t][0] for t, _ in stack]):
            continue
        x = np.random.default_rng(rng.randrange(2 ** 31)).uniform(-1.0, 1.0, BASES[b][1])
        cases.append((b, stack, x))
    return cases


def _describe(case: tuple) -> str:
    b, stack, _ = case
    names = [f"{TRANSFORMS[t][0]}(out={p['out']})" for t, p in stack]
    return " o ".join(reversed(names)) + f" o {BASES[b][0]}"


def _build(L: Lib, case: tuple) -> Callable:
    b, stack, _ = case
    base = BASES[b][2]
    g = (lambda x: base(L, x))
    for t, p in stack:
        g = TRANSFORMS[t][1](L, g, p)
    return g


def _to_np(v: Any) -> Any:
    if isinstance(v, (ndgrad.Tensor, torch.Tensor)):
        return v.detach().numpy().copy()
    if isinstance(v, (list, tuple)):
        return [_to_np(u) for u in v]
    return v


def _run(L: Lib, case: tuple) -> tuple:
    x = L.t.from_numpy(case[2].copy()) if L.t is ndgrad else torch.from_numpy(case[2].copy())
    try:
        return "ok", _to_np(_build(L, case)(x))
    except Exception as e:  # noqa: BLE001 - the exception itself is what gets compared
        return "raised", e


def _compare(case: tuple) -> str | None:
    """None when both libraries agree on ``case``, else a description of the mismatch."""
    nd, th = _libs()
    kt, vt = _run(th, case)
    kn, vn = _run(nd, case)
    if kt == "raised":
        if kn != "raised":
            return f"torch raised {type(vt).__name__}: {vt}; ndgrad returned"
        if type(vn) is not type(vt):
            return (f"torch raised {type(vt).__name__}: {vt}; "
                    f"ndgrad raised {type(vn).__name__}: {vn}")
        return None
    if kn == "raised":
        return f"ndgrad raised {type(vn).__name__}: {vn}"
    if vn.shape != vt.shape:
        return f"shape {vn.shape} != torch {vt.shape}"
    if not np.allclose(vn, vt, rtol=1e-8, atol=1e-10):
        return f"values differ by {np.max(np.abs(vn - vt))}"
    return None


CASES = _draw_cases(N_CASES, SEED)
NESTED_CASES = _draw_cases(60, SEED + 1, nested=True)


def test_case_pool_covers_every_transform_and_base():
    used_t = {TRANSFORMS[t][0] for _, stack, _ in CASES for t, _ in stack}
    used_b = {BASES[b][0] for b, _, _ in CASES}
    assert used_t == {n for n, _ in TRANSFORMS}
    assert used_b == {n for n, _, _ in BASES}
    assert len(CASES) >= 300
    assert {len(s) for _, s, _ in CASES} == {2, 3}


def _mismatches(cases: list, chunk: int, step: int, label: str) -> list:
    """The messages of the cases ``chunk``, ``chunk + step``, ... that differ from torch."""
    out = []
    for i in range(chunk, len(cases), step):
        msg = _compare(cases[i])
        if msg is not None:
            out.append(f"{label} {i}: {_describe(cases[i])}: {msg}")
    return out


@pytest.mark.parametrize("chunk", range(6))
def test_random_compositions_match_torch_func(chunk):
    mismatches = _mismatches(CASES, chunk, 6, "case")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize("chunk", range(2))
def test_nested_vmaps_match_torch_func(chunk):
    mismatches = _mismatches(NESTED_CASES, chunk, 2, "nested case")
    assert not mismatches, "\n".join(mismatches)


# ------------------------------------------------------------------------------ errors
def _control_flow(r):
    if r.sum() > 0:
        return r
    return -r


def _error_cases(t: Any, F: Any) -> dict:
    a = np.arange(6.0).reshape(2, 3) / 7
    x = ndgrad.from_numpy(a) if t is ndgrad else torch.from_numpy(a)
    one3 = t.ones(3, dtype=t.float64)
    return {
        "item": lambda: F.vmap(lambda r: r.sum().item())(x),
        "control_flow": lambda: F.vmap(_control_flow)(x),
        "inplace_into_unbatched": lambda: F.vmap(lambda r: t.zeros(3).double().mul_(r))(x),
        "copy_into_unbatched": lambda: F.vmap(lambda r: t.zeros(3).double().copy_(r))(x),
        "grad_nonscalar": lambda: F.grad(lambda r: r * 2)(x),
        "grad_nontensor": lambda: F.grad(lambda r: 1.0)(x),
        "sizes_mismatch": lambda: F.vmap(lambda p, q: p + q)(x, t.ones(3, 3)),
        "in_dims_range": lambda: F.vmap(lambda r: r, in_dims=2)(x),
        "out_dims_range": lambda: F.vmap(lambda r: r.sum(), out_dims=2)(x),
        "grad_of_vmap_item": lambda: F.grad(
            lambda r: F.vmap(lambda q: q * q.sum().item())(r).sum())(x),
        "hessian_of_vmap_item": lambda: F.hessian(
            lambda r: F.vmap(lambda q: q * q.max().item())(r).sum())(x),
        "jacrev_of_vmap_control_flow": lambda: F.jacrev(F.vmap(_control_flow))(x),
        "jvp_tangent_shape": lambda: F.jvp(lambda r: r.sin(), (x,), (one3,)),
        "vjp_cotangent_shape": lambda: F.vjp(lambda r: r.sin(), x)[1](one3),
        "jacrev_nontensor": lambda: F.jacrev(lambda r: [1.0])(x),
        "vmap_inplace_unbatched_in_grad": lambda: F.vmap(
            F.grad(lambda r: t.zeros(3).double().mul_(r).sum()))(x),
    }


@pytest.mark.parametrize("name", sorted(_error_cases(torch, tfunc)))
def test_errors_inside_compositions_match_torch(name):
    with pytest.raises(Exception) as et:
        _error_cases(torch, tfunc)[name]()
    with pytest.raises(Exception) as en:
        _error_cases(ndgrad, nfunc)[name]()
    assert type(en.value) is type(et.value), (en.value, et.value)
    # the essential words: the first 60 characters of torch's first line
    words = str(et.value).split("\n")[0][:60].replace("torch.", "ndgrad.")
    assert str(en.value).startswith(words), (str(en.value), str(et.value))
