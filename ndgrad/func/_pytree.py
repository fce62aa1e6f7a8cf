"""The function transforms' use of pytrees: ``ndgrad.utils._pytree`` (torch.utils._pytree) is
the one implementation; this module adds ``broadcast_prefix``, which expands ``vmap``'s
``in_dims``/``out_dims`` (an int or None stands for a whole subtree) to one value per leaf.

Example:
    >>> from ndgrad.func._pytree import broadcast_prefix, tree_flatten
    >>> broadcast_prefix((0, None), tree_flatten((1, [2, 3]))[1])
    [0, None, None]
"""

from __future__ import annotations

from typing import Any, Optional

from ..utils._pytree import SUPPORTED_NODES, TreeSpec, _node_type, tree_flatten, tree_map
from ..utils._pytree import tree_unflatten as _tree_unflatten

__all__ = ["TreeSpec", "tree_flatten", "tree_unflatten", "tree_map", "broadcast_prefix"]


def tree_unflatten(leaves: Any, spec: Optional[TreeSpec]) -> Any:
    """``utils._pytree.tree_unflatten`` for the structures the transforms keep (always
    present when leaves are)."""
    assert spec is not None, "a structure comes with every flattened tree"
    return _tree_unflatten(leaves, spec)


def broadcast_prefix(prefix: Any, spec: TreeSpec) -> Optional[list]:
    """One value per leaf of ``spec``: a leaf of ``prefix`` covers its whole subtree. None if
    ``prefix`` is not a prefix of ``spec`` (a plain tuple may stand for a named tuple, and a
    dict's keys may come in another order)."""
    out: list = []

    def go(p: Any, s: TreeSpec) -> bool:
        ptype = _node_type(p)
        node = SUPPORTED_NODES.get(ptype)
        if node is None:
            out.extend([p] * s.num_leaves)
            return True
        kids, ctx = node.flatten_fn(p)
        if s.type is None or len(kids) != s.num_children:
            return False
        if isinstance(p, dict):
            if not isinstance(s.context, list) or s.type not in (type(p), dict) or \
                    set(ctx) != set(s.context):
                return False
            return all(go(p[k], cs) for k, cs in zip(s.context, s.children_specs))
        tuple_like = ptype is tuple and s.type not in (list, None) and \
            SUPPORTED_NODES[s.type].unflatten_fn is not None and \
            (s.type is tuple or s.type.__name__ == "namedtuple" or
             (isinstance(s.type, type) and issubclass(s.type, tuple)))
        if ptype is not s.type and not tuple_like:
            return False
        return all(go(k, cs) for k, cs in zip(kids, s.children_specs))

    return out if go(prefix, spec) else None
