"""Draw a tensor's backward graph as Graphviz DOT, with torchviz's signature and conventions.

A picture has one box per backward node (grey, named like ``MulBackward0``) and one per tensor:

- light blue: a leaf that requires grad (its ``AccumulateGrad`` node points from it), labelled
  with its name from ``params`` and its shape, e.g. ``0.weight`` / ``(3, 4)``;
- orange: a saved tensor, labelled with the name it is saved under (``self``, ``result``,
  ``mat1`` ...), joined to its node by an undirected edge; a custom ``Function``'s
  ``saved_tensors`` are always drawn, a built-in node's only with ``show_saved=True``;
- dark olive green (``darkolivegreen1``): an output passed to ``make_dot``; when an output is a
  view its base is drawn too (``darkolivegreen3``), joined by a dotted edge.

Edges point the way gradients flow: from a node's ``next_functions`` to the node, from a node
to the output it produced. ``show_attrs=True`` adds a table of the node's saved values and
arguments (``dir(grad_fn)``'s ``_saved_*`` names) under its name.

``make_dot`` returns a ``graphviz.Digraph`` when the ``graphviz`` Python package is installed
(``pip install ndgrad[graphviz]``; ``.render()`` then needs the Graphviz programs, e.g.
``apt-get install graphviz``) and the DOT source text otherwise; ``str()`` of either is the
same DOT text.

Note [Drawing other graphs]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
``make_dot(obj)`` also draws any object that is not a tensor and has a ``to_dot()`` method
(the graph path's traced graphs and ``Gradient`` objects): ``to_dot()`` takes no argument and
returns DOT source text, which ``make_dot`` passes through (as a ``graphviz.Source`` when the
package is installed, else as the text itself). An object whose ``to_dot()`` returns something
other than text gets that object back unchanged.
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Mapping, Optional, Sequence, Union

from ..tensor import Tensor

__all__ = ["make_dot", "to_dot_text"]

SAVED_PREFIX = "_saved_"

# torchviz's colours (a backward node keeps the default grey fill of style=filled).
LEAF_COLOR = "lightblue"
SAVED_COLOR = "orange"
OUTPUT_COLOR = "darkolivegreen1"
BASE_COLOR = "darkolivegreen3"

NODE_ATTR = {"style": "filled", "shape": "box", "align": "left", "fontsize": "10",
             "ranksep": "0.1", "height": "0.2", "fontname": "monospace"}

_BARE_ID = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*|-?(\.[0-9]+|[0-9]+(\.[0-9]*)?))$")
_KEYWORDS = frozenset(("node", "edge", "graph", "digraph", "subgraph", "strict"))


def _quote(s: str) -> str:
    """A DOT identifier for ``s``: bare when it is a name or a number, else double-quoted (the
    same spelling the graphviz package gives)."""
    if _BARE_ID.match(s) and s.lower() not in _KEYWORDS:
        return s
    return '"' + re.sub(r'(?<!\\)"', r'\\"', s) + '"'


def _attr_list(label: Optional[str], attrs: Mapping[str, str]) -> str:
    parts = [f"label={_quote(label)}"] if label is not None else []
    parts += [f"{_quote(k)}={_quote(v)}" for k, v in sorted(attrs.items())]
    return " [" + " ".join(parts) + "]" if parts else ""


class _Graph:
    """The DOT statements of one picture, in order; replayed into a ``graphviz.Digraph`` or
    written out as text."""

    def __init__(self) -> None:
        self.body: list = []      # ("node", name, label, attrs) | ("edge", tail, head, attrs)

    def node(self, name: str, label: str, **attrs: str) -> None:
        self.body.append(("node", name, label, attrs))

    def edge(self, tail: str, head: str, **attrs: str) -> None:
        self.body.append(("edge", tail, head, attrs))

    def size(self) -> str:
        # The drawing grows with the graph: 0.15 inch per statement, at least 12 inches.
        n = len(self.body) * 0.15
        s = str(n if n > 12 else 12)
        return f"{s},{s}"

    def text(self) -> str:
        lines = ["digraph {", f"\tgraph{_attr_list(None, {'size': self.size()})}",
                 f"\tnode{_attr_list(None, NODE_ATTR)}"]
        for kind, a, b, attrs in self.body:
            if kind == "node":
                lines.append(f"\t{_quote(a)}{_attr_list(b, attrs)}")
            else:
                lines.append(f"\t{_quote(a)} -> {_quote(b)}{_attr_list(None, attrs)}")
        return "\n".join(lines) + "\n}\n"

    def digraph(self, graphviz: Any) -> Any:
        dot = graphviz.Digraph(node_attr=dict(NODE_ATTR), graph_attr={"size": self.size()})
        for kind, a, b, attrs in self.body:
            (dot.node if kind == "node" else dot.edge)(a, b, **attrs)
        return dot


def _graphviz() -> Any:
    """The graphviz package, or None when it is not installed."""
    try:
        return importlib.import_module("graphviz")
    except ImportError:
        return None


def _shape_text(t: Tensor) -> str:
    return "(" + ", ".join(str(int(n)) for n in t.shape) + ")"


def _saved_values(fn: Any) -> list:
    """``(name, value)`` for each ``_saved_<name>`` attribute of a node, in ``dir`` order."""
    return [(a[len(SAVED_PREFIX):], getattr(fn, a))
            for a in dir(fn) if a.startswith(SAVED_PREFIX)]


def _node_label(fn: Any, show_attrs: bool, max_attr_chars: int) -> str:
    name = type(fn).__name__
    if not show_attrs:
        return name
    rows = {}
    for key, val in _saved_values(fn):
        if isinstance(val, Tensor):
            rows[key] = "[saved tensor]"
        elif isinstance(val, tuple) and any(isinstance(v, Tensor) for v in val):
            rows[key] = "[saved tensors]"
        else:
            rows[key] = str(val)
    if not rows:
        return name
    width = min(max(len(v) for v in rows.values()), max(max_attr_chars, 3))
    key_width = max(len(k) for k in rows)

    def cut(v: str) -> str:
        return v if len(v) <= width else v[:width - 3] + "..."

    table = [f"{k.ljust(key_width)}: {cut(v).rjust(width)}" for k, v in rows.items()]
    rule = "-" * max(key_width + width + 2, len(name))
    return "\n".join([name, rule, *table])


def _build(var: Any, params: Optional[Mapping[str, Any]], show_attrs: bool, show_saved: bool,
           max_attr_chars: int) -> _Graph:
    outputs = tuple(var) if isinstance(var, (tuple, list)) else (var,)
    for out in outputs:
        if not isinstance(out, Tensor):
            raise TypeError("make_dot(): expected a Tensor, a tuple of Tensors or an object with "
                            f"a to_dot() method, but got {type(out).__name__}")
    names = {}
    if params is not None:
        for key, value in params.items():
            if not isinstance(value, Tensor):
                raise TypeError(f"make_dot(): params[{key!r}] must be a Tensor, but got "
                                f"{type(value).__name__}")
            names[id(value)] = key

    graph = _Graph()
    seen: set = set()
    keep: list = []     # saved values unpacked on the way: alive, so their ids stay unique

    def tensor_label(t: Tensor, name: str = "") -> str:
        return f"{name or names.get(id(t), '')}\n {_shape_text(t)}"

    def add_saved(fn: Any, key: str, t: Tensor) -> None:
        graph.edge(str(id(fn)), str(id(t)), dir="none")
        graph.node(str(id(t)), tensor_label(t, key), fillcolor=SAVED_COLOR)

    def add_node(fn: Any) -> None:
        if id(fn) in seen:
            return
        seen.add(id(fn))
        if show_saved:
            for key, val in _saved_values(fn):
                keep.append(val)
                seen.add(id(val))
                if isinstance(val, Tensor):
                    add_saved(fn, key, val)
                elif isinstance(val, tuple):
                    for i, t in enumerate(val):
                        if isinstance(t, Tensor):
                            add_saved(fn, f"{key}[{i}]", t)
        leaf = getattr(fn, "variable", None)
        if isinstance(leaf, Tensor):            # AccumulateGrad: draw the leaf it feeds
            seen.add(id(leaf))
            graph.node(str(id(leaf)), tensor_label(leaf), fillcolor=LEAF_COLOR)
            graph.edge(str(id(leaf)), str(id(fn)))
        graph.node(str(id(fn)), _node_label(fn, show_attrs, max_attr_chars))
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is not None:
                graph.edge(str(id(nxt)), str(id(fn)))
                add_node(nxt)
        if hasattr(fn, "saved_tensors"):        # a custom Function's ctx.save_for_backward
            for t in fn.saved_tensors:
                if t is None:
                    continue
                keep.append(t)
                seen.add(id(t))
                graph.edge(str(id(t)), str(id(fn)), dir="none")
                graph.node(str(id(t)), tensor_label(t), fillcolor=SAVED_COLOR)

    def add_output(t: Tensor, color: str) -> None:
        if id(t) in seen:
            return
        seen.add(id(t))
        graph.node(str(id(t)), tensor_label(t), fillcolor=color)
        if t.grad_fn is not None:
            add_node(t.grad_fn)
            graph.edge(str(id(t.grad_fn)), str(id(t)))
        base = t._base
        if base is not None:            # a view: its base too, joined by a dotted edge
            add_output(base, BASE_COLOR)
            graph.edge(str(id(base)), str(id(t)), style="dotted")

    for out in outputs:
        add_output(out, OUTPUT_COLOR)
    return graph


def make_dot(var: Union[Tensor, Sequence[Tensor], Any],
             params: Optional[Mapping[str, Tensor]] = None, show_attrs: bool = False,
             show_saved: bool = False, max_attr_chars: int = 50) -> Any:
    """Draw the backward graph that produced ``var`` (a tensor or a tuple of tensors).

    Args:
        var: the output tensor(s); or any object with a ``to_dot()`` method (Note [Drawing
            other graphs]).
        params: names for tensors, e.g. ``dict(model.named_parameters())``; a leaf found in
            it is labelled with its name.
        show_attrs: list each node's saved values and arguments under its name.
        show_saved: draw the tensors built-in nodes saved for backward (orange boxes).
        max_attr_chars: the widest attribute value shown with ``show_attrs``.

    Returns a ``graphviz.Digraph`` when the ``graphviz`` package is installed, else the DOT
    source text.

    >>> import ndgrad
    >>> from ndgrad.viz import make_dot
    >>> w = ndgrad.ones(3, 4, requires_grad=True)
    >>> dot = str(make_dot((w * 2).sum(), params={"w": w}))
    >>> [s for s in ("SumBackward0", "MulBackward0", "AccumulateGrad", "(3, 4)") if s in dot]
    ['SumBackward0', 'MulBackward0', 'AccumulateGrad', '(3, 4)']
    """
    to_dot = getattr(var, "to_dot", None)
    if not isinstance(var, Tensor) and callable(to_dot):    # Note [Drawing other graphs]
        drawn = to_dot()
        if isinstance(drawn, str):
            gv = _graphviz()
            return gv.Source(drawn) if gv is not None else drawn
        return drawn
    graph = _build(var, params, show_attrs, show_saved, max_attr_chars)
    gv = _graphviz()
    return graph.digraph(gv) if gv is not None else graph.text()


def to_dot_text(var: Union[Tensor, Sequence[Tensor], Any],
                params: Optional[Mapping[str, Tensor]] = None, show_attrs: bool = False,
                show_saved: bool = False, max_attr_chars: int = 50) -> str:
    """``make_dot``'s picture as DOT source text, whether or not graphviz is installed.

    >>> import ndgrad
    >>> from ndgrad.viz import to_dot_text
    >>> print(to_dot_text(ndgrad.ones(2, requires_grad=True).exp()).splitlines()[0])
    digraph {
    """
    return str(make_dot(var, params, show_attrs, show_saved, max_attr_chars))
