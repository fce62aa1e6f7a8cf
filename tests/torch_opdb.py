"""ndgrad against PyTorch's own operator database (``torch.testing``'s OpInfo ``op_db``).

For every OpInfo entry that ndgrad ships (``nn.functional`` included), the entry's own sample
inputs run in both libraries and these checks compare the results:

``forward``   values, shapes and dtypes on the float64 samples
``vjp``       gradients of every input for a random cotangent
``jvp``       forward-mode tangents for random input tangents (entries that support forward AD)
``gradgrad``  second order: the VJP differentiated again, w.r.t. the inputs and the cotangent
``batched``   ``autograd.grad(..., is_grads_batched=True)`` with two stacked cotangents
``fwbatched`` the Jacobian by vectorized forward mode (``jacobian(strategy="forward-mode",
              vectorize=True)``)
``lowp``      forward values at float32, float16 and bfloat16, at those dtypes' tolerances
``inplace``   the in-place variant: same values as out of place, the same ``_version`` bump,
              the result is the input, gradients through it, the refusal on a leaf
``errors``    each of the entry's ``error_inputs`` raises the same exception type with a
              message matching torch's pattern, and leaves its inputs unchanged

A check is ``ok``, ``n/a`` (the entry does not support it, or no sample applies) or a failure
message. Samples are capped per check (``CAPS``) to keep the suite fast.

How an OpInfo names its op decides how ndgrad's is found (``resolve``): a torch builtin or a
function of torch's Python API maps by the entry's dotted name (``linalg.svd`` ->
``ndgrad.linalg.svd``); a lambda written in torch's test code is re-bound so that its ``torch``
global is ``ndgrad`` (``lambda x: torch.flip(x, (0,))`` then calls ``ndgrad.flip``); a method
descriptor maps to the method of the same name.

Run ``python -m tests.torch_opdb [NAME ...]`` for a per-check table, ``--report FILE`` to write
the coverage document (docs/op_coverage.md), ``--update-known`` to rewrite
tests/torch_opdb_known.py from a run. ``tests/test_torch_opdb.py`` runs every shipped
entry and compares its failures with ``KNOWN`` (tests/torch_opdb_known.py).
"""

# ruff: noqa: B023  (closures over loop variables are called within the same iteration)
from __future__ import annotations

import contextlib
import functools
import re
import sys
import types
import warnings
import zlib
from typing import Any, Callable, Optional

import numpy as np
import torch

import ndgrad

warnings.filterwarnings("ignore")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db as _OP_DB

CHECKS = ("forward", "vjp", "jvp", "gradgrad", "batched", "fwbatched", "lowp", "inplace",
          "errors")
CAPS = {"forward": 8, "vjp": 4, "jvp": 3, "gradgrad": 2, "batched": 2, "fwbatched": 2,
        "lowp": 2, "inplace": 3, "errors": 50}
# Entries a NumPy library does not represent (the issue excepts them).
EXCLUDED_PREFIXES = {
    "sparse.": "sparse tensors",
    "to_sparse": "sparse tensors",
    "torch.ops.aten.": "ATen-internal overloads (flash/efficient attention, _safe_softmax)",
    "torch._scaled_mm": "fp8 scaled matrix products (float8 dtypes, a quantized format)",
}
EXCLUDED = {
    "chalf": "complex32 has no NumPy dtype",
    "_chunk_cat": "ATen-internal op",
    "_segment_reduce": "ATen-internal op",
    "_softmax_backward_data": "ATen-internal op",
    "_native_batch_norm_legit": "ATen-internal op (nn)",
    "_batch_norm_with_update": "ATen-internal op (nn)",
    "_upsample_bilinear2d_aa": "ATen-internal op (nn)",
    "native_batch_norm": "ATen-internal op (nn)",
    "native_layer_norm": "ATen-internal op (nn)",
    "native_group_norm": "ATen-internal op (nn)",
    "native_dropout_backward": "ATen-internal op (nn)",
    "max_pool2d_with_indices_backward": "ATen-internal op (nn)",
    "grid_sampler_2d": "ATen-internal op (nn)",
    "grid_sampler_3d": "ATen-internal op (nn)",
    "_unsafe_masked_index": "ATen-internal op",
    "_unsafe_masked_index_put_accumulate": "ATen-internal op",
    "constant_pad_nd": "ATen-internal op (nn.functional.pad)",
    "jiterator_": "CUDA-only jiterator entries",
}

# Entries whose values are random or uninitialized: shapes and dtypes are compared.
RANDOM = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "randn",
          "randn_like", "rand", "rand_like", "randint", "randint_like", "normal", "bernoulli",
          "uniform", "multinomial", "empty_permuted", "svd_lowrank", "pca_lowrank", "cauchy",
          "exponential", "geometric", "log_normal"}
_TOL = {torch.float64: 1e-7, torch.complex128: 1e-7, torch.float32: 1e-4,
        torch.complex64: 1e-4, torch.float16: 1e-2, torch.bfloat16: 4e-2}


def entry_id(o: Any) -> str:
    return o.name + (f"/{o.variant_test_name}" if o.variant_test_name else "")


def excluded(o: Any) -> Optional[str]:
    """The reason an entry is out of scope, or None."""
    for p, why in EXCLUDED_PREFIXES.items():
        if o.name.startswith(p):
            return why
    for p, why in EXCLUDED.items():
        if o.name == p or (p.endswith("_") and o.name.startswith(p)):
            return why
    if type(o.op).__name__ in ("OpOverloadPacket", "OpOverload", "_JittedFunction"):
        return "ATen overload or CUDA jiterator entry"
    return None


ENTRIES = [o for o in _OP_DB if excluded(o) is None]
BY_ID = {entry_id(o): o for o in ENTRIES}


# ---------------------------------------------------------------------------- resolving ops
class Missing(Exception):
    """ndgrad has no counterpart of the entry."""


def _path(root: Any, dotted: str) -> Any:
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise Missing(f"ndgrad has no {dotted}")
    return obj


def _method(name: str) -> Callable:
    def call(self, *args, **kwargs):
        f = getattr(self, name, None)
        if f is None:
            raise Missing(f"ndgrad.Tensor has no method {name}")
        return f(*args, **kwargs)
    call.__name__ = name
    return call


def _rebind(fn: Any) -> Any:
    """``fn`` with ndgrad in place of torch: builtins and torch's Python API by name, lambdas of
    torch's test code with ``torch`` re-bound in their globals."""
    if isinstance(fn, functools.partial):
        return functools.partial(_rebind(fn.func), *fn.args, **fn.keywords)
    if isinstance(fn, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        mod = getattr(fn, "__module__", None) or ""
        name = fn.__name__
        if getattr(fn, "__self__", None) is not None and isinstance(fn.__self__, type):
            return _method(name)       # a Tensor classmethod-like builtin
        for prefix in ("torch._C._linalg", "torch._C._special", "torch._C._fft",
                       "torch._C._nn"):
            if mod == prefix:
                short = {"_linalg": "linalg", "_special": "special", "_fft": "fft",
                         "_nn": "nn.functional"}[prefix.rsplit(".", 1)[1]]
                stripped = name.split("_", 1)[1] if name.startswith(short + "_") else name
                return _path(ndgrad, f"{short}.{stripped}")
        if hasattr(torch, name):
            return _path(ndgrad, name)
        raise Missing(f"cannot map builtin {mod}.{name}")
    if isinstance(fn, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return _method(fn.__name__)
    if isinstance(fn, types.FunctionType):
        mod = fn.__module__ or ""
        if mod.startswith("torch.") and not mod.startswith("torch.testing"):
            # torch's own Python API (torch.functional.einsum, torch.masked._ops.sum ...)
            public = {"torch.nn.functional": "nn.functional.", "torch.functional": "",
                      "torch._tensor": None,
                      "torch.masked._ops": "masked.", "torch.fft": "fft.",
                      "torch.linalg": "linalg.", "torch.special": "special."}
            for m, prefix in public.items():
                if mod.startswith(m):
                    if prefix is None:
                        return _method(fn.__name__)
                    return _path(ndgrad, prefix + fn.__name__)
            return _path(ndgrad, fn.__name__)
        g = dict(fn.__globals__)
        g["torch"] = _Namespace(ndgrad, "")
        out = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
        out.__kwdefaults__ = fn.__kwdefaults__
        return out
    if callable(fn) and getattr(fn, "__module__", "") == "_operator":
        return fn
    raise Missing(f"cannot map {fn!r}")


def resolve(o: Any) -> Callable:
    """ndgrad's function for entry ``o`` (raises Missing)."""
    if o.name.startswith("__") and o.name.endswith("__"):
        f = getattr(ndgrad.Tensor, o.name, None)    # unbound, as torch.Tensor.__radd__ is
        if f is None:
            raise Missing(f"ndgrad.Tensor has no {o.name}")
        return f
    if isinstance(o.op, types.BuiltinFunctionType):
        try:
            return _path(ndgrad, o.name)
        except Missing:
            return _rebind(o.op)
    if isinstance(o.op, types.FunctionType) and (o.op.__module__ or "").startswith("torch.") \
            and not o.op.__module__.startswith("torch.testing"):
        try:
            return _path(ndgrad, o.name)
        except Missing:
            pass
    return _rebind(o.op)


def shipped(o: Any) -> bool:
    """True if ndgrad has the entry's op: it resolves, and its first sample reaches no missing
    name (a re-bound lambda may name a function ndgrad lacks)."""
    try:
        fn = resolve(o)
        samples = _samples(o, main_dtype(o), False, 1)
        for s in samples:
            nin = s.build(ndgrad, lambda i, t: _nd_tensor(t, False))
            with _quiet():
                fn(nin[0], *nin[1], **nin[2])
    except Missing:
        return False
    except AttributeError as e:
        return "has no attribute" not in str(e)
    except Exception:    # noqa: BLE001
        return True
    return True


class _Namespace:
    """``ndgrad`` (or one of its submodules) as seen by a re-bound lambda: a name ndgrad lacks
    raises Missing instead of AttributeError."""

    def __init__(self, mod: Any, path: str) -> None:
        self._mod, self._path = mod, path

    def __getattr__(self, name: str) -> Any:
        v = getattr(self._mod, name, None)
        if v is None:
            raise Missing(f"ndgrad has no {self._path}{name}")
        if isinstance(v, types.ModuleType):
            return _Namespace(v, f"{self._path}{name}.")
        return v


# ---------------------------------------------------------------------------- conversions
_ND_DTYPE = {getattr(torch, n): getattr(ndgrad, n) for n in (
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8", "int8",
    "int16", "int32", "int64", "bool")}


def _np(t: Any) -> np.ndarray:
    """A tensor of either library as a float64/complex128/int/bool ndarray."""
    if isinstance(t, torch.Tensor):
        t = t.detach().resolve_conj().resolve_neg()
        if t.dtype in (torch.bfloat16, torch.float16):
            t = t.double()
        return t.numpy(force=True)
    a = t.detach().numpy()
    if a.dtype.kind == "f" and a.dtype.itemsize < 4 or str(a.dtype) == "bfloat16":
        a = a.astype(np.float64)
    return a


def _nd_tensor(t: torch.Tensor, requires_grad: Optional[bool] = None) -> Any:
    dt = _ND_DTYPE.get(t.dtype)
    if dt is None:
        raise Missing(f"no ndgrad dtype for {t.dtype}")
    r = ndgrad.tensor(_np(t), dtype=dt)
    rg = t.requires_grad if requires_grad is None else requires_grad
    if rg and (t.dtype.is_floating_point or t.dtype.is_complex):
        r.requires_grad_(True)
    return r


# ---- torch.nn modules passed as arguments (issue 9, loss) ----
def _nd_module(m: Any) -> Any:
    """A parameterless torch.nn module (``distance_function=nn.PairwiseDistance()``) as the
    ndgrad.nn module of the same class with the same attributes."""
    cls = getattr(ndgrad.nn, type(m).__name__, None)
    if cls is None or list(m.parameters()) or list(m.buffers()):
        raise Missing(f"torch module argument {type(m).__name__}")
    out = cls()
    for k, v in vars(m).items():
        if not k.startswith("_") and isinstance(v, (bool, int, float, str, type(None))):
            setattr(out, k, v)
    return out
# ---- end torch.nn modules ----


def tree_map(obj: Any, leaf: Callable[[Any], Any]) -> Any:
    """Map ``leaf`` over the tensors (and dtypes/sizes) nested in tuples, lists and dicts."""
    if isinstance(obj, torch.Tensor):
        return leaf(obj)
    if isinstance(obj, torch.Size):
        return tuple(obj)
    if isinstance(obj, torch.dtype):
        if obj not in _ND_DTYPE:
            raise Missing(f"no ndgrad dtype for {obj}")
        return _ND_DTYPE[obj]
    if isinstance(obj, (torch.memory_format, torch.layout)):
        return getattr(ndgrad, str(obj).split(".")[-1])
    if isinstance(obj, torch.device):
        return "cpu"
    if isinstance(obj, torch.Generator):
        raise Missing("samples with a torch.Generator")
    # ---- torch.nn modules passed as arguments (issue 9, loss) ----
    if isinstance(obj, torch.nn.Module):
        return _nd_module(obj)
    # ---- end torch.nn modules ----
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return tuple(tree_map(x, leaf) for x in obj)
    if isinstance(obj, (tuple, list)):
        return type(obj)(tree_map(x, leaf) for x in obj)
    if isinstance(obj, dict):
        return {k: tree_map(v, leaf) for k, v in obj.items()}
    return obj


def _torch_map(obj: Any, leaf: Callable[[Any], Any]) -> Any:
    """``tree_map`` for torch's own call: tensors substituted, everything else unchanged."""
    if isinstance(obj, torch.Tensor):
        return leaf(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_torch_map(x, leaf) for x in obj))
    if isinstance(obj, (tuple, list)) and not isinstance(obj, torch.Size):
        return type(obj)(_torch_map(x, leaf) for x in obj)
    if isinstance(obj, dict):
        return {k: _torch_map(v, leaf) for k, v in obj.items()}
    return obj


def tensors_of(obj: Any) -> list:
    """The tensors nested in ``obj``, in ``tree_map`` order."""
    out: list = []

    def visit(x):
        if isinstance(x, (torch.Tensor, ndgrad.Tensor)):
            out.append(x)
        elif isinstance(x, (tuple, list)):
            for y in x:
                visit(y)
        elif isinstance(x, dict):
            for y in x.values():
                visit(y)
    visit(obj)
    return out


class Sample:
    """One OpInfo sample, callable in either library with per-tensor substitutions."""

    def __init__(self, s: Any) -> None:
        self.s = s
        self.leaves = tensors_of((s.input, s.args, s.kwargs))

    def build(self, m: Any, sub: Callable[[int, torch.Tensor], Any]) -> tuple:
        """(input, args, kwargs) for library ``m``; ``sub(i, t)`` gives leaf i."""
        counter = iter(range(len(self.leaves)))

        def leaf(t):
            return sub(next(counter), t)
        mapper = _torch_map if m is torch else tree_map
        return (mapper(self.s.input, leaf), mapper(self.s.args, leaf),
                mapper(self.s.kwargs, leaf))


def _rng(*key: Any) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("/".join(map(str, key)).encode()))


def _rand_like(t: Any, rng: np.random.Generator, batch: tuple = ()) -> np.ndarray:
    shape = batch + tuple(t.shape)
    a = rng.standard_normal(shape)
    if t.dtype.is_complex:
        a = a + 1j * rng.standard_normal(shape)
    return a


def _as(m: Any, a: np.ndarray, like: Any, requires_grad: bool = False) -> Any:
    dt = like.dtype if m is torch else like.dtype
    t = m.tensor(a, dtype=dt)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _float_like(t: Any) -> bool:
    return t.dtype.is_floating_point or t.dtype.is_complex


# ---------------------------------------------------------------------------- comparison
class Mismatch(AssertionError):
    pass


def compare(got: Any, want: Any, what: str, tol: Optional[float] = None,
            random: bool = False) -> None:
    """Raise Mismatch unless the tensors nested in ``got`` match those in ``want`` (only
    shapes and dtypes when ``random``)."""
    gs, ws = _flat_out(got), _flat_out(want)
    if len(gs) != len(ws):
        raise Mismatch(f"{what}: {len(gs)} outputs, torch has {len(ws)}")
    for k, (g, w) in enumerate(zip(gs, ws)):
        if w is None or g is None:
            if (w is None) != (g is None):
                wz = w is None or not np.any(_np(w)) if not isinstance(w, (int, float, bool)) \
                    else False
                gz = g is None or not np.any(_np(g)) if not isinstance(g, (int, float, bool)) \
                    else False
                if not (wz and gz):
                    raise Mismatch(f"{what}[{k}]: {'None' if g is None else 'tensor'}, torch "
                                   f"{'None' if w is None else 'tensor'}")
            continue
        if not isinstance(w, torch.Tensor):
            if isinstance(g, (ndgrad.Tensor, torch.Tensor)) or g != w and not (
                    isinstance(w, float) and np.isclose(g, w, equal_nan=True)):
                raise Mismatch(f"{what}[{k}]: {g!r}, torch {w!r}")
            continue
        if not isinstance(g, ndgrad.Tensor):
            raise Mismatch(f"{what}[{k}]: {type(g).__name__}, torch a tensor")
        if tuple(g.shape) != tuple(w.shape):
            raise Mismatch(f"{what}[{k}]: shape {tuple(g.shape)}, torch {tuple(w.shape)}")
        if str(g.dtype).split(".")[-1] != str(w.dtype).split(".")[-1]:
            raise Mismatch(f"{what}[{k}]: dtype {g.dtype}, torch {w.dtype}")
        if random:
            continue
        a, b = _np(g), _np(w)
        t = tol if tol is not None else _TOL.get(w.dtype, 0)
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            ok = np.allclose(a, b, rtol=t, atol=t, equal_nan=True)
        else:
            ok = np.array_equal(a, b)
        if not ok:
            err = np.nanmax(np.abs(a.astype(complex) - b.astype(complex))) if a.size else 0
            raise Mismatch(f"{what}[{k}]: values differ (max abs err {err:.3g})")


def _flat_out(x: Any) -> list:
    if isinstance(x, (tuple, list)):
        out = []
        for y in x:
            out += _flat_out(y)
        return out
    return [x]


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _call(m: Any, o: Any, fn: Callable, inp: Any, args: Any, kwargs: Any, process: bool = True):
    out = fn(inp, *args, **kwargs)
    return out


def _processed(m: Any, sample: Sample, out: Any) -> Any:
    f = sample.s.output_process_fn_grad
    if m is not torch:
        f = _rebind(f) if isinstance(f, types.FunctionType) else f
    return f(out)


def _diff_outputs(out: Any) -> list:
    return [t for t in _flat_out(out) if isinstance(t, (torch.Tensor, ndgrad.Tensor))
            and _float_like(t) and t.requires_grad]


def _run_both(o: Any, fn: Callable, sample: Sample, sub_t: Callable, sub_n: Callable):
    """Run torch and ndgrad; returns (torch_out, nd_out, torch_exc, nd_exc)."""
    tin = sample.build(torch, sub_t)
    nin = sample.build(ndgrad, sub_n)
    tout = nout = texc = nexc = None
    try:
        tout = o.op(tin[0], *tin[1], **tin[2])
    except Exception as e:    # noqa: BLE001
        texc = e
    try:
        nout = fn(nin[0], *nin[1], **nin[2])
    except Missing:
        raise
    except Exception as e:    # noqa: BLE001
        nexc = e
    return tin, nin, tout, nout, texc, nexc


# torch's vmap refusals: limitations of its batching fallback, not semantics.
_TORCH_VMAP_LIMITS = ("Batching rule not implemented", "vmap: ", "does not support vmap",
                      "fallback path does not support")


def _both_raise_or(texc, nexc, what):
    if texc is not None and nexc is not None:
        return True
    if texc is not None and nexc is None and any(p in str(texc) for p in _TORCH_VMAP_LIMITS):
        return True
    if texc is not None:
        raise Mismatch(f"{what}: ndgrad returns where torch raises {type(texc).__name__}: "
                       f"{str(texc)[:120]}")
    if nexc is not None:
        raise Mismatch(f"{what}: ndgrad raises {type(nexc).__name__}: {str(nexc)[:160]}")
    return False


# ---------------------------------------------------------------------------- the checks
def _samples(o: Any, dtype: Any, requires_grad: bool, cap: int) -> list:
    with _quiet():
        try:
            it = o.sample_inputs("cpu", dtype, requires_grad=requires_grad)
        except Exception:    # noqa: BLE001
            return []
        out = []
        for s in it:
            _fixed_random_samples(o, s)
            out.append(Sample(s))
            if len(out) >= cap:
                break
    return out


# ---- [pool helper] fractional max pooling draws its windows at random (torch's generator,
# seeded by the entry's wrapper): the samples get explicit ``_random_samples`` instead, the same
# numbers in both libraries.
def _fixed_random_samples(o: Any, s: Any) -> None:
    if not o.name.startswith("nn.functional.fractional_max_pool") or \
            "_random_samples" in s.kwargs:
        return
    nsp = int(o.name[-2])
    x = s.input
    planes = tuple(x.shape[:2]) if x.dim() == nsp + 2 else (1, x.shape[0])
    u = _rng(o.name, tuple(x.shape)).random(planes + (nsp,))
    s.kwargs["_random_samples"] = torch.tensor(u, dtype=x.dtype)
# ---- end [pool helper]


def main_dtype(o: Any) -> Any:
    """float64, or for entries without it (bitwise ops ...) int64, bool or another dtype."""
    supported = o.supported_dtypes("cpu")
    for dt in (torch.float64, torch.int64, torch.bool, torch.complex128, torch.float32):
        if dt in supported:
            return dt
    return next(iter(supported)) if supported else torch.float64


def check_forward(o, fn):
    samples = _samples(o, main_dtype(o), False, CAPS["forward"])
    for k, s in enumerate(samples):
        _, _, tout, nout, texc, nexc = _run_both(
            o, fn, s, lambda i, t: t.detach().clone(), lambda i, t: _nd_tensor(t, False))
        if _both_raise_or(texc, nexc, f"sample {k}"):
            continue
        compare(nout, tout, f"sample {k}", random=o.name in RANDOM)
    return "ok" if samples else "n/a"


def _grad_inputs(s: Sample) -> list:
    return [i for i, t in enumerate(s.leaves) if t.requires_grad]


def _prep(s: Sample):
    """Leaf substitutions giving fresh leaves that require grad where the sample's do."""
    tl, nl = {}, {}

    def sub_t(i, t):
        r = t.detach().clone().requires_grad_(t.requires_grad)
        tl[i] = r
        return r

    def sub_n(i, t):
        r = _nd_tensor(t)
        nl[i] = r
        return r
    return tl, nl, sub_t, sub_n


def check_vjp(o, fn, create_graph=False, batched=False):
    if not o.supports_autograd:
        return "n/a"
    samples = _samples(o, torch.float64, True, CAPS["batched" if batched else "vjp"])
    done = 0
    for k, s in enumerate(samples):
        gi = _grad_inputs(s)
        if not gi:
            continue
        tl, nl, sub_t, sub_n = _prep(s)
        _, _, tout, nout, texc, nexc = _run_both(o, fn, s, sub_t, sub_n)
        if _both_raise_or(texc, nexc, f"sample {k}"):
            continue
        with _quiet():
            to = _diff_outputs(_processed(torch, s, tout))
            no = _diff_outputs(_processed(ndgrad, s, nout))
        if len(to) != len(no):
            raise Mismatch(f"sample {k}: {len(no)} differentiable outputs, torch {len(to)}")
        if not to:
            continue
        rng = _rng(entry_id(o), k, "vjp")
        B = (2,) if batched else ()
        cots = [_rand_like(t, rng, B) for t in to]
        tc = [torch.tensor(c, dtype=t.dtype, requires_grad=create_graph) for c, t in zip(cots, to)]
        nc = [ndgrad.tensor(c, dtype=t.dtype, requires_grad=create_graph)
              for c, t in zip(cots, no)]
        tin = [tl[i] for i in gi]
        nin = [nl[i] for i in gi]
        kw = dict(allow_unused=True, is_grads_batched=batched)
        try:
            tg = torch.autograd.grad(to, tin, tc, create_graph=create_graph, **kw)
            texc = None
        except Exception as e:    # noqa: BLE001
            tg, texc = None, e
        try:
            ng = ndgrad.autograd.grad(no, nin, nc, create_graph=create_graph, **kw)
            nexc = None
        except Exception as e:    # noqa: BLE001
            ng, nexc = None, e
        if _both_raise_or(texc, nexc, f"sample {k} backward"):
            continue
        if not create_graph:
            compare(ng, tg, f"sample {k} grad")
            done += 1
            continue
        # Second order: differentiate <grads, v> w.r.t. the inputs and the cotangents.
        tsel = [(a, b) for a, b in zip(tg, ng) if a is not None and a.requires_grad]
        if not tsel:
            continue
        vs = [_rand_like(a, rng) for a, _ in tsel]
        tv = [torch.tensor(v, dtype=a.dtype) for v, (a, _) in zip(vs, tsel)]
        nsel = [b for _, b in tsel]
        if any(b is None or not b.requires_grad for b in nsel):
            raise Mismatch(f"sample {k}: a gradient does not require grad under create_graph")
        nv = [ndgrad.tensor(v, dtype=b.dtype) for v, b in zip(vs, nsel)]
        try:
            tgg = torch.autograd.grad([a for a, _ in tsel], tin + tc, tv, allow_unused=True)
            texc = None
        except Exception as e:    # noqa: BLE001
            tgg, texc = None, e
        try:
            ngg = ndgrad.autograd.grad(nsel, nin + nc, nv, allow_unused=True)
            nexc = None
        except Exception as e:    # noqa: BLE001
            ngg, nexc = None, e
        if _both_raise_or(texc, nexc, f"sample {k} double backward"):
            continue
        compare(ngg, tgg, f"sample {k} gradgrad")
        done += 1
    return "ok" if done else "n/a"


def check_gradgrad(o, fn):
    if not (o.supports_autograd and o.supports_gradgrad):
        return "n/a"
    return check_vjp(o, fn, create_graph=True)


def check_batched(o, fn):
    if not (o.supports_autograd and o.check_batched_grad):
        return "n/a"
    return check_vjp(o, fn, batched=True)


def check_jvp(o, fn):
    if not o.supports_forward_ad:
        return "n/a"
    samples = _samples(o, torch.float64, True, CAPS["jvp"])
    done = 0
    for k, s in enumerate(samples):
        gi = set(_grad_inputs(s))
        if not gi:
            continue
        rng = _rng(entry_id(o), k, "jvp")
        tangents = {i: _rand_like(s.leaves[i], rng) for i in sorted(gi)}
        tfa, nfa = torch.autograd.forward_ad, ndgrad.autograd.forward_ad
        with tfa.dual_level(), nfa.dual_level():
            def sub_t(i, t):
                d = t.detach().clone()
                return tfa.make_dual(d, torch.tensor(tangents[i], dtype=t.dtype)) \
                    if i in gi else d

            def sub_n(i, t):
                d = _nd_tensor(t, False)
                return nfa.make_dual(d, ndgrad.tensor(tangents[i], dtype=d.dtype)) \
                    if i in gi else d
            _, _, tout, nout, texc, nexc = _run_both(o, fn, s, sub_t, sub_n)
            if _both_raise_or(texc, nexc, f"sample {k}"):
                continue
            with _quiet():
                to = [t for t in _flat_out(_processed(torch, s, tout))
                      if isinstance(t, torch.Tensor)]
                no = [t for t in _flat_out(_processed(ndgrad, s, nout))
                      if isinstance(t, ndgrad.Tensor)]
            if len(to) != len(no):
                raise Mismatch(f"sample {k}: {len(no)} outputs, torch {len(to)}")
            tt = [tfa.unpack_dual(t).tangent for t in to]
            nt = [nfa.unpack_dual(t).tangent for t in no]
        compare(nt, tt, f"sample {k} tangent")
        done += 1
    return "ok" if done else "n/a"


def check_fwbatched(o, fn):
    if not (o.supports_forward_ad and o.check_batched_forward_grad):
        return "n/a"
    samples = _samples(o, torch.float64, True, CAPS["fwbatched"])
    done = 0
    for k, s in enumerate(samples):
        gi = _grad_inputs(s)
        if not gi or sum(s.leaves[i].numel() for i in gi) > 200:
            continue

        def make(m, call):
            def f(*xs):
                sub = dict(zip(gi, xs))
                if m is torch:
                    built = s.build(torch, lambda i, t: sub.get(i, t.detach()))
                else:
                    built = s.build(ndgrad, lambda i, t: sub[i] if i in sub
                                    else _nd_tensor(t, False))
                out = call(built[0], *built[1], **built[2])
                outs = [t for t in _flat_out(_processed(m, s, out))
                        if isinstance(t, (torch.Tensor, ndgrad.Tensor)) and _float_like(t)]
                return tuple(outs)
            return f
        tx = tuple(s.leaves[i].detach().clone() for i in gi)
        nx = tuple(_nd_tensor(s.leaves[i], False) for i in gi)
        try:
            with _quiet():
                tj = torch.autograd.functional.jacobian(make(torch, o.op), tx, vectorize=True,
                                                        strategy="forward-mode")
            texc = None
        except Exception as e:    # noqa: BLE001
            tj, texc = None, e
        try:
            nj = ndgrad.autograd.functional.jacobian(make(ndgrad, fn), nx, vectorize=True,
                                                     strategy="forward-mode")
            nexc = None
        except Missing:
            raise
        except Exception as e:    # noqa: BLE001
            nj, nexc = None, e
        if _both_raise_or(texc, nexc, f"sample {k}"):
            continue
        compare(nj, tj, f"sample {k} jacobian")
        done += 1
    return "ok" if done else "n/a"


def check_lowp(o, fn):
    done = 0
    supported = o.supported_dtypes("cpu")
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        if dt not in supported:
            continue
        for k, s in enumerate(_samples(o, dt, False, CAPS["lowp"])):
            _, _, tout, nout, texc, nexc = _run_both(
                o, fn, s, lambda i, t: t.detach().clone(), lambda i, t: _nd_tensor(t, False))
            if _both_raise_or(texc, nexc, f"{dt} sample {k}"):
                continue
            try:
                compare(nout, tout, f"{dt} sample {k}", random=o.name in RANDOM)
            except Mismatch:
                if dt is torch.float32 or not _no_worse_than_torch(o, s, nout, tout):
                    raise
            done += 1
    return "ok" if done else "n/a"


def _no_worse_than_torch(o: Any, s: Any, nout: Any, tout: Any) -> bool:
    """Whether ndgrad's low-precision result is at least as close as torch's to the float64
    result of the same sample (torch's float16 kernels accumulate in float16 on some CPUs,
    e.g. conv_transpose3d with AVX-512, and miss the exactly rounded value by several ulps)."""
    up = s.build(torch, lambda i, t: t.detach().double() if t.is_floating_point() else t)
    try:
        ref = o.op(up[0], *up[1], **up[2])
    except Exception:    # noqa: BLE001
        return False
    ns, ts, rs = _flat_out(nout), _flat_out(tout), _flat_out(ref)
    if not (len(ns) == len(ts) == len(rs)):
        return False
    for n, t, r in zip(ns, ts, rs):
        if not all(isinstance(x, (torch.Tensor, ndgrad.Tensor)) for x in (n, t, r)):
            return False
        a, b, c = _np(n), _np(t), _np(r)
        if a.shape != c.shape or a.dtype.kind not in "fc":
            return False
        if a.size and np.nanmax(np.abs(a - c)) > np.nanmax(np.abs(b - c)):
            return False
    return True


def check_inplace(o, fn):
    if o.inplace_variant is None:
        return "n/a"
    name = getattr(o.inplace_variant, "__name__", None)
    if not name or not name.endswith("_"):
        return "n/a"
    ip = _method(name)
    done = 0
    for k, s in enumerate(_samples(o, main_dtype(o), False, CAPS["inplace"])):
        if s.s.broadcasts_input or not isinstance(s.s.input, torch.Tensor):
            continue
        # values, identity and version
        tin = s.build(torch, lambda i, t: t.detach().clone())
        nin = s.build(ndgrad, lambda i, t: _nd_tensor(t, False))
        tv, nv = tin[0]._version, nin[0]._version
        try:
            o.inplace_variant(tin[0], *tin[1], **tin[2])
            texc = None
        except Exception as e:    # noqa: BLE001
            texc = e
        try:
            nr = ip(nin[0], *nin[1], **nin[2])
            nexc = None
        except Missing:
            raise
        except Exception as e:    # noqa: BLE001
            nexc = e
        if _both_raise_or(texc, nexc, f"sample {k}"):
            continue
        if nr is not nin[0]:
            raise Mismatch(f"sample {k}: {name} does not return its input")
        compare(nin[0], tin[0], f"sample {k} values", random=o.name in RANDOM)
        if nin[0]._version - nv != tin[0]._version - tv:
            raise Mismatch(f"sample {k}: version bumped by {nin[0]._version - nv}, torch by "
                           f"{tin[0]._version - tv}")
        # the refusal on a leaf that requires grad
        if o.supports_autograd and s.leaves[0].dtype.is_floating_point:
            leaf = _nd_tensor(s.leaves[0], True)
            nin2 = s.build(ndgrad, lambda i, t: leaf if i == 0 else _nd_tensor(t, False))
            try:
                ip(nin2[0], *nin2[1], **nin2[2])
                raise Mismatch(f"sample {k}: {name} on a leaf that requires grad succeeded")
            except Mismatch:
                raise
            except RuntimeError as e:
                if "in-place" not in str(e):
                    raise Mismatch(f"sample {k}: leaf refusal says {str(e)[:100]}") from None
        done += 1
    return "ok" if done else "n/a"


def _error_type(t: type) -> type:
    if t.__name__ == "LinAlgError":
        la = getattr(ndgrad, "linalg", None)
        return getattr(la, "LinAlgError", RuntimeError)
    return t


def check_errors(o, fn):
    try:
        with _quiet():
            eis = list(o.error_inputs("cpu"))[:CAPS["errors"]]
    except Exception:    # noqa: BLE001
        return "n/a"
    done = 0
    for k, ei in enumerate(eis):
        s = Sample(ei.sample_input)
        try:
            nin = s.build(ndgrad, lambda i, t: _nd_tensor(t, False))
        except (Missing, RuntimeError, ValueError):
            continue      # not representable in NumPy (more than 64 dims ...)
        try:
            tin = s.build(torch, lambda i, t: t.detach().clone())
            with _quiet():
                o.op(tin[0], *tin[1], **tin[2])
            continue                  # torch accepts it too (a test-suite-only refusal)
        except Exception:    # noqa: BLE001
            pass
        before = [_np(t).copy() for t in tensors_of(nin)]
        try:
            fn(nin[0], *nin[1], **nin[2])
            raise Mismatch(f"error input {k}: ndgrad returns where torch raises "
                           f"{ei.error_type.__name__}({ei.error_regex!r})")
        except Mismatch:
            raise
        except Missing:
            raise
        except Exception as e:    # noqa: BLE001
            want = _error_type(ei.error_type)
            if want is Exception:
                done += 1
                continue
            if not isinstance(e, want):
                raise Mismatch(f"error input {k}: {type(e).__name__}: {str(e)[:100]}; torch "
                               f"{ei.error_type.__name__}({ei.error_regex!r})") from None
            # ndgrad names its own objects (ndgrad.sparse_coo where torch says torch.sparse_coo)
            if ei.error_regex and not re.search(ei.error_regex,
                                                str(e).replace("ndgrad.", "torch.")):
                raise Mismatch(f"error input {k}: message {str(e)[:120]!r} does not match "
                               f"torch's {ei.error_regex!r}") from None
        after = [_np(t) for t in tensors_of(nin)]
        for a, b in zip(before, after):
            if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
                raise Mismatch(f"error input {k}: an input was modified")
        done += 1
    return "ok" if done else "n/a"


# ---------------------------------------------------------------------------- stochastic entries
# [nn: stochastic entries] (block added for the nn issue's activation/dropout family)
# dropout*, alpha dropouts and rrelu in training mode draw random numbers, which cannot equal
# torch's. For these entries ndgrad's function runs with ndgrad's generator seeded afresh
# before each call (so every call of one check draws the same noise), and torch's side is a
# reference written with torch ops from ndgrad's realised noise: ``input * A + B`` (A, B read
# off ndgrad's outputs on ones and zeros) for the dropouts; rrelu draws torch's own slopes, so
# its reference is torch's rrelu with torch's generator seeded alike. So every check (values,
# vjp, jvp, gradgrad, batched ...) compares ndgrad's gradients with torch's for the same
# noise; a call that draws nothing (training=False, p=0: ndgrad gives equal results for two
# seeds) runs torch's real op and is compared exactly. The statistics of the noise (keep rate,
# scale, mean and variance) are tested in tests/test_nn_activation.py.
STOCHASTIC = {"nn.functional.dropout": "affine", "nn.functional.dropout2d": "affine",
              "nn.functional.dropout3d": "affine", "nn.functional.alpha_dropout": "affine",
              "nn.functional.feature_alpha_dropout": "affine", "nn.functional.rrelu": "slope"}
_NOISE_SEED = 20240917


class _StochasticEntry:
    """An OpInfo entry whose ``op`` is the torch reference described above."""

    def __init__(self, o: Any, nd: Callable, kind: str) -> None:
        self._o, self._nd, self._kind = o, nd, kind

    def __getattr__(self, name: str) -> Any:
        return getattr(self._o, name)

    def op(self, inp: Any, *args: Any, **kwargs: Any) -> Any:
        dt = _ND_DTYPE[inp.dtype]
        shape = tuple(inp.shape)

        def nd_on(v: float, seed: int = _NOISE_SEED) -> np.ndarray:
            with _quiet():
                ndgrad.manual_seed(seed)
                out = self._nd(ndgrad.full(shape, v, dtype=dt), *args, **kwargs)
            return out.detach().to(ndgrad.float64).numpy().copy()
        if self._kind == "slope":
            # rrelu draws torch's slopes (Note [Random streams]): torch's own op, seeded alike
            # (the entry's own op seeds torch with its fixed seed: F.rrelu directly instead)
            torch.manual_seed(_NOISE_SEED)
            return torch.nn.functional.rrelu(inp, *args, **kwargs)
        probe = 1.0
        first = nd_on(probe)
        if all(np.array_equal(first, nd_on(probe, _NOISE_SEED + k), equal_nan=True)
               for k in range(1, 5)):
            return self._o.op(inp, *args, **kwargs)
        b = nd_on(0.0)
        a = torch.tensor(first - b).to(inp.dtype)
        return inp * a + torch.tensor(b).to(inp.dtype)


def stochastic(o: Any, fn: Callable) -> tuple:
    """``(entry, fn)`` for entry ``o``: for a STOCHASTIC entry, the reference entry and ndgrad's
    function seeded before each call; otherwise ``(o, fn)`` unchanged."""
    kind = STOCHASTIC.get(o.name)
    if kind is None:
        return o, fn

    def seeded(*args: Any, **kwargs: Any) -> Any:
        ndgrad.manual_seed(_NOISE_SEED)
        return fn(*args, **kwargs)
    return _StochasticEntry(o, fn, kind), seeded
# [end nn: stochastic entries]


# [nn: stochastic attention] (block added for the nn issue's attention family)
# scaled_dot_product_attention and multi_head_attention_forward samples with dropout_p > 0
# (training) draw a dropout mask. As for the stochastic entries above, ndgrad's function runs
# seeded, and torch's side becomes a reference fed with ndgrad's realised mask: the op draws it
# first thing, with ``nn_attention._dropout_mask(shape, p, dtype)`` (kept / (1 - p)), so seeding
# and drawing the same shape gives the same mask. sdpa's reference is the math of attention in
# torch ops; mha's is torch's own function with its ``dropout`` and
# ``scaled_dot_product_attention`` (the two places it drops) replaced by that reference.
ATTENTION_STOCHASTIC = ("nn.functional.scaled_dot_product_attention",
                        "nn.functional.multi_head_attention_forward")


def _nd_drop(shape: tuple, p: float, dtype: Any) -> Any:
    from ndgrad.ops.nn_attention import _dropout_mask
    ndgrad.manual_seed(_NOISE_SEED)
    return torch.from_numpy(_dropout_mask(tuple(shape), p, np.float64)._data).to(dtype)


def _sdpa_reference(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                    enable_gqa=False):
    if dropout_p == 0:
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale,
            enable_gqa=enable_gqa)
    if enable_gqa and q.dim() >= 3:
        k = k.repeat_interleave(q.size(-3) // k.size(-3), -3)
        v = v.repeat_interleave(q.size(-3) // v.size(-3), -3)
    sc = 1 / q.size(-1) ** 0.5 if scale is None else scale
    s = q @ k.transpose(-2, -1) * sc
    L, S = q.size(-2), k.size(-2)
    if is_causal:
        attn_mask = torch.ones(L, S, dtype=torch.bool).tril()
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool \
            else s + attn_mask
    dead = (s == float("-inf")).all(-1, keepdim=True)
    p = torch.softmax(s.masked_fill(dead, 0), -1).masked_fill(dead, 0)
    return (p * _nd_drop(p.shape, dropout_p, q.dtype)) @ v


class _AttentionEntry(_StochasticEntry):
    def op(self, *args: Any, **kwargs: Any) -> Any:
        if self._o.name.endswith("scaled_dot_product_attention"):
            return _sdpa_reference(*args, **kwargs)
        F = torch.nn.functional
        saved = F.dropout, F.scaled_dot_product_attention
        F.dropout = lambda x, p=0.5, training=True, inplace=False: \
            x * _nd_drop(x.shape, p, x.dtype) if training and p > 0 else x

        def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
            if dropout_p == 0:
                return saved[1](q, k, v, attn_mask, 0.0, is_causal)
            b, h, L, _ = q.shape
            S = k.size(-2)
            m = attn_mask
            if m is not None and m.dtype != torch.bool:
                m = m.expand(b, h, L, S)
            out = _sdpa_reference(q.reshape(b * h, L, -1), k.reshape(b * h, S, -1),
                                  v.reshape(b * h, S, -1),
                                  None if m is None else m.reshape(b * h, L, S),
                                  dropout_p, is_causal and m is None)
            return out.reshape(b, h, L, -1)
        F.scaled_dot_product_attention = sdpa
        try:
            return self._o.op(*args, **kwargs)
        finally:
            F.dropout, F.scaled_dot_product_attention = saved


_stochastic_entries = stochastic


def stochastic(o: Any, fn: Callable) -> tuple:     # noqa: F811 (extends the function above)
    if o.name in ATTENTION_STOCHASTIC:
        def seeded(*args: Any, **kwargs: Any) -> Any:
            ndgrad.manual_seed(_NOISE_SEED)
            return fn(*args, **kwargs)
        return _AttentionEntry(o, fn, "attention"), seeded
    return _stochastic_entries(o, fn)
# [end nn: stochastic attention]


_CHECK_FNS = {"forward": check_forward, "vjp": check_vjp, "jvp": check_jvp,
              "gradgrad": check_gradgrad, "batched": check_batched,
              "fwbatched": check_fwbatched, "lowp": check_lowp, "inplace": check_inplace,
              "errors": check_errors}


def run_entry(o: Any, checks: tuple = CHECKS) -> dict:
    """``{check: "ok" | "n/a" | failure message}`` for one entry."""
    try:
        fn = resolve(o)
    except Missing as e:
        return {c: f"missing: {e}" for c in checks}
    o, fn = stochastic(o, fn)    # [nn: stochastic entries]
    out = {}
    for c in checks:
        try:
            with _quiet():
                out[c] = _CHECK_FNS[c](o, fn)
        except Missing as e:
            out[c] = f"missing: {e}"
        except Mismatch as e:
            out[c] = str(e)
        except Exception as e:    # noqa: BLE001
            out[c] = f"harness: {type(e).__name__}: {str(e)[:160]}"
    return out


def failures(result: dict) -> dict:
    return {c: r for c, r in result.items() if r not in ("ok", "n/a")}


_KNOWN_HEADER = '''"""The state of ndgrad against torch's OpInfo database: for each entry,
the checks it fails and why (``KNOWN``), and the entries not shipped yet (``NOT_SHIPPED``).
tests/test_torch_opdb.py fails when this file is not the true state; rewrite it with
``python -m tests.torch_opdb --update-known`` (reasons already written are kept)."""'''


def update_known(path: str = "tests/torch_opdb_known.py") -> None:
    """Rewrite the known-state file from a run, keeping the reasons already written there."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("_known", path)
    old = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(old)
        old_k, old_n = old.KNOWN, old.NOT_SHIPPED
    except (FileNotFoundError, AttributeError):
        old_k, old_n = {}, {}
    known, ns = {}, {}
    for eid in sorted(BY_ID):
        o = BY_ID[eid]
        if not shipped(o):
            ns[eid] = old_n.get(eid, "not yet implemented")
            continue
        f = failures(run_entry(o))
        if f:
            known[eid] = {c: old_k.get(eid, {}).get(c, m) for c, m in f.items()}
    lines = [_KNOWN_HEADER, "", "# ruff: noqa: E501", "KNOWN = {"]
    for k, v in known.items():
        lines.append(f"    {k!r}: {{")
        lines += [f"        {c!r}: {m!r}," for c, m in v.items()]
        lines.append("    },")
    lines += ["}", "", "NOT_SHIPPED = {"]
    lines += [f"    {k!r}: {v!r}," for k, v in ns.items()]
    lines.append("}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(known)} entries with known failures, {len(ns)} not shipped")


def _main(argv: list) -> None:
    if "--update-known" in argv:
        update_known()
        return
    report = None
    if "--report" in argv:
        i = argv.index("--report")
        report = argv[i + 1]
        del argv[i:i + 2]
    names = argv
    ids = [i for i in BY_ID if not names or i in names or i.split("/")[0] in names]
    rows = []
    for eid in ids:
        o = BY_ID[eid]
        if not shipped(o):
            rows.append((eid, o.supports_autograd, None))
            if names:
                print(f"{eid}: not shipped")
            continue
        r = run_entry(o)
        rows.append((eid, o.supports_autograd, r))
        fails = failures(r)
        status = "PASS" if not fails else "FAIL"
        print(f"{eid}: {status}")
        for c, msg in r.items():
            if names or c in fails:
                print(f"    {c:9} {msg}")
        sys.stdout.flush()
    print()
    for line in _summary(rows):
        print(line)
    if report:
        _write_report(report, rows)


def _summary(rows: list) -> list:
    """Autograd entries, shipped and passing, outside ``nn.functional`` (the op-library issue)
    and inside it (the nn issue)."""
    out = []
    for label, inside in (("outside nn.functional", False), ("nn.functional", True)):
        grad = [r for r in rows if r[1] and r[0].startswith("nn.functional.") == inside]
        ok = [r for r in grad if r[2] is not None and not failures(r[2])]
        out.append(f"Autograd entries {label}: {len(grad)}; shipped: "
                   f"{sum(r[2] is not None for r in grad)}; passing every check: {len(ok)}")
    return out


def _write_report(path: str, rows: list) -> None:
    lines = ["# Op coverage against PyTorch's OpInfo database", "",
             "Generated by `python -m tests.torch_opdb --report docs/op_coverage.md`; each "
             "entry of `torch.testing._internal.common_methods_invocations.op_db` in scope, "
             "with the checks of tests/torch_opdb.py.", ""]
    lines += [line + "." for line in _summary(rows)] + ["",
              "| entry | autograd | " + " | ".join(CHECKS) + " |",
              "|---|---|" + "---|" * len(CHECKS)]
    for eid, ag, r in rows:
        if r is None:
            cells = ["not shipped"] + [""] * (len(CHECKS) - 1)
        else:
            cells = ["ok" if r[c] == "ok" else "–" if r[c] == "n/a" else "FAIL"
                     for c in CHECKS]
        lines.append(f"| `{eid}` | {'yes' if ag else 'no'} | " + " | ".join(cells) + " |")
    lines += ["", "Out of scope:", ""]
    for o in _OP_DB:
        why = excluded(o)
        if why:
            lines.append(f"- `{entry_id(o)}`: {why}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    _main(sys.argv[1:])
