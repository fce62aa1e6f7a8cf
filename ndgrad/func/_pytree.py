"""Pytrees for the function transforms: nested tuples, lists, dicts and named tuples whose
leaves are tensors (or anything else: a leaf is whatever is not one of those containers).

``tree_flatten(tree) -> (leaves, spec)`` and ``tree_unflatten(leaves, spec)`` are inverses;
``broadcast_prefix(prefix, spec)`` expands a *prefix* tree (``in_dims``/``out_dims``: an int or
None stands for a whole subtree) to one value per leaf, or returns None when the structures do
not match.

Example:
    >>> from ndgrad.func._pytree import tree_flatten, tree_unflatten
    >>> leaves, spec = tree_flatten((1, {"a": 2, "b": [3, 4]}))
    >>> leaves
    [1, 2, 3, 4]
    >>> tree_unflatten([5, 6, 7, 8], spec)
    (5, {'a': 6, 'b': [7, 8]})
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

__all__ = ["TreeSpec", "tree_flatten", "tree_unflatten", "tree_map", "broadcast_prefix",
           "LEAF"]


class TreeSpec:
    """The structure of a pytree: a container kind with child specs, or a leaf."""

    __slots__ = ("kind", "ctx", "children")

    def __init__(self, kind: Any, ctx: Any = None, children: tuple = ()) -> None:
        self.kind, self.ctx, self.children = kind, ctx, children

    @property
    def is_leaf(self) -> bool:
        return self.kind is None

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TreeSpec) and self.kind is other.kind and \
            self.ctx == other.ctx and self.children == other.children

    def __hash__(self) -> int:
        return hash((id(self.kind), len(self.children)))

    def __repr__(self, indent: int = 0) -> str:
        # torch's notation, so that messages naming structures read the same.
        if self.kind is None:
            return "*"
        ctx = self.ctx if self.ctx is not None or self.kind in (tuple, list, dict) \
            else self.kind
        kids = ""
        if self.children:
            indent += 2
            kids = self.children[0].__repr__(indent) + ("," if len(self.children) > 1 else "")
            kids += ",".join("\n" + " " * indent + c.__repr__(indent)
                             for c in self.children[1:])
        return f"TreeSpec({self.kind.__name__}, {ctx}, [{kids}])"


LEAF = TreeSpec(None)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(x: Any) -> Optional[Tuple[Any, Any, list]]:
    """``(kind, ctx, children)`` of a container, None for a leaf."""
    t = type(x)
    if t is tuple or t is list:
        return t, None, list(x)
    if _is_namedtuple(x):
        return t, None, list(x)
    if isinstance(x, dict):
        keys = list(x)
        return dict, keys, [x[k] for k in keys]
    return None


def tree_flatten(tree: Any) -> Tuple[List[Any], TreeSpec]:
    """The leaves of ``tree`` in order, and its structure."""
    leaves: list = []

    def go(x: Any) -> TreeSpec:
        c = _children(x)
        if c is None:
            leaves.append(x)
            return LEAF
        kind, ctx, kids = c
        return TreeSpec(kind, ctx, tuple(go(k) for k in kids))

    spec = go(tree)
    return leaves, spec


def tree_unflatten(leaves: Any, spec: Optional[TreeSpec]) -> Any:
    """Rebuild a tree of structure ``spec`` from its leaves."""
    assert spec is not None, "a structure comes with every flattened tree"
    it = iter(leaves)

    def go(s: TreeSpec) -> Any:
        if s.kind is None:
            return next(it)
        kids = [go(c) for c in s.children]
        if s.kind is dict:
            return dict(zip(s.ctx, kids))
        if s.kind is tuple or s.kind is list:
            return s.kind(kids)
        return s.kind(*kids)              # a named tuple

    return go(spec)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix: Any, spec: TreeSpec) -> Optional[list]:
    """One value per leaf of ``spec``: a non-container of ``prefix`` covers its whole subtree.
    None if ``prefix`` is not a prefix of ``spec``."""
    out: list = []

    def go(p: Any, s: TreeSpec) -> bool:
        c = _children(p)
        if c is None:
            out.extend([p] * s.num_leaves)
            return True
        kind, ctx, kids = c
        if s.kind is None or len(kids) != len(s.children):
            return False
        if kind is dict:
            if s.kind is not dict or set(ctx) != set(s.ctx):
                return False
            by_key = dict(zip(ctx, kids))
            return all(go(by_key[k], cs) for k, cs in zip(s.ctx, s.children))
        if kind is not s.kind and not (issubclass(s.kind, tuple) and kind is tuple):
            return False
        return all(go(k, cs) for k, cs in zip(kids, s.children))

    return out if go(prefix, spec) else None
