"""ndgrad.viz.make_dot draws the backward graph with torchviz's structure: the expected nodes,
labels, colours and edges below are those torchviz 0.0.3 draws for the same PyTorch programs
(node ids are object ids, so graphs are compared by labels)."""

import re
from collections import Counter

import graphviz
import numpy as np
import pytest
from op_db import OPS, make_inputs

import ndgrad as torch
from ndgrad.viz import dot as viz_dot
from ndgrad.viz import make_dot, to_dot_text

OUT, LEAF, SAVED, BASE = "darkolivegreen1", "lightblue", "orange", "darkolivegreen3"
_LABEL = r'(?:"((?:[^"\\]|\\.)*)"|(\S+?))'


def structure(src):
    """(nodes, edges): nodes a Counter of (label, fillcolor), edges a Counter of
    (tail label, head label, attributes); a node stated twice keeps its last attributes, as
    Graphviz draws it."""
    nodes = {}
    for m in re.finditer(r'\t(\d+) \[label=' + _LABEL + r'(?: fillcolor=(\S+))?\]\n', src):
        nodes[m.group(1)] = (m.group(2) if m.group(2) is not None else m.group(3), m.group(4))
    edges = Counter()
    for m in re.finditer(r'\t(\d+) -> (\d+)(?: \[(.*?)\])?\n', src):
        edges[nodes[m.group(1)][0], nodes[m.group(2)][0], m.group(3)] += 1
    return Counter(nodes.values()), edges


def mlp():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    return m, m(torch.randn(5, 4)).pow(2).mean()


def test_mlp_graph_has_torchvizs_nodes_labels_colours_and_edges():
    m, y = mlp()
    dot = make_dot(y, params=dict(m.named_parameters()))
    assert isinstance(dot, graphviz.Digraph)
    nodes, edges = structure(dot.source)
    assert nodes == Counter({
        ("\n ()", OUT): 1, ("MeanBackward0", None): 1, ("PowBackward0", None): 1,
        ("AddmmBackward0", None): 2, ("TanhBackward0", None): 1, ("TBackward0", None): 2,
        ("AccumulateGrad", None): 4, ("0.weight\n (3, 4)", LEAF): 1, ("0.bias\n (3)", LEAF): 1,
        ("2.weight\n (2, 3)", LEAF): 1, ("2.bias\n (2)", LEAF): 1})
    assert edges == Counter({
        ("MeanBackward0", "\n ()", None): 1, ("PowBackward0", "MeanBackward0", None): 1,
        ("AddmmBackward0", "PowBackward0", None): 1, ("TanhBackward0", "AddmmBackward0", None): 1,
        ("AddmmBackward0", "TanhBackward0", None): 1, ("TBackward0", "AddmmBackward0", None): 2,
        ("AccumulateGrad", "AddmmBackward0", None): 2, ("AccumulateGrad", "TBackward0", None): 2,
        ("0.weight\n (3, 4)", "AccumulateGrad", None): 1,
        ("0.bias\n (3)", "AccumulateGrad", None): 1,
        ("2.weight\n (2, 3)", "AccumulateGrad", None): 1,
        ("2.bias\n (2)", "AccumulateGrad", None): 1})
    # torchviz's graph and node attributes
    assert dot.graph_attr == {"size": "12,12"}
    assert dot.node_attr == {"style": "filled", "shape": "box", "align": "left",
                             "fontsize": "10", "ranksep": "0.1", "height": "0.2",
                             "fontname": "monospace"}


def test_show_saved_draws_saved_tensors_in_orange_with_undirected_edges():
    m, y = mlp()
    nodes, edges = structure(make_dot(y, params=dict(m.named_parameters()),
                                      show_saved=True).source)
    saved = {k: n for k, n in nodes.items() if k[1] == SAVED}
    # torchviz shows the same five: pow's self, both of the second addmm's matrices, tanh's
    # result, the first addmm's mat1 (its mat2 is not saved: the input needs no gradient)
    assert saved == {("self\n (5, 2)", SAVED): 1, ("mat1\n (5, 3)", SAVED): 1,
                     ("mat2\n (3, 2)", SAVED): 1, ("result\n (5, 3)", SAVED): 1,
                     ("mat1\n (5, 4)", SAVED): 1}
    undirected = Counter({(t, h): n for (t, h, a), n in edges.items() if a == "dir=none"})
    assert undirected == Counter({
        ("PowBackward0", "self\n (5, 2)"): 1, ("AddmmBackward0", "mat1\n (5, 3)"): 1,
        ("AddmmBackward0", "mat2\n (3, 2)"): 1, ("TanhBackward0", "result\n (5, 3)"): 1,
        ("AddmmBackward0", "mat1\n (5, 4)"): 1})


def test_show_attrs_tables_match_torchviz_and_truncate():
    x = torch.randn(3, 4, requires_grad=True)
    y = x.tanh().pow(2)
    nodes, _ = structure(make_dot(y, show_attrs=True).source)
    labels = {lab for lab, _ in nodes}
    assert "PowBackward0\n------------------------\nexponent:              2\n" \
           "self    : [saved tensor]" in labels
    assert "TanhBackward0\n----------------------\nresult: [saved tensor]" in labels
    nodes, _ = structure(make_dot(y, show_attrs=True, max_attr_chars=5).source)
    labels = {lab for lab, _ in nodes}
    assert "PowBackward0\n---------------\nexponent:     2\nself    : [s..." in labels
    assert "TanhBackward0\n-------------\nresult: [s..." in labels


def test_attribute_values_are_the_nodes_saved_arguments():
    x = torch.randn(2, 3, requires_grad=True)
    fn = x.sum(dim=1, keepdim=True).grad_fn
    assert {"_saved_dim", "_saved_keepdim"} <= set(dir(fn))
    label = structure(make_dot(x.sum(dim=1, keepdim=True), show_attrs=True).source)[0]
    (table,) = [lab for lab, _ in label if lab.startswith("SumBackward")]
    rows = dict(r.split(":") for r in table.splitlines()[2:])
    assert {k.strip(): v.strip() for k, v in rows.items()}["keepdim"] == "True"


def test_custom_function_views_and_several_outputs():
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = torch.randn(3, requires_grad=True)
    y = Double.apply(x)
    v = (y * 1)[1:]
    nodes, edges = structure(make_dot((v, y.exp()), params={"x": x}).source)
    # torchviz: the custom node's saved x is drawn (orange, stated after the leaf, so it wins);
    # the view output's base in dark green joined by a dotted edge
    assert nodes == Counter({
        ("\n (2)", OUT): 1, ("\n (3)", OUT): 1, ("\n (3)", BASE): 1, ("SliceBackward0", None): 1,
        ("MulBackward0", None): 1, ("DoubleBackward", None): 1, ("ExpBackward0", None): 1,
        ("AccumulateGrad", None): 1, ("x\n (3)", SAVED): 1})
    assert edges == Counter({
        ("SliceBackward0", "\n (2)", None): 1, ("MulBackward0", "SliceBackward0", None): 1,
        ("DoubleBackward", "MulBackward0", None): 1, ("AccumulateGrad", "DoubleBackward", None): 1,
        ("x\n (3)", "AccumulateGrad", None): 1, ("x\n (3)", "DoubleBackward", "dir=none"): 1,
        ("MulBackward0", "\n (3)", None): 1, ("\n (3)", "\n (2)", "style=dotted"): 1,
        ("DoubleBackward", "ExpBackward0", None): 1, ("ExpBackward0", "\n (3)", None): 1})


def test_without_graphviz_the_same_dot_text_is_returned(monkeypatch):
    m, y = mlp()
    params = dict(m.named_parameters())
    # one set of statements, written by ndgrad and by the graphviz package: the same text
    graph = viz_dot._build(y, params, True, True, 50)
    assert graph.text() == graph.digraph(graphviz).source
    monkeypatch.setattr(viz_dot, "_graphviz", lambda: None)
    text = make_dot(y, params=params, show_attrs=True, show_saved=True)
    assert isinstance(text, str) and text.startswith("digraph {")
    assert structure(text) == structure(graph.text())
    assert to_dot_text(y, params) == make_dot(y, params)


def test_quoting_and_size_grow_like_graphviz():
    # labels with quotes, keywords and numbers are spelled as the graphviz package spells them
    for s in ['a"b', "node", "12", "-1.5", "x y", "ok_1", "(3, 4)", "a\nb"]:
        assert viz_dot._quote(s) == graphviz.quoting.quote(s)
    x = torch.randn(2, requires_grad=True)
    y = x
    for _ in range(60):
        y = y * 1.5
    src = make_dot(y).source
    rows = src.count("\n\t") - 2
    assert f'graph [size="{rows * 0.15},{rows * 0.15}"]' in src


def test_objects_with_to_dot_pass_through(monkeypatch):
    class Drawn:
        def to_dot(self):
            return "digraph {\n\ta -> b\n}\n"

    out = make_dot(Drawn())
    assert isinstance(out, graphviz.Source) and out.source == Drawn().to_dot()
    monkeypatch.setattr(viz_dot, "_graphviz", lambda: None)
    assert make_dot(Drawn()) == Drawn().to_dot()
    marker = object()
    assert make_dot(type("G", (), {"to_dot": lambda self: marker})()) is marker


def test_bad_arguments_raise_type_error():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="expected a Tensor"):
        make_dot([1, 2])
    with pytest.raises(TypeError, match=r"params\['w'\] must be a Tensor"):
        make_dot(x * 2, params={"w": 3})


def test_a_whole_cnn_draws_with_every_option():
    torch.manual_seed(0)
    nn = torch.nn
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.LayerNorm(8), nn.Linear(8, 3))
    y = nn.functional.cross_entropy(m(torch.randn(2, 1, 6, 6)), torch.tensor([0, 2]))
    nodes, edges = structure(make_dot(y, params=dict(m.named_parameters()), show_attrs=True,
                                      show_saved=True).source)
    leaves = {lab.split("\n")[0] for lab, c in nodes if c == LEAF}
    assert leaves == {k for k, _ in m.named_parameters()}
    names = {lab.split("\n")[0] for lab, c in nodes if c is None}
    assert {"NllLossBackward0", "LogSoftmaxBackward0", "ConvolutionBackward0",
            "NativeBatchNormBackward0", "ReluBackward0"} <= names


def test_every_op_in_the_op_db_draws_with_every_option():
    rng = np.random.default_rng(0)
    drawn = 0
    for op in OPS:
        if not op.differentiable:
            continue
        xs = [torch.tensor(a, requires_grad=True)
              for a in make_inputs(op, op.samples[0], rng)]
        out = op.fn(torch, *xs)
        outs = tuple(o for o in (out if isinstance(out, (tuple, list)) else (out,))
                     if isinstance(o, torch.Tensor) and o.grad_fn is not None)
        if not outs:
            continue
        text = to_dot_text(outs, show_attrs=True, show_saved=True)
        names, _ = structure(text)
        assert sum(n for (_, c), n in names.items() if c == OUT) >= 1
        assert any(lab.startswith(type(o.grad_fn).__name__) for o in outs for lab, _ in names)
        drawn += 1
    assert drawn > 500
