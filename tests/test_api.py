"""``autograd.backward`` and ``autograd.grad`` (seed 002) against PyTorch: every argument, the
implicit scalar gradient, argument checks with their messages, ``inputs=`` (tensors, non-leaf
tensors, gradient edges), ``allow_unused``, ``materialize_grads``, deprecated arguments,
``retain_graph`` defaulting to ``create_graph`` and batched gradients."""

import warnings

import numpy as np
import pytest
import torch

import ndgrad
from _compare import outcome, same_outcome

LIBS = (torch, ndgrad)




def leaf(L, values=(1.0, 2.0, 3.0), dtype=None):
    return L.tensor(list(values), dtype=dtype, requires_grad=True)


def values(ts):
    return [None if t is None else [round(v, 5) for v in t.reshape(-1).tolist()] for t in ts]


# ---------------------------------------------------------------------------- implicit grad
def test_implicit_grad_only_for_scalar_outputs():
    t = same_outcome(lambda L: (leaf(L) * 2).backward())
    assert t == ("RuntimeError", "grad can be implicitly created only for scalar outputs")
    same_outcome(lambda L: L.autograd.grad(leaf(L) * 2, leaf(L)))


def test_implicit_grad_for_one_element_non_scalar():
    def run(L):
        x = leaf(L, (2.0,))
        (x * 3).backward()                  # shape (1,): one element is enough
        return x.grad.tolist()
    assert same_outcome(run) == ("ok", [3.0])


@pytest.mark.parametrize("make", [
    lambda L: (leaf(L) * (1 + 1j)).sum(),
    lambda L: leaf(L).sum().to(L.complex128),
])
def test_implicit_grad_rejects_complex_scalar(make):
    t = same_outcome(lambda L: make(L).backward())
    assert t[0] == "RuntimeError" and "real scalar outputs" in t[1]


def test_implicit_grad_for_half_precision_scalar():
    def run(L):
        x = leaf(L, dtype=L.float16)
        x.sum().backward()
        return x.grad.tolist(), str(x.grad.dtype).split(".")[1]
    assert same_outcome(run) == ("ok", ([1.0, 1.0, 1.0], "float16"))


def test_output_not_requiring_grad():
    t = same_outcome(lambda L: L.autograd.backward([leaf(L).sum(), L.ones(1).sum()]))
    assert t == ("RuntimeError", "element 1 of tensors does not require grad and does not have "
                                 "a grad_fn")
    same_outcome(lambda L: L.autograd.grad([L.ones(1).sum()], [leaf(L)]))
    same_outcome(lambda L: L.ones(2).sum().backward())


def test_bool_output_does_not_require_grad():
    same_outcome(lambda L: L.autograd.backward(leaf(L).sum() > 0))


# ---------------------------------------------------------------------------- grad_tensors
@pytest.mark.parametrize("gshape", [(4,), (3, 1), (1, 3), ()])
def test_grad_tensors_shape_mismatch(gshape):
    t = same_outcome(lambda L: (leaf(L) * 2).backward(L.ones(gshape)))
    assert t[0] == "RuntimeError" and t[1].startswith("Mismatch in shape: grad_output[0] has")


def test_grad_outputs_shape_mismatch_reports_index():
    def run(L):
        x = leaf(L)
        return L.autograd.grad([x * 2, x * 3], [x], [L.ones(2), L.ones(3)])
    assert same_outcome(run)[1].startswith("Mismatch in shape: grad_output[0]")
    # PyTorch 2.13 finds the index with ``grads.index(grad)``, which compares tensors
    # elementwise and fails for later outputs; ndgrad reports the index.
    x = leaf(ndgrad)
    t = outcome(lambda: ndgrad.autograd.grad([x * 2, x * 3], [x], [ndgrad.ones(3),
                                                                   ndgrad.ones(2)]))
    assert t == ("RuntimeError", "Mismatch in shape: grad_output[1] has a shape of "
                                 "ndgrad.Size([2]) and output[1] has a shape of ndgrad.Size([3]).")


def test_grad_tensors_complex_real_mismatch():
    t = same_outcome(lambda L: (leaf(L) * 2).backward(L.ones(3, dtype=L.complex64)))
    assert t[0] == "RuntimeError" and t[1].startswith("For complex Tensors, both grad_output")
    same_outcome(lambda L: (leaf(L) * (1 + 1j)).backward(L.ones(3)))


def test_grad_tensors_non_tensor_type_error():
    t = same_outcome(lambda L: L.autograd.backward([leaf(L) * 2], [1]))
    assert t == ("TypeError", "gradients can be either Tensors or None, but got int")
    same_outcome(lambda L: L.autograd.grad([leaf(L).sum()], leaf(L), [2.0]))


def test_grad_tensors_dtype_is_cast_to_output_dtype():
    def run(L):
        x = leaf(L)
        (x * 2).backward(L.ones(3, dtype=L.float64))
        return x.grad.tolist(), str(x.grad.dtype).split(".")[1]
    assert same_outcome(run) == ("ok", ([2.0, 2.0, 2.0], "float32"))


def test_grad_tensors_count_and_none_entries():
    def run(L):
        x = leaf(L)
        a, b = x * 2, (x * 3).sum()
        L.autograd.backward([a, b], [L.ones(3), None])
        return x.grad.tolist()
    assert same_outcome(run) == ("ok", [5.0, 5.0, 5.0])


def test_grad_tensors_single_tensor_for_single_output():
    def run(L):
        x = leaf(L)
        L.autograd.backward(x * 2, L.full((3,), 0.5))
        return x.grad.tolist()
    assert same_outcome(run) == ("ok", [1.0, 1.0, 1.0])


def test_none_grad_for_output_not_requiring_grad():
    def run(L):
        x = leaf(L)
        return values(L.autograd.grad([x.sum(), L.ones(2)], [x], [None, None], allow_unused=True))
    same_outcome(run)


# ---------------------------------------------------------------------------- inputs=
def test_backward_inputs_restricts_accumulation():
    def run(L):
        x = leaf(L)
        w = leaf(L, (3.0, 4.0, 5.0))
        (x * w).sum().backward(inputs=[w])
        a = (x.grad, w.grad.tolist())
        (x * w).sum().backward(inputs=x)
        return a, x.grad.tolist(), w.grad.tolist()
    t = same_outcome(run)
    assert t[1][0] == (None, [1.0, 2.0, 3.0])


def test_backward_inputs_non_leaf_retains_grad():
    def run(L):
        x = leaf(L)
        y = x * 2
        (y * y).sum().backward(inputs=[y])
        return y.grad.tolist(), x.grad, y.retains_grad, y.is_leaf
    assert same_outcome(run) == ("ok", ([4.0, 8.0, 12.0], None, True, False))


def test_backward_inputs_mixing_leaf_and_non_leaf():
    def run(L):
        x = leaf(L)
        y = x.exp()
        z = (y * x).sum()
        L.autograd.backward(z, inputs=[x, y])
        return values([x.grad, y.grad])
    same_outcome(run)


def test_backward_inputs_not_requiring_grad():
    t = same_outcome(lambda L: (leaf(L) * 2).sum().backward(inputs=[L.ones(3)]))
    assert t == ("RuntimeError", "can't retain_grad on Tensor that has requires_grad=False")


def test_inputs_must_be_tensors_or_edges():
    t = same_outcome(lambda L: (leaf(L) * 2).sum().backward(inputs=[1]))
    assert t == ("RuntimeError", "all inputs have to be Tensors or GradientEdges, but got int")
    same_outcome(lambda L: L.autograd.grad((leaf(L) * 2).sum(), [leaf(L), "a"]))


def test_empty_inputs_rejected():
    t = same_outcome(lambda L: leaf(L).sum().backward(inputs=[]))
    assert t == ("RuntimeError", "`inputs` argument to `backward()` cannot be empty.")
    t = same_outcome(lambda L: L.autograd.grad(leaf(L).sum(), []))
    assert t == ("RuntimeError", "`inputs` argument to `grad()` cannot be empty.")


def test_tensor_backward_inputs_keyword():
    def run(L):
        x = leaf(L)
        w = leaf(L)
        (x * w * 2).sum().backward(inputs=(w,))
        return x.grad, w.grad.tolist()
    assert same_outcome(run) == ("ok", (None, [2.0, 4.0, 6.0]))


def test_grad_does_not_touch_dot_grad():
    def run(L):
        x = leaf(L)
        y = x * 2
        y.retain_grad()
        (g,) = L.autograd.grad((y * y).sum(), x)
        return g.tolist(), x.grad, y.grad.tolist()       # retained grads are still filled in
    assert same_outcome(run) == ("ok", ([8.0, 16.0, 24.0], None, [4.0, 8.0, 12.0]))


def test_grad_inputs_not_requiring_grad():
    t = same_outcome(lambda L: L.autograd.grad((leaf(L) * 2).sum(), [L.ones(1)]))
    assert t == ("RuntimeError", "One of the differentiated Tensors does not require grad")


def test_grad_with_respect_to_non_leaf_and_leaf():
    def run(L):
        x = leaf(L)
        y = x.sin()
        z = (y * x).sum()
        return values(L.autograd.grad(z, [y, x]))
    same_outcome(run)


# ---------------------------------------------------------------------------- GradientEdge
def test_gradient_edge_of_non_leaf_and_leaf():
    def run(L):
        x = leaf(L)
        y = x.exp()
        z = (y * y).sum()
        edge = L.autograd.graph.get_gradient_edge(y)
        (gy,) = L.autograd.grad(z, edge, retain_graph=True)
        x_edge = L.autograd.graph.get_gradient_edge(x)
        (gx,) = L.autograd.grad(z, [x_edge])
        return (edge.node.name(), edge.output_nr, x_edge.node.name(), x_edge.output_nr,
                gy.shape == y.shape, gx.shape == x.shape)
    assert same_outcome(run) == ("ok", ("ExpBackward0", 0, "torch::autograd::AccumulateGrad", 0,
                                        True, True))
    x, xt = ndgrad.tensor([0.5, 1.0], requires_grad=True), torch.tensor([0.5, 1.0],
                                                                        requires_grad=True)
    gn = ndgrad.autograd.grad((x.exp() ** 2).sum(), ndgrad.autograd.graph.get_gradient_edge(x))
    gt = torch.autograd.grad((xt.exp() ** 2).sum(), torch.autograd.graph.get_gradient_edge(xt))
    np.testing.assert_allclose(gn[0].tolist(), gt[0].tolist(), rtol=1e-6)


def test_gradient_edge_of_tensor_without_grad():
    t = same_outcome(lambda L: L.autograd.graph.get_gradient_edge(L.ones(2)))
    assert t[0] == "RuntimeError"


def test_gradient_edge_as_backward_inputs():
    def run(L):
        x = leaf(L)
        w = leaf(L)
        (x * w).sum().backward(inputs=L.autograd.graph.get_gradient_edge(x))
        return x.grad.tolist(), w.grad
    assert same_outcome(run) == ("ok", ([1.0, 2.0, 3.0], None))


def test_gradient_edge_of_multi_output_node():
    def run(L):
        x = leaf(L, (1.0, 2.0, 3.0, 4.0))
        a, b = x.split(2)
        z = (a * 2).sum() + (b * 3).sum()
        e = L.autograd.graph.get_gradient_edge(b)
        (g,) = L.autograd.grad(z, e)
        return e.output_nr, e.node.name(), g.tolist()
    assert same_outcome(run) == ("ok", (1, "SplitBackward0", [3.0, 3.0]))


# ---------------------------------------------------------------------------- allow_unused
def test_unused_input_error_names_index():
    def run(L):
        x, y, z = leaf(L), leaf(L), leaf(L)
        return L.autograd.grad((x * 2).sum() + (z * 3).sum(), [x, y, z])
    t = same_outcome(run)
    assert t == ("RuntimeError", "The differentiated Tensor at index 1 appears to not have been "
                                 "used in the graph. Set allow_unused=True if this is the desired "
                                 "behavior.")


def test_allow_unused_gives_none():
    def run(L):
        x, y = leaf(L), leaf(L)
        return values(L.autograd.grad((x * 2).sum(), [x, y], allow_unused=True))
    assert same_outcome(run) == ("ok", [[2.0, 2.0, 2.0], None])


def test_unreachable_leaf_that_was_never_used():
    def run(L):
        x, y = leaf(L), leaf(L)
        _ = y * 1                        # y has an accumulator but is not on z's graph
        z = (x * 2).sum()
        return values(L.autograd.grad(z, [y], allow_unused=True))
    assert same_outcome(run) == ("ok", [None])


# ---------------------------------------------------------------------------- materialize_grads
def test_materialize_grads_gives_zeros():
    def run(L):
        x = leaf(L)
        y = L.tensor([[1.0, 2.0]], dtype=L.float64, requires_grad=True)
        res = L.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True)
        return (values(res), tuple(res[1].shape), str(res[1].dtype).split(".")[1],
                res[1].requires_grad)
    same_outcome(run)


def test_materialize_grads_with_allow_unused_false():
    def run(L):
        x = leaf(L)
        return L.autograd.grad((x * 2).sum(), [x], materialize_grads=True, allow_unused=False)
    t = same_outcome(run)
    assert t == ("ValueError", "Expected allow_unused to be True or not passed when "
                               "materialize_grads=True, but got: allow_unused=False.")


def test_materialize_grads_with_gradient_edge():
    def run(L):
        x, w = leaf(L), leaf(L)
        e = L.autograd.graph.get_gradient_edge(w)
        return L.autograd.grad((x * 3).sum(), [x, e], materialize_grads=True)
    t = same_outcome(run)
    assert t == ("RuntimeError", "materialize_grads cannot be used when the given input is a "
                                 "GradientEdge")


# ---------------------------------------------------------------------------- deprecated args
def test_grad_variables_is_deprecated_alias():
    def run(L):
        x = leaf(L)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            L.autograd.backward(x * 2, grad_variables=L.ones(3))
        return x.grad.tolist(), [(c.category.__name__, str(c.message)) for c in w]
    t = same_outcome(run)
    assert t[1][1] == [("FutureWarning", "`grad_variables` is deprecated. Use `grad_tensors` "
                                         "instead.")]


def test_grad_variables_and_grad_tensors_together():
    def run(L):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            L.autograd.backward(leaf(L) * 2, L.ones(3), grad_variables=L.ones(3))
    t = same_outcome(run)
    assert t[0] == "RuntimeError" and "both passed to `backward()`" in t[1]


def test_only_inputs_false_warns():
    def run(L):
        x = leaf(L)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            (g,) = L.autograd.grad((x * 2).sum(), x, only_inputs=False)
        return g.tolist(), [(c.category.__name__, str(c.message)[:40]) for c in w]
    t = same_outcome(run)
    assert t[1][1][0][0] == "FutureWarning"


# ---------------------------------------------------------------------------- retain_graph
def test_retain_graph_defaults_to_create_graph():
    def run(L):
        x = leaf(L)
        y = (x * x.exp()).sum()
        (g,) = L.autograd.grad(y, x, create_graph=True)
        (g2,) = L.autograd.grad(y, x)              # graph kept by create_graph=True
        third = outcome(lambda: L.autograd.grad(y, x))
        return values([g, g2]), g.requires_grad, g2.requires_grad, third[0]
    assert same_outcome(run)[1][3] == "RuntimeError"


def test_retain_graph_false_with_create_graph():
    def run(L):
        x = leaf(L)
        y = (x * x.exp()).sum()
        (g,) = L.autograd.grad(y, x, create_graph=True, retain_graph=False)
        return outcome(lambda: L.autograd.grad(y, x))[0], g.requires_grad
    assert same_outcome(run) == ("ok", ("RuntimeError", True))


# ---------------------------------------------------------------------------- is_grads_batched
def test_is_grads_batched_jacobian():
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (jac,) = L.autograd.grad(x * x, x, L.eye(3), is_grads_batched=True)
        return jac.tolist(), tuple(jac.shape)
    assert same_outcome(run) == ("ok", ([[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 6.0]],
                                        (3, 3)))


def test_is_grads_batched_several_outputs_and_inputs():
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = L.tensor([0.5, -1.0], requires_grad=True)
        u = L.tensor([1.0], requires_grad=True)
        y1, y2 = x * x, (w * 3).sum() * x
        g1, g2 = L.arange(6.0).reshape(2, 3), L.ones(2, 3)
        res = L.autograd.grad([y1, y2], [x, w, u], [g1, g2], is_grads_batched=True,
                              allow_unused=True, retain_graph=True)
        mat = L.autograd.grad([y1, y2], [x, w, u], [g1, g2], is_grads_batched=True,
                              materialize_grads=True)
        return values(res), [None if r is None else tuple(r.shape) for r in res], \
            [tuple(m.shape) for m in mat]
    same_outcome(run)


def test_is_grads_batched_with_create_graph():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        (g,) = L.autograd.grad(x ** 3, x, L.eye(2), is_grads_batched=True, create_graph=True)
        (h,) = L.autograd.grad(g.sum(), x)
        return values([g, h]), g.requires_grad
    same_outcome(run)


def test_is_grads_batched_shape_mismatch():
    def run(L):
        x = leaf(L)
        return L.autograd.grad(x * x, x, L.ones(2, 4), is_grads_batched=True)
    t = outcome(lambda: run(torch))
    n = outcome(lambda: run(ndgrad))
    assert t[0] == n[0] == "RuntimeError"
    head = "If `is_grads_batched=True`, we interpret the first dimension of each grad_output"
    assert t[1].startswith(head) and n[1].startswith(head)
    assert t[1].split("mismatch was detected")[0] == n[1].split("mismatch was detected")[0]
    assert n[1].endswith("consider using vmap.") and t[1].endswith("consider using vmap.")


# ---------------------------------------------------------------------------- Tensor.backward
def test_tensor_backward_arguments():
    def run(L):
        x = leaf(L)
        y = x * x
        y.backward(L.ones(3), retain_graph=True)
        y.backward(gradient=L.full((3,), 2.0))
        return x.grad.tolist()
    assert same_outcome(run) == ("ok", [6.0, 12.0, 18.0])


def test_backward_on_leaf_itself():
    def run(L):
        x = leaf(L)
        x.backward(L.ones(3))
        x.sum().backward()
        return x.grad.tolist()
    assert same_outcome(run) == ("ok", [2.0, 2.0, 2.0])


def test_backward_returns_none_and_grad_returns_tuple():
    def run(L):
        x = leaf(L)
        r1 = L.autograd.backward((x * 2).sum())
        r2 = L.autograd.grad((x * 2).sum(), x)
        return r1, type(r2).__name__, len(r2)
    assert same_outcome(run) == ("ok", (None, "tuple", 1))
