"""The IR (ndgrad.jit.ir): builders, accessors, lint catching broken graphs, copy, printing of
blocks, DOT."""

from __future__ import annotations

import numpy as np
import pytest

from ndgrad.jit import Graph, LintError
from ndgrad.jit.ir import Node
from ndgrad.ops._dispatch import REGISTRY

_EXP = REGISTRY["exp"][0]
_MUL = [op for op in REGISTRY["mul"] if op.inputs == ("self", "other")][0]


def _graph():
    g = Graph()
    x = g.add_input((2, 3), np.float32, True, name="x")
    e = g.insert_op(_EXP, [x], (), [((2, 3), np.float32, True)], source="demo.py:3").output()
    m = g.insert_op(_MUL, [e, x], (), [((2, 3), np.float32, True)]).output()
    g.register_output(m)
    return g, x, e, m


def test_builders_accessors_and_uses():
    g, x, e, m = _graph()
    g.lint()
    assert [n.kind() for n in g.nodes()] == ["exp", "mul"]
    assert g.inputs() == [x] and g.outputs() == [m]
    assert e.node().op is _EXP and e.node().inputs() == [x] and x.node() is None
    assert sorted((u.user.kind(), u.offset) for u in x.uses()) == [("exp", 0), ("mul", 1)]
    assert e.shape == (2, 3) and e.dtype == np.float32 and e.requires_grad
    assert str(g) == (
        "graph(%x : f32[2, 3] grad):\n"
        "  %0 : f32[2, 3] grad = exp(%x)" + " " * 31 + "# demo.py:3\n"
        "  %1 : f32[2, 3] grad = mul(%0, %x)\n"
        "  return (%1)\n")
    c = g.copy()
    c.lint()
    assert str(c) == str(g) and c.nodes()[0] is not g.nodes()[0]


def test_lint_finds_broken_graphs():
    g, x, e, m = _graph()
    n = g.nodes()[1]
    n.move_before(g.nodes()[0])            # mul now uses exp's output before it exists
    with pytest.raises(LintError, match="before it is defined"):
        g.lint()
    g, x, e, m = _graph()
    g.nodes()[0]._outputs.append(m)        # a value defined twice / not owned
    with pytest.raises(LintError):
        g.lint()
    g, x, e, m = _graph()
    g.nodes()[1]._inputs[0] = x            # inputs and use lists disagree
    with pytest.raises(LintError, match="missing from its uses"):
        g.lint()
    g = Graph()
    g.insert_prim("NoSuchPrim", [], [((), np.float32, False)])
    with pytest.raises(LintError, match="unknown primitive"):
        g.lint()


def test_blocks_print_and_dot():
    g = Graph()
    gy = g.add_input((3,), np.float32, name="gy")
    x = g.add_input((3,), np.float32, name="x")
    gof = g.insert_prim("GradOf", [gy], [], {"name": "exp"})
    blk = gof.add_block()
    g.set_insert_point(blk)
    t = g.insert_op(_MUL, [gy, x], (), [((3,), np.float32, False)]).output()
    g.set_insert_point(g.block())
    blk.register_output(t)
    out = gof.add_output((3,), np.float32)
    z = g.insert_prim("AutogradZero", [], [((3,), np.float32, False)]).output()
    s = g.insert_prim("AutogradAdd", [out, z], [((3,), np.float32, False)]).output()
    g.register_output(s)
    g.lint()
    assert str(g) == (
        "graph(%gy : f32[3], %x : f32[3]):\n"
        '  %0 : f32[3] = GradOf[name="exp"](%gy)\n'
        "    block0():\n"
        "      %1 : f32[3] = mul(%gy, %x)\n"
        "      -> (%1)\n"
        "  %2 : f32[3] = AutogradZero()\n"
        "  %3 : f32[3] = AutogradAdd(%0, %2)\n"
        "  return (%3)\n")
    dot = g.to_dot()
    assert dot.startswith('digraph "graph" {') and "cluster_" in dot and dot.rstrip().endswith("}")
    assert isinstance(Node("Constant"), Node)
