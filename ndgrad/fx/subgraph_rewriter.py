"""``replace_pattern`` (torch.fx.subgraph_rewriter): find every non-overlapping occurrence of
a pattern (a function or module, traced) in a GraphModule's graph and replace it with the
traced replacement, the pattern's inputs bound to the matched values.

Example:
    >>> import ndgrad, ndgrad.fx as fx
    >>> gm = fx.symbolic_trace(lambda x: ndgrad.relu(x + 1) * 2)
    >>> def pattern(a):
    ...     return ndgrad.relu(a)
    >>> def replacement(a):
    ...     return ndgrad.sigmoid(a)
    >>> len(fx.replace_pattern(gm, pattern, replacement))
    1
    >>> [str(n.target) for n in gm.graph.nodes if n.op == "call_function"][1]
    '<function sigmoid at ...>'
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Union

from .. import nn
from ._symbolic_trace import symbolic_trace
from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_arg

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    anchor: Node
    nodes_map: Dict[Node, Node]


def _graph_of(p: Union[Callable, Graph, GraphModule]) -> Graph:
    if isinstance(p, GraphModule):
        return p.graph
    if isinstance(p, Graph):
        return p
    return symbolic_trace(p).graph


def _match(pn: Node, gn: Any, nodes_map: Dict[Node, Any], pattern_root: Node) -> bool:
    if pn in nodes_map:
        return nodes_map[pn] is gn
    if pn.op == "placeholder":
        nodes_map[pn] = gn
        return True
    if not isinstance(gn, Node) or pn.op != gn.op or pn.target != gn.target:
        return False
    if pn.op == "get_attr":
        nodes_map[pn] = gn
        return True
    if len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
        return False
    if pn is not pattern_root and len(pn.users) != len(gn.users):
        return False
    nodes_map[pn] = gn
    pairs = list(zip(pn.args, gn.args)) + [(pn.kwargs[k], gn.kwargs[k]) for k in pn.kwargs]
    return all(_match_arg(a, b, nodes_map, pattern_root) for a, b in pairs)


def _match_arg(pa: Any, ga: Any, nodes_map: Dict[Node, Any], root: Node) -> bool:
    if isinstance(pa, Node):
        return _match(pa, ga, nodes_map, root)
    if isinstance(pa, (list, tuple)):
        return isinstance(ga, (list, tuple)) and len(pa) == len(ga) and \
            all(_match_arg(a, b, nodes_map, root) for a, b in zip(pa, ga))
    return type(pa) is type(ga) and pa == ga


def replace_pattern(gm: GraphModule, pattern: Union[Callable, Graph, GraphModule],
                    replacement: Union[Callable, Graph, GraphModule]) -> List[Match]:
    """Replace every match of ``pattern`` in ``gm`` by ``replacement``; returns the matches
    (anchor: the graph node matching the pattern's output)."""
    pg = _graph_of(pattern)
    rg = _graph_of(replacement)
    p_out = next(n for n in reversed(list(pg.nodes)) if n.op == "output")
    p_root = p_out.args[0]
    if not isinstance(p_root, Node):
        raise NotImplementedError("replace_pattern: the pattern must return one value")
    p_inputs = [n for n in pg.nodes if n.op == "placeholder"]
    matches: List[Match] = []
    used: set = set()
    for node in list(gm.graph.nodes):
        if node in used:
            continue
        nodes_map: Dict[Node, Any] = {}
        if not _match(p_root, node, nodes_map, p_root):
            continue
        inner = [g for p, g in nodes_map.items() if p.op != "placeholder"]
        if any(g in used for g in inner):
            continue
        # the matched nodes other than the anchor are used only inside the match
        inner_set = set(inner)
        if any(u not in inner_set for g in inner if g is not node for u in g.users):
            continue
        matches.append(Match(p_root, nodes_map))
        used.update(inner)
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    for m in matches:
        anchor = m.nodes_map[m.anchor]
        users = sorted(anchor.users, key=lambda u: order.get(u, len(order)))
        insert = gm.graph.inserting_before(users[0]) if users else \
            gm.graph.inserting_after(anchor)
        val_map: Dict[Node, Any] = {}
        r_inputs = [n for n in rg.nodes if n.op == "placeholder"]
        for rp, pp in zip(r_inputs, p_inputs):
            val_map[rp] = m.nodes_map[pp]
        result: Optional[Any] = None
        with insert:
            for rn in rg.nodes:
                if rn.op == "placeholder":
                    continue
                if rn.op == "output":
                    result = map_arg(rn.args[0], val_map.__getitem__)
                    break
                if rn.op in ("get_attr", "call_module") and isinstance(replacement,
                                                                        nn.Module):
                    _install(gm, replacement, rn.target)
                val_map[rn] = gm.graph.node_copy(rn, val_map.__getitem__)
        assert isinstance(result, Node), "replace_pattern: the replacement returns one value"
        anchor.replace_all_uses_with(result)
        for p in reversed(list(pg.nodes)):
            g = m.nodes_map.get(p)
            if p.op in ("placeholder", "output") or g is None:
                continue
            if not g.users:
                gm.graph.erase_node(g)
    gm.recompile()
    return matches


def _install(gm: GraphModule, owner: nn.Module, target: str) -> None:
    obj: Any = owner
    for atom in target.split("."):
        obj = getattr(obj, atom)
    if isinstance(obj, nn.Module):
        gm.add_submodule(target, obj)
    else:
        setattr(gm, target, obj)
