"""``ndgrad.ops.<namespace>``: the operator namespaces of ``ndgrad.library`` (torch.ops.mylib).

The op table's modules are attributes of ``ndgrad.ops``; a namespace that ``ndgrad.library``
defines operators in (``Library("mylib", "DEF")``, ``custom_op("mylib::f", ...)``) is looked up
here by the package's ``__getattr__``, so ``ndgrad.ops.mylib.f`` and
``ndgrad.ops.mylib.f.default`` work as ``torch.ops.mylib.f``. A namespace named like one of
``ndgrad.ops``'s own attributes (``linalg``, ``fft`` ...) is shadowed by it. This module only
holds the objects; ``ndgrad.library`` (above the op table) creates the operators.

Example:
    >>> import ndgrad
    >>> lib = ndgrad.library.Library("nsdoc", "DEF")
    >>> lib.define("twice(Tensor x) -> Tensor")
    'twice'
    >>> lib.impl("twice", lambda x: x * 2, "CPU")
    >>> ndgrad.ops.nsdoc.twice(ndgrad.ones(2))
    tensor([2., 2.])
"""

from __future__ import annotations

from typing import Any, Dict

NAMESPACES: Dict[str, "_OpNamespace"] = {}


class _OpNamespace:
    """The operators of one namespace, as attributes (``OpOverloadPacket`` objects)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._packets: Dict[str, Any] = {}

    def __getattr__(self, op_name: str) -> Any:
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        packet = self.__dict__["_packets"].get(op_name)
        if packet is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{op_name}'")
        return packet

    def __dir__(self) -> Any:
        return sorted(set(super().__dir__()) | set(self._packets))

    def __iter__(self) -> Any:
        return iter(self._packets)

    def __repr__(self) -> str:
        return f"<module 'ndgrad.ops.{self.name}' from 'ndgrad.ops'>"


def namespace(name: str) -> _OpNamespace:
    """The namespace object called ``name`` (created on first use)."""
    ns = NAMESPACES.get(name)
    if ns is None:
        ns = NAMESPACES[name] = _OpNamespace(name)
    return ns
