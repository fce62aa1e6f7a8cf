"""Property test: random short programs of view ops and in-place ops on a tensor derived from a
leaf (``y = x * 1`` or ``x.exp()``), ending with a loss over the base and some views, run
step by step under PyTorch and ndgrad (float64). At every step both libraries must agree: both
raise (same exception class, and the program stops) or both succeed with the same shapes,
``_is_view()`` and ``_version``; at the end every tensor has the same values and
``requires_grad``, and every leaf the same gradient (or backward raises in both).

Views: slices with steps, select, narrow, transpose, unsqueeze/squeeze, view/reshape, diagonal
and expand (nothing derived from an expanded tensor is modified in place: PyTorch's overlap
check is incomplete there). In-place ops: mul_/add_ with a scalar, add_/div_/copy_ with a new
leaf requiring grad, mul_ by (a copy of) another tensor of the program, fill_, clamp_, exp_,
and ``t[idx] = v`` with ints, slices, masks, index lists, scalars or a leaf."""

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ndgrad

LIBS = (torch, ndgrad)


class Pair:
    """The same tensor in both libraries."""

    def __init__(self, t, n, expanded=False):
        self.t, self.n, self.expanded = t, n, expanded

    @property
    def shape(self):
        return tuple(self.t.shape)


def both(fn, *pairs):
    """``fn(L, *tensors)`` in each library: [("ok", result) or ("err", exception)] * 2."""
    out = []
    for i, L in enumerate(LIBS):
        try:
            out.append(("ok", fn(L, *[p.t if i == 0 else p.n for p in pairs])))
        except Exception as e:  # noqa: BLE001 - compared between libraries
            out.append(("err", e))
    return out


def index_in(n):
    return st.integers(0, max(n - 1, 0))


def draw_view(data, shape):
    """A view op valid (mostly) for ``shape``: (label, fn(L, t), makes an expanded tensor)."""
    nd = len(shape)
    kinds = ["unsqueeze", "view_flat", "reshape"]
    if nd >= 1:
        kinds += ["slice", "slice", "select", "narrow", "squeeze", "expand"]
    if nd >= 2:
        kinds += ["transpose", "diagonal", "view_split"]
    kind = data.draw(st.sampled_from(kinds), label="view")
    if kind == "slice":
        d = data.draw(st.integers(0, nd - 1))
        start = data.draw(index_in(shape[d]))
        stop = data.draw(st.integers(start, shape[d]))
        step = data.draw(st.integers(1, 3))
        idx = (slice(None),) * d + (slice(start, stop, step),)
        return f"[{idx}]", lambda L, t: t[idx], False
    if kind == "select":
        d = data.draw(st.integers(0, nd - 1))
        i = data.draw(st.integers(-shape[d], max(shape[d] - 1, -shape[d])))
        return f"select({d}, {i})", lambda L, t: t.select(d, i), False
    if kind == "narrow":
        d = data.draw(st.integers(0, nd - 1))
        s = data.draw(st.integers(0, shape[d]))
        n = data.draw(st.integers(0, shape[d] - s))
        return f"narrow({d}, {s}, {n})", lambda L, t: t.narrow(d, s, n), False
    if kind == "transpose":
        a, b = data.draw(st.integers(0, nd - 1)), data.draw(st.integers(0, nd - 1))
        return f"transpose({a}, {b})", lambda L, t: t.transpose(a, b), False
    if kind == "unsqueeze":
        d = data.draw(st.integers(-nd - 1, nd))
        return f"unsqueeze({d})", lambda L, t: t.unsqueeze(d), False
    if kind == "squeeze":
        d = data.draw(st.one_of(st.none(), st.integers(0, nd - 1)))
        return f"squeeze({d})", lambda L, t: t.squeeze() if d is None else t.squeeze(d), False
    if kind == "view_flat":
        return "view(-1)", lambda L, t: t.view(-1), False
    if kind == "view_split":
        d = data.draw(st.integers(0, nd - 1))
        n = shape[d]
        k = data.draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0] or [1]))
        new = shape[:d] + (k, n // k if n else 0) + shape[d + 1:]
        return f"view({new})", lambda L, t: t.view(new), False
    if kind == "reshape":
        new = data.draw(st.sampled_from([(-1,), tuple(reversed(shape)) or (1,)]))
        return f"reshape({new})", lambda L, t: t.reshape(new), False
    if kind == "diagonal":
        off = data.draw(st.integers(-1, 1))
        a, b = data.draw(st.sampled_from([(0, 1), (1, 0), (0, nd - 1), (nd - 1, 0)]))
        a, b = (0, 1) if a == b else (a, b)
        return f"diagonal({off}, {a}, {b})", lambda L, t: t.diagonal(off, a, b), False
    new = [data.draw(st.integers(1, 3)) if s == 1 else s for s in shape]
    new = [2] * data.draw(st.integers(0, 1)) + new
    return f"expand({new})", lambda L, t: t.expand(*new), True


def new_leaf(shape, seed):
    n = int(np.prod(shape)) if shape else 1
    v = (np.arange(n, dtype=np.float64).reshape(shape) * 0.37 + 0.3 * seed) % 2 + 0.5
    return Pair(torch.tensor(v, dtype=torch.float64, requires_grad=True),
                ndgrad.tensor(v, dtype=ndgrad.float64, requires_grad=True))


INPLACE_KINDS = ["mul_", "mul_", "add_scalar", "add_leaf", "add_leaf", "copy_", "copy_",
                 "fill_", "clamp_", "setitem", "setitem", "setitem_leaf", "setitem_leaf",
                 "exp_", "div_leaf", "mul_other", "mul_other"]


def broadcasts_to(src, dst):
    if len(src) > len(dst):
        return False
    return all(s in (1, d) for s, d in zip(src[::-1], dst[::-1]))


def draw_inplace(data, shape, leaves, tensors):
    """An in-place op for a tensor of ``shape``: (label, fn(L, t[, w]), operand or None).
    The operand is a new leaf, or (``mul_other``) another tensor of the program, copied first
    (``* 1``) so that no op reads memory it writes."""
    kind = data.draw(st.sampled_from(INPLACE_KINDS), label="inplace")
    if kind == "mul_other":
        fits = [j for j, o in enumerate(tensors) if broadcasts_to(o.shape, shape)]
        if fits:
            j = data.draw(st.sampled_from(fits))
            return f"mul_(t{j} * 1)", lambda L, t, o: t.mul_(o * 1), tensors[j]
        kind = "mul_"
    if kind == "mul_":
        s = data.draw(st.sampled_from([2.0, -0.5, 3.0]))
        return f"mul_({s})", lambda L, t: t.mul_(s), None
    if kind == "add_scalar":
        s = data.draw(st.sampled_from([1.0, -2.0, 0.25]))
        return f"add_({s})", lambda L, t: t.add_(s), None
    if kind == "fill_":
        s = data.draw(st.sampled_from([0.5, -1.0]))
        return f"fill_({s})", lambda L, t: t.fill_(s), None
    if kind == "clamp_":
        lo = data.draw(st.sampled_from([None, 0.8, 1.5]))
        hi = data.draw(st.sampled_from([None, 2.0, 3.0])) if lo is not None else 2.5
        return f"clamp_({lo}, {hi})", lambda L, t: t.clamp_(lo, hi), None
    if kind == "exp_":
        return "mul_(0.1).exp_()", lambda L, t: t.mul_(0.1).exp_(), None
    if kind == "setitem":
        if not shape or shape[0] == 0:
            return "[()] = 4", lambda L, t: t.__setitem__((), 4.0), None
        how = data.draw(st.sampled_from(["int", "slice", "mask", "list"]))
        if how == "int":
            i = data.draw(index_in(shape[0]))
            return f"[{i}] = 4", lambda L, t: t.__setitem__(i, 4.0), None
        if how == "slice":
            a, step = data.draw(st.integers(0, shape[0])), data.draw(st.integers(1, 2))
            return f"[{a}::{step}] = -3", \
                lambda L, t: t.__setitem__(slice(a, None, step), -3.0), None
        if how == "mask":
            thr = data.draw(st.sampled_from([1.0, 1.8]))
            return f"[t > {thr}] = 0.25", lambda L, t: t.__setitem__(t > thr, 0.25), None
        idx = data.draw(st.lists(index_in(shape[0]), min_size=1, max_size=3, unique=True))
        return f"[{idx}] = 7", lambda L, t: t.__setitem__(L.tensor(idx), 7.0), None
    # ops with a new leaf requiring grad, broadcast from a suffix of the shape (or 0-d)
    k = data.draw(st.integers(0, len(shape)))
    wshape = shape[1:] if kind == "setitem_leaf" else shape[len(shape) - k:]
    w = new_leaf(wshape, len(leaves) + 1)
    leaves.append(w)
    if kind == "add_leaf":
        alpha = data.draw(st.sampled_from([1, 2]))
        return f"add_(w{wshape} * 1, alpha={alpha})", \
            lambda L, t, w: t.add_(w * 1, alpha=alpha), w
    if kind == "div_leaf":
        return f"div_(w{wshape})", lambda L, t, w: t.div_(w), w
    if kind == "copy_":
        return f"copy_(w{wshape} * 2)", lambda L, t, w: t.copy_(w * 2), w
    i = data.draw(index_in(shape[0])) if shape else 0
    return f"[{i}] = w{wshape}", \
        lambda L, t, w: t.__setitem__(i if t.dim() else (), w * 1), w


def close(a, b):
    return np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True)


def same_outcome(res, log):
    """Both succeeded (True) or both raised the same exception class (False)."""
    (kt, vt), (kn, vn) = res
    assert kt == kn, f"{log}: torch {kt} {vt!r}, ndgrad {kn} {vn!r}"
    if kt == "err":
        assert type(vt) is type(vn), f"{log}: torch {vt!r}, ndgrad {vn!r}"
        return False
    return True


def run_program(data, base, shape):
    n = int(np.prod(shape))
    v = (np.arange(n, dtype=np.float64).reshape(shape) * 0.173) % 1.3 + 0.4
    x = Pair(*[L.tensor(v, dtype=L.float64, requires_grad=True) for L in LIBS])
    y = Pair(x.t * 1, x.n * 1) if base == "mul" else Pair(x.t.exp(), x.n.exp())
    tensors, leaves, log = [y], [x], [f"y = x{shape} {base}"]
    for _ in range(data.draw(st.integers(3, 8), label="steps")):
        i = data.draw(st.integers(0, len(tensors) - 1), label="on")
        h = tensors[i]
        if h.expanded or data.draw(st.booleans(), label="view?"):
            label, fn, expands = draw_view(data, h.shape)
            log.append(f"t{len(tensors)} = t{i}.{label}")
            res = both(fn, h)
            if not same_outcome(res, log):
                return
            t, nd = res[0][1], res[1][1]
            assert tuple(t.shape) == tuple(nd.shape), log
            assert t._is_view() == nd._is_view(), log
            tensors.append(Pair(t, nd, expands or h.expanded))
        else:
            label, fn, w = draw_inplace(data, h.shape, leaves, tensors)
            log.append(f"t{i}.{label}")
            if not same_outcome(both(fn, h, w) if w is not None else both(fn, h), log):
                return
            assert h.t._version == h.n._version, log
    for k, h in enumerate(tensors):
        assert close(h.t.detach().numpy(), h.n.detach().numpy()), (log, k)
        assert h.t.requires_grad == h.n.requires_grad, (log, k)
        assert h.t._version == h.n._version, (log, k)
    used = data.draw(st.lists(st.integers(0, len(tensors) - 1), min_size=1, max_size=3),
                     label="loss")
    log.append(f"loss over t0 and {used}")

    def loss(L, base_t, *views):
        total = base_t.sum() * 0.5
        for k, t in enumerate(views):
            c = L.arange(t.numel(), dtype=L.float64).reshape(t.shape) * 0.1 + k
            total = total + (t * c).sum() + (t * t).sum() * 0.01
        total.backward()
    if not same_outcome(both(loss, tensors[0], *[tensors[k] for k in used]), log):
        return
    for k, leaf in enumerate(leaves):
        gt, gn = leaf.t.grad, leaf.n.grad
        assert (gt is None) == (gn is None), (log, k)
        if gt is not None:
            assert close(gt.numpy(), gn.numpy()), (log, k, gt, gn)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data(), st.sampled_from(["mul", "mul", "mul", "exp"]),
       st.sampled_from([(4, 5), (3, 4, 2), (6,), (3, 3)]))
def test_random_view_and_inplace_programs_match_torch(data, base, shape):
    run_program(data, base, shape)
