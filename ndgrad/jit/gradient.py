"""``Gradient``: the result of ``differentiate`` (seed 004's ``Gradient`` struct, autodiff.h).

Note [Gradient contract]
* ``f`` computes the real outputs ``f.outputs()[:f_real_outputs]`` followed by temporaries that
  ``df`` needs.
* ``df``'s inputs are ``[output vjps][temporary vjps][captured inputs][captured outputs]``:
  ``df_input_vjps[i]`` is the index in ``f.outputs()`` of the value whose vjp is df input ``i``;
  ``df_input_captured_inputs`` / ``df_input_captured_outputs`` are indices into ``f.inputs()`` /
  ``f.outputs()`` of the captured values, in topological order (inputs first).
* ``df``'s outputs are the gradients of ``f.inputs()[df_output_vjps[i]]``.
* An undefined vjp is passed as None (AutogradZero semantics); a df output may be None.
* ``df`` keeps the ``GradOf`` blocks (printing, counting); ``passes.lower_grad_of`` inlines them
  for code generation (``Gradient.lowered_df()``).

Example (the header example of autodiff.h is in tests/test_jit_differentiate.py):
    >>> import ndgrad
    >>> from ndgrad.jit import trace_graph, differentiate
    >>> a = ndgrad.ones(2, requires_grad=True)
    >>> g = differentiate(trace_graph(lambda a: a.sin(), (a,)).graph)
    >>> g.f_real_outputs, g.df_input_vjps, g.df_input_captured_inputs, g.df_output_vjps
    (1, [0], [0], [0])
"""

from __future__ import annotations

from typing import List

from .ir import Graph, dot_side_by_side, format_graph
from .passes import lower_grad_of

__all__ = ["Gradient"]


class Gradient:
    """The forward graph ``f``, the backward graph ``df`` and how they connect (the seed's
    fields; see Note [Gradient contract])."""

    def __init__(self) -> None:
        self.f: Graph = Graph()
        self.df: Graph = Graph()
        self.f_real_outputs: int = 0
        self.df_input_vjps: List[int] = []
        self.df_input_captured_inputs: List[int] = []
        self.df_input_captured_outputs: List[int] = []
        self.df_output_vjps: List[int] = []

    def fields(self) -> str:
        return (f"Gradient(f_real_outputs={self.f_real_outputs}, "
                f"df_input_vjps={self.df_input_vjps}, "
                f"df_input_captured_inputs={self.df_input_captured_inputs}, "
                f"df_input_captured_outputs={self.df_input_captured_outputs}, "
                f"df_output_vjps={self.df_output_vjps})")

    def __str__(self) -> str:
        return (self.fields() + "\n" + format_graph(self.f, "f = graph") +
                format_graph(self.df, "df = graph"))

    __repr__ = __str__

    def lowered_df(self) -> Graph:
        """A copy of ``df`` with the GradOf blocks inlined."""
        g = self.df.copy()
        lower_grad_of(g.block())
        return g

    def to_dot(self) -> str:
        """Graphviz DOT source with f and df side by side."""
        return dot_side_by_side([("f", self.f), ("df", self.df)])
