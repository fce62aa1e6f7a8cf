"""PyTorch-style ``repr`` of tensors.

Note [How a tensor is printed]
One number style is chosen per tensor (per real and imaginary part for complex tensors) from its
nonzero finite values: whole numbers print as ``2.``, others with four decimals, and scientific
notation is used when the largest magnitude exceeds 1e8, when largest / smallest exceeds 1000,
or (for non-whole values) when the smallest is below 1e-4. Every element is right-aligned to
the widest nonzero finite element. Tensors with more than 1000 elements are summarized (three
items at each end of every long dimension) and the style is chosen from the shown items only.
Rows wrap at 80 columns by element count; suffixes (``dtype=``, ``grad_fn=`` ...) go on a new
line when they would not fit.

Example:
    >>> import ndgrad
    >>> ndgrad.tensor([1.0, 2.5])
    tensor([1.0000, 2.5000])
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from . import _dtype

PRECISION = 4
THRESHOLD: float = 1000     # elements above which a tensor prints summarized (inf: never)
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE: Optional[bool] = None    # set_printoptions(sci_mode=...): None is automatic


class _NumberStyle:
    """Formats the numbers of one tensor (or one part of a complex tensor) consistently."""

    def __init__(self, values: np.ndarray) -> None:
        self.is_float = values.dtype.kind == "f" or values.dtype.name == "bfloat16"
        self.whole = True
        self.sci = False
        self.width = 1
        flat = values.ravel()
        if not self.is_float:
            for v in flat.tolist():
                self.width = max(self.width, len(str(v)))
            return
        flat = flat.astype(np.float64)
        shown = flat[np.isfinite(flat) & (flat != 0)]
        if shown.size == 0:
            return
        mags = np.abs(shown)
        hi, lo = float(mags.max()), float(mags.min())
        self.whole = bool(np.all(shown == np.ceil(shown)))
        self.sci = hi / lo > 1000.0 or hi > 1.0e8 or (not self.whole and lo < 1.0e-4)
        if SCI_MODE is not None:
            self.sci = SCI_MODE
        vals = shown.tolist()
        if self.sci:
            self.width = max(len(f"{v:.{PRECISION}e}") for v in vals)
        elif self.whole:
            self.width = max(len(f"{v:.0f}") + 1 for v in vals)
        else:
            self.width = max(len(f"{v:.{PRECISION}f}") for v in vals)

    def __call__(self, value: Any) -> str:
        if not self.is_float:
            text = str(value)
        elif self.sci:
            text = f"{value:.{PRECISION}e}"
        elif self.whole:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{PRECISION}f}"
        return text.rjust(self.width)


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The elements shown when ``arr`` is summarized: ``EDGEITEMS`` at each end of each dim."""
    for axis, n in enumerate(arr.shape):
        if n > 2 * EDGEITEMS:
            keep = list(range(EDGEITEMS)) + list(range(n - EDGEITEMS, n))
            arr = np.take(arr, keep, axis=axis)
    return arr


def _scalar(value: Any, real: Callable, imag: Optional[Callable]) -> str:
    if imag is None:
        return real(value)
    im = (imag(value.imag) + "j").lstrip()
    sep = "" if im[0] in "+-" else "+"
    return real(value.real) + sep + im


def _vector(arr: np.ndarray, indent: int, summarize: bool, real: _NumberStyle,
            imag: Optional[_NumberStyle]) -> str:
    item = real.width + 2 + (imag.width + 1 if imag is not None else 0)
    per_line = max(1, (LINEWIDTH - indent) // item)
    items = arr.tolist()
    if summarize and len(items) > 2 * EDGEITEMS:
        cells = ([_scalar(v, real, imag) for v in items[:EDGEITEMS]] + [" ..."]
                 + [_scalar(v, real, imag) for v in items[-EDGEITEMS:]])
    else:
        cells = [_scalar(v, real, imag) for v in items]
    lines = [", ".join(cells[i:i + per_line]) for i in range(0, len(cells), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(arr: np.ndarray, indent: int, summarize: bool, real: _NumberStyle,
            imag: Optional[_NumberStyle]) -> str:
    if arr.ndim == 0:
        return _scalar(arr.item(), real, imag)
    if arr.ndim == 1:
        return _vector(arr, indent, summarize, real, imag)
    n = arr.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        rows = ([_nested(arr[i], indent + 1, summarize, real, imag) for i in range(EDGEITEMS)]
                + ["..."]
                + [_nested(arr[i], indent + 1, summarize, real, imag)
                   for i in range(n - EDGEITEMS, n)])
    else:
        rows = [_nested(arr[i], indent + 1, summarize, real, imag) for i in range(n)]
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def _body(arr: np.ndarray, indent: int) -> str:
    if arr.dtype.name == "bfloat16":
        arr = arr.astype(np.float32)
    summarize = arr.size > THRESHOLD
    shown = _summarized(arr) if summarize else arr
    if arr.dtype.kind == "c":
        real, imag = _NumberStyle(shown.real), _NumberStyle(shown.imag)
    else:
        real, imag = _NumberStyle(shown), None
    return _nested(arr, indent, summarize, real, imag)


def _with_suffixes(text: str, suffixes: list, indent: int, newline: bool = False) -> str:
    """``text`` closed by ``, suffix`` items, wrapped at the line width (the first on a new line
    when ``newline``)."""
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if newline or last + len(s) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + s)
            last = indent + len(s)
            newline = False
        else:
            parts.append(", " + s)
            last += len(s) + 2
    parts.append(")")
    return "".join(parts)


def _grad_suffix(t: Any) -> list:
    if t._grad_fn is not None:
        return [f"grad_fn=<{_node_label(t._grad_fn)}>"]
    return ["requires_grad=True"] if t._requires_grad else []


def _has_default_dtype(d: Any) -> bool:
    default_float = _dtype.get_default_dtype()
    return d in (default_float, _dtype.int64, _dtype.bool, default_float.to_complex())


def format_sparse(t: Any, indices: np.ndarray, values: np.ndarray, layout: Any) -> str:
    """A sparse COO tensor as PyTorch prints one: its indices and values without dtypes (sizes
    when empty), then size, nnz, the values' dtype unless a default one, the layout and the
    autograd state, the first of these on a new line."""
    def inner(arr: np.ndarray, indent: int) -> str:
        if arr.size == 0:
            return f"tensor([], size={tuple(arr.shape)})"
        return "tensor(" + _body(arr, indent + len("tensor(")) + ")"

    indent = len("tensor(")
    text = (f"tensor(indices={inner(indices, indent + len('indices='))},\n"
            f"{' ' * indent}values={inner(values, indent + len('values='))}")
    d = _dtype._FROM_NP[values.dtype]
    suffixes = [f"size={tuple(t.shape)}", f"nnz={values.shape[0]}"]
    if not _has_default_dtype(d):
        suffixes.append(f"dtype=ndgrad.{d.name}")
    suffixes += [f"layout={layout}"] + _grad_suffix(t)
    return _with_suffixes(text, suffixes, indent, newline=True)


def format_compressed(t: Any, parts: tuple, values: np.ndarray, layout: Any) -> str:
    """A sparse compressed (CSR/CSC) tensor as PyTorch prints one: each ``(name, indices)`` of
    ``parts`` and the values on lines of their own, then size, nnz, the values' dtype unless a
    default one, the layout and the autograd state, wrapped at the line width."""
    indent = len("tensor(")
    items = [(name, arr) for name, arr in parts] + [("values", values)]
    lines = []
    for name, arr in items:
        inner = len(name) + 1 + indent
        body = (f"tensor([], size={tuple(arr.shape)})" if arr.size == 0 else
                "tensor(" + _body(arr, inner + len("tensor(")) + ")")
        lines.append(f"{name}={body}")
    text = "tensor(" + (",\n" + " " * indent).join(lines)
    d = _dtype._FROM_NP[values.dtype]
    suffixes = [f"size={tuple(t.shape)}", f"nnz={parts[1][1].shape[-1]}"]
    if not _has_default_dtype(d):
        suffixes.append(f"dtype=ndgrad.{d.name}")
    suffixes += [f"layout={layout}"] + _grad_suffix(t)
    return _with_suffixes(text, suffixes, indent)


def format_tensor(t: Any) -> str:
    arr = t._data
    d = _dtype._FROM_NP[arr.dtype]
    # A user's subclass prints its class name (ndgrad's own, as Parameter, print as tensors).
    cls = type(t)
    prefix = "tensor(" if cls.__module__.startswith("ndgrad") else f"{cls.__name__}("
    indent = len(prefix)
    default_float = _dtype.get_default_dtype()
    suffixes = []
    if type(arr).__name__ == "MetaArray":        # no data (Note [Meta arrays] in _meta.py)
        body = "..."
        suffixes.append("device='meta'")
        suffixes.append(f"size={tuple(arr.shape)}")
        if d is not default_float:
            suffixes.append(f"dtype=ndgrad.{d.name}")
    elif arr.size == 0:
        body = "[]"
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if d is not default_float:
            suffixes.append(f"dtype=ndgrad.{d.name}")
    else:
        body = _body(arr, indent)
        if not _has_default_dtype(d):
            suffixes.append(f"dtype=ndgrad.{d.name}")
    suffixes += _grad_suffix(t)
    if _tangent_of is not None:                       # a dual tensor shows its tangent
        tangent = _tangent_of(t)
        if tangent is not None:
            suffixes.append("tangent=" + format_tensor(tangent))
    return _with_suffixes(prefix + body, suffixes, indent)


# Forward AD (autograd/forward_ad.py, a layer above: Note [Layers] in autograd/__init__.py)
# registers here, when imported, the function giving a tensor's tangent at the current dual
# level (None outside a level).
_tangent_of: Any = None


def _node_label(node: Any) -> str:
    # PyTorch shows C++ node names without their namespace ("CopyBackwards").
    return type(node).name(node).rsplit("::", 1)[-1]   # ctx.name may be user data
