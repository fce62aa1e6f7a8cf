"""How FX text names a callable: ndgrad's public functions by the path torch gives the same
function (``torch.relu``, ``torch.nn.functional.relu``, ``torch.linalg.norm``), Python's
operators as ``operator.add``, anything else by its module and qualified name.

Note [FX names]
Generated code and graph text spell ndgrad's functions ``torch.<path>`` so that a traced
program prints what it prints under PyTorch; the generated code's globals bind ``torch`` to the
``ndgrad`` package, so the code runs on ndgrad (``GraphModule.code`` is ndgrad code written with
torch's spelling). A callable that is not public ndgrad API keeps its own module path.

Example:
    >>> import ndgrad, operator
    >>> from ndgrad.fx._names import qualified_name
    >>> qualified_name(ndgrad.relu), qualified_name(ndgrad.nn.functional.relu)
    ('torch.relu', 'torch.nn.functional.relu')
    >>> qualified_name(operator.add)
    'operator.add'
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, Optional

import ndgrad

from ..nn import functional as F

__all__ = ["qualified_name", "public_name"]

# (ndgrad module, the torch path it stands for), searched in this order: a function that is
# both ``ndgrad.X`` and ``ndgrad.nn.functional.X`` is named ``torch.X``, as torch's are.
_NAMESPACES = (("ndgrad", "torch"), ("ndgrad.nn.functional", "torch.nn.functional"),
               ("ndgrad.linalg", "torch.linalg"), ("ndgrad.fft", "torch.fft"),
               ("ndgrad.special", "torch.special"), ("ndgrad.nn.init", "torch.nn.init"))
_table: Optional[Dict[int, str]] = None

# nn.functional functions that torch defines as its top-level ones (``F.conv2d is
# torch.conv2d``): FX names them ``torch.<name>``. (Those torch implements in ``torch._C._nn``,
# such as ``F.linear`` and ``F.gelu``, keep the name ``torch.nn.functional.<name>`` here: ndgrad
# has no ``_C._nn`` namespace.)
_FUNCTIONAL_AT_TOP = ("adaptive_avg_pool1d", "avg_pool1d", "bilinear", "celu_",
                      "channel_shuffle", "conv1d", "conv2d", "conv3d", "conv_tbc",
                      "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                      "cosine_similarity", "hardshrink", "native_channel_shuffle",
                      "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "prelu",
                      "relu_", "rrelu_", "selu_", "threshold_")


def _build() -> Dict[int, str]:
    table: Dict[int, str] = {}
    for n in _FUNCTIONAL_AT_TOP:
        f = getattr(F, n, None)
        if f is not None and getattr(ndgrad, n, None) is not None:
            table[id(f)] = f"torch.{n}"
    for modname, public in _NAMESPACES:
        mod = importlib.import_module(modname)
        names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("__")]
        for n in names:
            try:
                obj = getattr(mod, n)
            except AttributeError:
                continue
            if callable(obj) and not isinstance(obj, type):
                table.setdefault(id(obj), f"{public}.{n}")
    # Tensor methods as functions (what export records): torch.Tensor.view
    for n in dir(ndgrad.Tensor):
        if n.startswith("__") and n.endswith("__"):
            continue
        obj = ndgrad.Tensor.__dict__.get(n)
        if obj is None:
            for klass in type.mro(ndgrad.Tensor):
                if n in vars(klass):
                    obj = vars(klass)[n]
                    break
        if callable(obj) and not isinstance(obj, type):
            table.setdefault(id(obj), f"torch.Tensor.{n}")
    return table


def public_name(func: Any) -> Optional[str]:
    """``torch.<path>`` of one of ndgrad's public functions, else None."""
    global _table
    if _table is None:
        _table = _build()
    return _table.get(id(func))


def qualified_name(func: Any) -> str:
    """The dotted name FX text uses for ``func`` (see Note [FX names])."""
    pub = public_name(func)
    if pub is not None:
        return pub
    name = getattr(func, "__name__", None) or type(func).__name__
    mod = getattr(func, "__module__", None)
    if mod == "_operator":
        mod = "operator"
    if mod is None:
        return name
    if mod.startswith("ndgrad"):
        mod = "torch" + mod[len("ndgrad"):]
    qual = getattr(func, "__qualname__", name)
    return f"{mod}.{qual}"
