"""Type aliases of ndgrad's public API (what ``torch.types`` is to PyTorch).

Note [Typed API]
Every public function and Tensor method has a declared signature in PyTorch's notation
(``ndgrad/_signatures.py``, Note [Declared signatures]). Its argument types map to the aliases
below (``SCHEMA_TYPES``), and that one mapping serves twice:

- at run time, ``_signature.wrap`` gives each generated wrapper ``__annotations__`` and an
  annotated ``__signature__`` (what ``help()``, IPython and ``typing.get_type_hints`` show);
- for type checkers and IDEs, ``tools/gen_stubs.py`` writes stub files from the imported
  package: ``ndgrad/__init__.pyi`` (the top-level namespace, which ``ndgrad/__init__.py`` and
  ``_signatures.install`` build at import), ``ndgrad/nn/__init__.pyi`` and ``ndgrad/linalg.pyi``
  (namespaces built by star imports in an import cycle and by ``globals()``), and
  ``ndgrad/_tensor_api.pyi`` (the Tensor methods that ``_tensor_methods.py`` and ``install``
  bind at import, seen by a type checker as the base class ``_TensorMethods`` of ``Tensor``; at
  run time that base is ``object``). A module with a stub is read by type checkers from the
  stub only, so these modules keep no logic a checker should see.

The return type of a wrapped function is its implementation's annotation. The stubs are
generated, never edited by hand; ``tests/test_typing.py`` fails when they are out of date
(regenerate with ``python -m tools.gen_stubs``) and runs mypy over the package and over a small
typed user program.

Example:
    >>> import typing, ndgrad
    >>> typing.get_type_hints(ndgrad.sum)["keepdim"]
    <class 'bool'>
    >>> from ndgrad.types import Scalar
    >>> isinstance(2.5, typing.get_args(Scalar))
    True
"""

from __future__ import annotations

from typing import Sequence, SupportsIndex, Union

import numpy as np

from ._dtype import dtype
from ._layout import layout as Layout
from .tensor import Size, Tensor, device

__all__ = ["Number", "Scalar", "IntLike", "IntList", "IntOrList", "TensorList", "DType",
           "Device", "Layout", "SCHEMA_TYPES", "Size"]

#: A Python number (``bool`` is an ``int``).
Number = Union[int, float, complex]
#: What a ``Scalar`` argument takes: a number, a NumPy number or a 0-d Tensor.
Scalar = Union[int, float, complex, np.number, np.bool_, Tensor]
#: An ``int`` argument: a Python or NumPy integer, or a 0-d integer Tensor.
IntLike = SupportsIndex
#: A size or a list of dims (``int[]``).
IntList = Sequence[SupportsIndex]
#: One dim or several (``int[1]``); also the items of varargs sizes (``zeros(2, 3)`` or
#: ``zeros((2, 3))``).
IntOrList = Union[SupportsIndex, Sequence[SupportsIndex]]
#: A tuple or list of Tensors (``Tensor[]``).
TensorList = Sequence[Tensor]
DType = dtype
#: A device, its name or its index.
Device = Union[device, str, int]

# Schema type (Note [Declared signatures]) -> the alias name above (or a builtin's name).
SCHEMA_TYPES = {
    "Tensor": "Tensor",
    "Scalar": "Scalar",
    "int": "IntLike",
    "int[]": "IntList",
    "int[1]": "IntOrList",
    "int...": "IntOrList",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "ScalarType": "DType",
    "Layout": "Layout",
    "Tensor[]": "TensorList",
    "Any": "Any",
}


def schema_annotation(types: tuple, optional: bool) -> str:
    """The annotation (a string over this module's names) of a schema parameter's types.

    >>> schema_annotation(("Tensor", "Scalar"), True)
    'Tensor | Scalar | None'
    """
    names = [SCHEMA_TYPES[t] for t in types]
    if "Any" in names:
        return "Any"
    return " | ".join(names + (["None"] if optional else []))
