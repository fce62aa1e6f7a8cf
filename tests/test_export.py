"""ndgrad.export against torch.export: the signature (kinds, names, targets, persistence),
node names and ops, state_dict, ``module()`` outputs and structure, the static-shape guard and
dynamic dimensions. Node targets differ by design (ndgrad records its functions and Tensor
methods, torch its ATen operators), so they are not compared."""

from __future__ import annotations

import pytest
import torch
import torch.export

import ndgrad
import ndgrad.export


def _model(lib):
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 4)
            self.bn = nn.BatchNorm1d(4)
            self.register_buffer("b", lib.ones(4))
            self.register_buffer("tmp", lib.zeros(4), persistent=False)
            self.scale = lib.tensor(2.0)

        def forward(self, x, y, *, z=None):
            h = self.bn(self.fc(x)).relu() + self.b * self.scale - self.tmp
            if x.shape[0] > 1:                    # static shapes: specialized
                h = h * y
            return {"out": h.view(x.size(0), -1), "parts": (h.sum(), z + 1)}

    lib.manual_seed(0)
    return M().eval()


def _describe(lib, ep):
    sig = ep.graph_signature
    return "\n".join([
        str([(s.kind.name, s.arg.name, s.target, s.persistent) for s in sig.input_specs]),
        str([(s.kind.name, s.arg.name) for s in sig.output_specs]),
        str((sig.parameters, sig.buffers, sig.user_inputs, sig.user_outputs)),
        str((sig.inputs_to_parameters, sig.inputs_to_buffers)),
        str(sorted(ep.state_dict)),
        str([n.op for n in ep.graph.nodes]),
        str([n.name for n in ep.graph.nodes if n.op != "call_function"]),
        str(sig),
    ])


def test_signature_nodes_and_state_like_torch():
    out = {}
    for name, lib in (("torch", torch), ("ndgrad", ndgrad)):
        m = _model(lib)
        x, y, z = lib.ones(2, 3), lib.full((4,), 3.0), lib.zeros(1)
        ep = lib.export.export(m, (x, y), {"z": z})
        out[name] = _describe(lib, ep)
        assert ep.state_dict["fc.weight"] is m.fc.weight
        mod = ep.module()
        assert mod.fc.weight is m.fc.weight
        res = mod(x * 2, y, z=z)
        ref = m(x * 2, y, z=z)
        assert set(res) == {"out", "parts"} and isinstance(res["parts"], tuple)
        for a, b in zip((res["out"], *res["parts"]), (ref["out"], *ref["parts"])):
            assert lib.allclose(a, b)
        with pytest.raises(AssertionError, match=r"Guard failed: x.size\(\)\[0\] == 2"):
            mod(lib.ones(3, 3), y, z=z)
        assert "ExportedProgram:" in str(ep) and "Graph signature: " in str(ep)
    assert out["ndgrad"] == out["torch"], f"\n{out['torch']}\n---\n{out['ndgrad']}"


def test_values_and_gradients_match_eager():
    m = _model(ndgrad)
    x = ndgrad.randn(2, 3)
    ep = ndgrad.export.export(m, (x, ndgrad.ones(4)), {"z": ndgrad.zeros(1)})
    xr = x.clone().requires_grad_()
    out = ep.module()(xr, ndgrad.ones(4), z=ndgrad.zeros(1))["out"]
    out.sum().backward()
    xe = x.clone().requires_grad_()
    m(xe, ndgrad.ones(4), z=ndgrad.zeros(1))["out"].sum().backward()
    assert ndgrad.allclose(xr.grad, xe.grad)
    assert m.fc.weight.grad is not None


def test_dynamic_dims_like_torch():
    for lib in (torch, ndgrad):
        Dim = lib.export.Dim

        class Flat(lib.nn.Module):
            def forward(self, x):
                return x.view(x.size(0), -1) * 2

        ep = lib.export.export(Flat(), (lib.ones(2, 3, 4),),
                               dynamic_shapes={"x": {0: Dim("batch")}})
        assert ep.module()(lib.ones(5, 3, 4)).shape == (5, 12)
        assert ep.module()(lib.ones(2, 3, 4)).shape == (2, 12)
        with pytest.raises(Exception, match="x.size\\(\\)\\[1\\] == 3"):
            ep.module()(lib.ones(2, 4, 4))
        with pytest.raises(Exception, match="top-level keys must be the arg names"):
            lib.export.export(Flat(), (lib.ones(2, 3, 4),),
                              dynamic_shapes={"y": {0: Dim("batch")}})


def test_export_argument_errors():
    for lib in (torch, ndgrad):
        with pytest.raises(RuntimeError, match="Expecting `args` to be a tuple of example "
                                               "positional inputs, got <class 'list'>"):
            lib.export.export(lib.nn.ReLU(), [lib.ones(1)])


def test_constant_attributes_lifted_like_torch():
    out = {}
    for name, lib in (("torch", torch), ("ndgrad", ndgrad)):
        class M(lib.nn.Module):
            def __init__(self, lib=lib):
                super().__init__()
                self.k = lib.tensor([1.0, 2.0])

            def forward(self, x):
                return x + self.k * 2

        m = M()
        ep = lib.export.export(m, (lib.ones(2),))
        assert lib.equal(ep.module()(lib.full((2,), 3.0)), m(lib.full((2,), 3.0)))
        assert type(m.k) is lib.Tensor and list(ep.constants) == ["k"]
        out[name] = _describe(lib, ep)
    assert out["ndgrad"] == out["torch"]


def test_data_dependent_control_flow_refused_like_torch():
    for lib in (torch, ndgrad):
        class Branchy(lib.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x
                return -x

        with pytest.raises(RuntimeError, match="Could not guard on data-dependent expression"):
            lib.export.export(Branchy(), (lib.ones(2),))
