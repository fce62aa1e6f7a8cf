"""Read and write the safetensors format (the weights-exchange format of the model ecosystem)
through the ``safetensors`` package (``pip install 'ndgrad[safetensors]'``): its NumPy writer,
and its parser for reading (the NumPy reader does not know bfloat16).

A file holds a flat ``{name: tensor}`` dict and optional string metadata; it cannot carry
code. Files written by ``safetensors.torch.save_file`` load here with the same values and
dtypes (bfloat16 included), and the other way round.

Example:
    >>> import ndgrad
    >>> from ndgrad.utils import safetensors as st
    >>> blob = st.save({"w": ndgrad.ones(2, 2)}, metadata={"format": "pt"})
    >>> st.load(blob)["w"].shape
    ndgrad.Size([2, 2])
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

import numpy as np

from .. import _dtype
from ..tensor import Tensor, _wrap

__all__ = ["save", "load", "save_file", "load_file"]

_CODES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
          "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8",
          "uint16": "U16", "uint32": "U32", "uint64": "U64", "bool": "BOOL"}
_DTYPES = {v: k for k, v in _CODES.items()}


def _package() -> Any:
    try:
        import safetensors  # local import: optional dependency, loaded on use
    except ImportError:
        raise ImportError("ndgrad.utils.safetensors needs the safetensors package: "
                          "pip install 'ndgrad[safetensors]'") from None
    return safetensors


def _arrays(tensors: Dict[str, Tensor]) -> Dict[str, np.ndarray]:
    if not isinstance(tensors, dict):
        raise TypeError(f"expected a dict of tensors, got {type(tensors).__name__}")
    out = {}
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be strings, got {type(name).__name__}")
        if not isinstance(t, Tensor):
            raise TypeError(f"'{name}': expected a Tensor, got {type(t).__name__}")
        a = np.ascontiguousarray(t.detach()._data)
        if str(a.dtype) not in _CODES:
            raise ValueError(f"'{name}': dtype {t.dtype} has no safetensors code")
        out[name] = a
    return out


def _tensors(entries: Any) -> Dict[str, Tensor]:
    out = {}
    for name, e in entries:
        code = e["dtype"]
        if code not in _DTYPES:
            raise ValueError(f"'{name}': safetensors dtype {code} is not supported by ndgrad")
        dt = getattr(_dtype, _DTYPES[code]).np
        out[name] = _wrap(np.frombuffer(bytes(e["data"]), dtype=dt).reshape(e["shape"]).copy())
    return out


def save(tensors: Dict[str, Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The safetensors bytes of ``{name: tensor}`` (copies; views are written densely)."""
    _package()
    import safetensors.numpy  # local import: optional dependency, loaded on use
    return safetensors.numpy.save(_arrays(tensors), metadata=metadata)


def load(data: bytes) -> Dict[str, Tensor]:
    """``{name: tensor}`` from safetensors bytes."""
    return _tensors(_package().deserialize(data))


def save_file(tensors: Dict[str, Tensor], filename: Union[str, os.PathLike],
              metadata: Optional[Dict[str, str]] = None) -> None:
    """Write ``{name: tensor}`` to a ``.safetensors`` file."""
    with open(os.fspath(filename), "wb") as f:
        f.write(save(tensors, metadata))


def load_file(filename: Union[str, os.PathLike], device: Any = "cpu") -> Dict[str, Tensor]:
    """Read ``{name: tensor}`` from a ``.safetensors`` file."""
    with open(os.fspath(filename), "rb") as f:
        return load(f.read())
