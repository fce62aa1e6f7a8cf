"""Differential fuzzing of the public API against PyTorch: random calls with random arguments.

A call is a public function (or Tensor method) and arguments drawn from a pool that mixes good
and bad input: tensors of every dtype and of shapes including 0-d and empty, Python scalars
(NaN, inf, bool, complex, huge ints), lists, tuples, None, strings, dtypes, out-of-range dims.
The same call runs in torch and in ndgrad and the outcomes must agree:

- torch raises: ndgrad raises an exception of the same built-in class, and every input is
  unchanged (values, ``.grad``, ``_version``, ``requires_grad``, ``grad_fn``);
- torch returns: ndgrad returns an equal result (structure, shapes, dtypes, values).

``tests/test_fuzz_api.py`` draws calls with hypothesis; ``python -m tests._fuzz N`` draws N calls
with a seeded generator and prints the counts of each kind of mismatch (used for the issue
notes' before/after figures).
"""

from __future__ import annotations

import builtins
import math
import operator
import random
import sys
from dataclasses import dataclass
from typing import Any, Callable

import ml_dtypes
import numpy as np
import torch

import ndgrad

DTYPES = ["float32", "float64", "int64", "int32", "uint8", "int8", "bool", "complex64",
          "float16", "bfloat16"]
SHAPES = [(), (0,), (3,), (2, 3), (2, 0), (1, 3), (2, 1, 3), (3, 1)]
SCALARS = [0, 1, -1, 2, 3, 1.5, -0.5, float("nan"), float("inf"), True, False, 1 + 2j,
           2 ** 70, -10 ** 20, 300]
LISTS = [[1, 2], [1.0], [[1.0]], [], [0, 1], (0, 1), (1,), [0, 0], [2, 3], (2, 3), [-1],
         [[0], [1]], [1.5, 2]]
STRINGS = ["a", "sum", "floor", "fro"]
DIMS = [-3, -2, -1, 0, 1, 2, 3, 5, -5]


# ---------------------------------------------------------------------------- values
@dataclass
class Tens:
    """A tensor drawn once, materialized freshly for each library."""
    array: np.ndarray
    dtype: str
    requires_grad: bool

    def make(self, lib: Any) -> Any:
        if lib is torch:
            if self.dtype == "bfloat16":
                t = torch.from_numpy(self.array.astype(np.float32).copy()).to(torch.bfloat16)
            else:
                t = torch.from_numpy(self.array.copy())
        else:
            t = ndgrad.from_numpy(self.array.copy())
        if self.requires_grad:
            t.requires_grad_(True)
        return t

    def __repr__(self) -> str:
        return f"T({self.dtype}{list(self.array.shape)}{', rg' if self.requires_grad else ''})"


@dataclass
class DType:
    name: str

    def make(self, lib: Any) -> Any:
        return getattr(lib, self.name)

    def __repr__(self) -> str:
        return f"dtype.{self.name}"


@dataclass
class Seq:
    """A list or tuple that may hold tensors (cat/stack arguments, index lists)."""
    items: list
    kind: type

    def make(self, lib: Any) -> Any:
        return self.kind(materialize(v, lib) for v in self.items)

    def __repr__(self) -> str:
        return repr(self.kind(self.items))


def materialize(v: Any, lib: Any) -> Any:
    return v.make(lib) if isinstance(v, (Tens, DType, Seq)) else v


def make_array(rng: random.Random, dtype: str, shape: tuple) -> np.ndarray:
    n = int(np.prod(shape)) if shape else 1
    kind = rng.random()
    if dtype == "bool":
        vals = [rng.random() < 0.5 for _ in range(n)]
        return np.array(vals, dtype=bool).reshape(shape)
    if dtype in ("int64", "int32", "int8", "uint8"):
        lo = 0 if dtype == "uint8" else -3
        vals = [rng.randint(lo, 4) for _ in range(n)]
        return np.array(vals, dtype=dtype).reshape(shape)
    specials = [0.0, -0.0, 1.0, -1.0, float("nan"), float("inf"), -float("inf"), 0.5]
    vals = [rng.choice(specials) if kind < 0.15 and rng.random() < 0.3
            else round(rng.uniform(-3, 3), 2) for _ in range(n)]
    if dtype == "complex64":
        im = [round(rng.uniform(-2, 2), 2) for _ in range(n)]
        return (np.array(vals) + 1j * np.array(im)).astype(np.complex64).reshape(shape)
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    return np.array(vals, dtype=np.float64).astype(np_dtype).reshape(shape)


def draw_tensor(rng: random.Random, float_bias: bool = True, shape: Any = None) -> Tens:
    dtype = ("float32" if float_bias and rng.random() < 0.4 else rng.choice(DTYPES))
    shape = shape if shape is not None else rng.choice(SHAPES)
    rg = dtype in ("float32", "float64", "complex64") and rng.random() < 0.4
    return Tens(make_array(rng, dtype, shape), dtype, rg)


def draw_value(rng: random.Random, kind: str) -> Any:
    """One argument. ``kind`` biases the draw toward what the parameter expects (``tensor``,
    ``dim``, ``int``, ``scalar``, ``size``, ``bool``, ``dtype``, ``tensors``, ``index``);
    a third of the draws are anything at all."""
    if rng.random() < 0.3:
        kind = rng.choice(["tensor", "dim", "scalar", "size", "bool", "dtype", "none", "str",
                           "list", "tensors"])
    if kind == "tensor":
        return draw_tensor(rng)
    if kind == "index":
        shape = rng.choice([(), (2,), (2, 3), (0,), (1, 3)])
        dt = rng.choice(["int64", "int64", "int32", "bool", "float32"])
        arr = make_array(rng, dt, shape)
        if dt != "bool" and dt != "float32":
            arr = np.asarray(np.abs(arr) % 3).astype(dt)
        return Tens(arr, dt, False)
    if kind == "dim":
        return rng.choice(DIMS + [0, 0, 1, -1])
    if kind == "int":
        return rng.choice([0, 1, 2, 3, -1, 5, 2 ** 40])
    if kind == "scalar":
        return rng.choice(SCALARS)
    if kind == "size":
        return rng.choice([2, 3, 0, -1, (2, 3), [3, 2], (6,), (), (2, -1), (1, 3), 2.5,
                           (2.0, 3), (-2, 3)])
    if kind == "bool":
        return rng.choice([True, False, 0, 1, None])
    if kind == "dtype":
        return DType(rng.choice(DTYPES))
    if kind == "none":
        return None
    if kind == "str":
        return rng.choice(STRINGS)
    if kind == "list":
        return rng.choice(LISTS)
    if kind == "tensors":
        shape = rng.choice([(2,), (2, 3), (), (0,)])
        n = rng.randint(0, 3)
        items = [draw_tensor(rng, shape=shape if rng.random() < 0.8 else rng.choice(SHAPES))
                 for _ in range(n)]
        return Seq(items, rng.choice([list, tuple]))
    raise ValueError(kind)


# ---------------------------------------------------------------------------- the API drawn
@dataclass
class Spec:
    """A public callable: ``name`` in the module (``fn``) or on the first argument (``method``),
    the kinds of its positional parameters (the first ``required`` always passed) and of its
    keyword-only parameters."""
    name: str
    params: tuple
    required: int = 1
    kwargs: tuple = ()
    method: bool = False


def _specs() -> list:
    out = []
    for n in ["exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "sqrt", "abs", "neg",
              "reciprocal", "sign", "isnan", "isinf", "isfinite", "logical_not", "conj"]:
        out.append(Spec(n, ("tensor",)))
    for n in ["mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
              "logical_and", "logical_or", "pow"]:
        out.append(Spec(n, ("tensor", "scalar"), 2))
        out.append(Spec(n, ("tensor", "tensor"), 2))
    for n in ["add", "sub"]:
        out.append(Spec(n, ("tensor", "scalar"), 2, (("alpha", "scalar"),)))
        out.append(Spec(n, ("tensor", "tensor"), 2, (("alpha", "scalar"),)))
    out.append(Spec("div", ("tensor", "tensor"), 2, (("rounding_mode", "str"),)))
    out.append(Spec("div", ("tensor", "scalar"), 2, (("rounding_mode", "str"),)))
    out.append(Spec("clamp", ("tensor", "scalar", "scalar"), 1))
    out.append(Spec("where", ("index", "tensor", "tensor"), 3))
    for n in ["sum", "mean", "prod"]:
        out.append(Spec(n, ("tensor", "dim", "bool"), 1, (("dtype", "dtype"),)))
    for n in ["max", "min", "argmax", "argmin", "all", "any"]:
        out.append(Spec(n, ("tensor", "dim", "bool"), 1))
    for n in ["matmul", "mm", "bmm", "mv", "dot"]:
        out.append(Spec(n, ("tensor", "tensor"), 2))
    out += [
        Spec("reshape", ("tensor", "size"), 2),
        Spec("view", ("tensor", "size"), 2, method=True),
        Spec("transpose", ("tensor", "dim", "dim"), 3),
        Spec("permute", ("tensor", "size"), 2),
        Spec("squeeze", ("tensor", "dim"), 1),
        Spec("unsqueeze", ("tensor", "dim"), 2),
        Spec("flatten", ("tensor", "dim", "dim"), 1),
        Spec("narrow", ("tensor", "dim", "int", "int"), 4),
        Spec("select", ("tensor", "dim", "int"), 3),
        Spec("split", ("tensor", "size", "dim"), 2),
        Spec("chunk", ("tensor", "int", "dim"), 2),
        Spec("movedim", ("tensor", "dim", "dim"), 3),
        Spec("expand", ("tensor", "size"), 2, method=True),
        Spec("gather", ("tensor", "dim", "index"), 3),
        Spec("cat", ("tensors", "dim"), 1),
        Spec("stack", ("tensors", "dim"), 1),
        Spec("unbind", ("tensor", "dim"), 1),
        Spec("t", ("tensor",)),
        Spec("diagonal", ("tensor", "int", "dim", "dim"), 1),
        Spec("zeros", ("size",), 1, (("dtype", "dtype"),)),
        Spec("ones", ("size",), 1, (("dtype", "dtype"),)),
        Spec("full", ("size", "scalar"), 2, (("dtype", "dtype"),)),
        Spec("arange", ("scalar", "scalar", "scalar"), 1, (("dtype", "dtype"),)),
        Spec("eye", ("int", "int"), 1, (("dtype", "dtype"),)),
        Spec("linspace", ("scalar", "scalar", "int"), 3, (("dtype", "dtype"),)),
        Spec("tensor", ("list",), 1, (("dtype", "dtype"),)),
        Spec("add_", ("tensor", "scalar"), 2, (("alpha", "scalar"),), method=True),
        Spec("add_", ("tensor", "tensor"), 2, method=True),
        Spec("sub_", ("tensor", "tensor"), 2, method=True),
        Spec("mul_", ("tensor", "scalar"), 2, method=True),
        Spec("mul_", ("tensor", "tensor"), 2, method=True),
        Spec("div_", ("tensor", "scalar"), 2, method=True),
        Spec("fill_", ("tensor", "scalar"), 2, method=True),
        Spec("clamp_", ("tensor", "scalar", "scalar"), 1, method=True),
        Spec("zero_", ("tensor",), 1, method=True),
        Spec("copy_", ("tensor", "tensor"), 2, method=True),
        Spec("masked_fill_", ("tensor", "index", "scalar"), 3, method=True),
        Spec("exp_", ("tensor",), 1, method=True),
        Spec("item", ("tensor",), 1, method=True),
        Spec("tolist", ("tensor",), 1, method=True),
        Spec("to", ("tensor", "dtype"), 2, method=True),
        Spec("expand_as", ("tensor", "tensor"), 2, method=True),
        Spec("sum_to_size", ("tensor", "size"), 2, method=True),
        Spec("clone", ("tensor",), 1),
        Spec("float", ("tensor",), 1, method=True),
        Spec("long", ("tensor",), 1, method=True),
        Spec("__getitem__", ("tensor", "index"), 2, method=True),
        Spec("__add__", ("tensor", "scalar"), 2, method=True),
        Spec("__mul__", ("tensor", "list"), 2, method=True),
        Spec("__floordiv__", ("tensor", "scalar"), 2, method=True),
        Spec("__pow__", ("tensor", "scalar"), 2, method=True),
        Spec("__iadd__", ("tensor", "list"), 2, method=True),
        Spec("__isub__", ("tensor", "scalar"), 2, method=True),
    ]
    return out


SPECS = _specs()


@dataclass
class Call:
    spec: Spec
    args: list
    kwargs: dict

    def __repr__(self) -> str:
        a = ", ".join([repr(v) for v in self.args] +
                      [f"{k}={v!r}" for k, v in self.kwargs.items()])
        return f"{'.' if self.spec.method else ''}{self.spec.name}({a})"


def draw_call(rng: random.Random, spec: Any = None) -> Call:
    spec = spec if spec is not None else rng.choice(SPECS)
    n = spec.required + rng.randint(0, len(spec.params) - spec.required) \
        if len(spec.params) > spec.required else spec.required
    if rng.random() < 0.05:          # too many or too few arguments
        n = max(0, n + rng.choice([-1, 1]))
    args = [draw_value(rng, spec.params[i] if i < len(spec.params) else "tensor")
            for i in range(n)]
    if spec.name.startswith("__") and args:
        args[0] = draw_tensor(rng)   # an operator on two plain numbers is Python's business
    kwargs = {}
    for name, kind in spec.kwargs:
        if rng.random() < 0.3:
            kwargs[name] = draw_value(rng, kind)
    return Call(spec, args, kwargs)


# ---------------------------------------------------------------------------- running a call
def _invoke(call: Call, lib: Any) -> tuple:
    args = [materialize(v, lib) for v in call.args]
    kwargs = {k: materialize(v, lib) for k, v in call.kwargs.items()}
    try:
        res = _call(call, lib, args, kwargs)
    except Exception as e:  # noqa: BLE001 - compared between libraries
        return "err", e, args, kwargs
    return "ok", res, args, kwargs


def builtin_class(e: BaseException) -> type:
    """The built-in exception class an exception is an instance of (torch's LinAlgError ->
    RuntimeError)."""
    for cls in type(e).__mro__:
        if getattr(builtins, cls.__name__, None) is cls:
            return cls
    return Exception


def _as_numpy(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype == torch.bfloat16:
            return t.float().numpy()
        return t.resolve_conj().resolve_neg().numpy()
    a = t.detach().numpy()
    return a.astype(np.float32) if a.dtype == ml_dtypes.bfloat16 else a


def _dtype_name(t: Any) -> str:
    return str(t.dtype).split(".")[-1]


def same_value(a: Any, b: Any, path: str = "") -> str:
    """'' when torch's result ``a`` equals ndgrad's ``b``, else what differs."""
    if isinstance(a, torch.Tensor):
        if not isinstance(b, ndgrad.Tensor):
            return f"{path}: Tensor vs {type(b).__name__}"
        if tuple(a.shape) != tuple(b.shape):
            return f"{path}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        if _dtype_name(a) != _dtype_name(b):
            return f"{path}: dtype {a.dtype} vs {b.dtype}"
        if a.requires_grad != b.requires_grad:
            return f"{path}: requires_grad {a.requires_grad} vs {b.requires_grad}"
        x, y = _as_numpy(a), _as_numpy(b)
        tol = 1e-2 if a.dtype in (torch.float16, torch.bfloat16) else 1e-5
        if x.dtype.kind in "fc":
            ok = np.allclose(x, y, rtol=tol, atol=tol, equal_nan=True)
        else:
            ok = np.array_equal(x, y)
        return "" if ok else f"{path}: values {x!r} vs {y!r}"
    if isinstance(a, (tuple, list)):
        if not isinstance(b, (tuple, list)) or len(a) != len(b):
            return f"{path}: {type(a).__name__}[{len(a)}] vs {b!r:.60}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = same_value(x, y, f"{path}[{i}]")
            if d:
                return d
        return ""
    if isinstance(a, torch.dtype):
        return "" if isinstance(b, ndgrad.dtype) and str(a)[6:] == str(b)[7:] else \
            f"{path}: {a} vs {b}"
    if isinstance(a, torch.Size):
        return "" if tuple(a) == tuple(b) else f"{path}: {a} vs {b}"
    if isinstance(a, (bool, int, float, complex)):
        if type(a) is not type(b):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        if isinstance(a, float) and math.isnan(a) and math.isnan(b):
            return ""
        return "" if a == b or (isinstance(a, float) and abs(a - b) <= 1e-5 * abs(a)) else \
            f"{path}: {a} vs {b}"
    return "" if type(a).__name__ == type(b).__name__ else \
        f"{path}: {type(a).__name__} vs {type(b).__name__}"


def _state(args: list) -> list:
    """What an error must leave unchanged in the tensor arguments."""
    out = []
    for a in args:
        ts = [a] if isinstance(a, (torch.Tensor, ndgrad.Tensor)) else \
            [x for x in a if isinstance(x, (torch.Tensor, ndgrad.Tensor))] \
            if isinstance(a, (list, tuple)) else []
        for t in ts:
            out.append((_as_numpy(t).copy(), t._version, t.requires_grad,
                        type(t.grad_fn).__name__ if t.grad_fn is not None else None,
                        t.grad is None))
    return out


def _same_state(s0: list, s1: list) -> bool:
    if len(s0) != len(s1):
        return False
    for a, b in zip(s0, s1):
        if not (np.array_equal(a[0], b[0], equal_nan=True) and a[1:] == b[1:]):
            return False
    return True


def check_call(call: Call) -> tuple:
    """``(kind, detail)``: kind is '' when the libraries agree, else one of 'accepts' (ndgrad
    returns where torch raises), 'rejects' (the reverse), 'error_type', 'value', 'state'
    (an error left an input modified)."""
    tk, tr, _, _ = _invoke(call, torch)
    nd_args = [materialize(v, ndgrad) for v in call.args]
    before = _state(nd_args)
    # Re-run with the tensors whose state is checked.
    nk, nr = _invoke_with(call, nd_args)
    if tk == "err":
        if nk == "ok":
            return "accepts", f"torch: {type(tr).__name__}: {str(tr)[:160]}"
        if builtin_class(tr) is not builtin_class(nr):
            return "error_type", (f"torch {type(tr).__name__}: {str(tr)[:120]} | ndgrad "
                                  f"{type(nr).__name__}: {str(nr)[:120]}")
        if not _same_state(before, _state(nd_args)):
            return "state", f"ndgrad {type(nr).__name__}: {str(nr)[:120]}"
        return "", ""
    if nk == "err":
        return "rejects", f"ndgrad {type(nr).__name__}: {str(nr)[:200]}"
    try:
        d = same_value(tr, nr)
    except Exception as e:  # noqa: BLE001 - a broken result is a mismatch too
        d = f"comparing raised {type(e).__name__}: {e}"
    return ("value", d[:300]) if d else ("", "")


def _invoke_with(call: Call, args: list) -> tuple:
    kwargs = {k: materialize(v, ndgrad) for k, v in call.kwargs.items()}
    try:
        return "ok", _call(call, ndgrad, args, kwargs)
    except Exception as e:  # noqa: BLE001 - compared between libraries
        return "err", e


def _call(call: Call, lib: Any, args: list, kwargs: dict) -> Any:
    name = call.spec.name
    if name.startswith("__"):
        # Operators run as Python runs them (x * y tries x.__mul__, then y.__rmul__ ...).
        if len(args) != 2 or kwargs:
            raise TypeError("an operator takes two operands")
        return getattr(operator, name[2:-2])(args[0], args[1])
    if call.spec.method:
        if not args:
            raise TypeError("no self")
        return getattr(args[0], name)(*args[1:], **kwargs)
    return getattr(lib, name)(*args, **kwargs)


def run(n: int, seed: int = 0, verbose: bool = False,
        filt: Callable[[Call], bool] = lambda c: True) -> dict:
    rng = random.Random(seed)
    counts: dict = {"calls": 0}
    examples: dict = {}
    for _ in range(n):
        call = draw_call(rng)
        if not filt(call):
            continue
        counts["calls"] += 1
        kind, detail = check_call(call)
        if kind:
            counts[kind] = counts.get(kind, 0) + 1
            examples.setdefault((kind, call.spec.name), []).append((call, detail))
    if verbose:
        for (kind, name), ex in sorted(examples.items()):
            print(f"== {kind} {name}: {len(ex)}")
            for call, detail in ex[:3]:
                print(f"   {call!r}\n      {detail}")
    return counts


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    print(run(n, seed=int(sys.argv[2]) if len(sys.argv) > 2 else 0, verbose=True))
