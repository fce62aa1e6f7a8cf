"""The forward-mode AD tutorial: dual_level / make_dual / unpack_dual, dual tensors through a
module (parameters swapped for duals by functional_call, and by hand with delattr/setattr), a
custom Function with a jvp staticmethod, torch.func.jvp of a loss, and the Jacobians /
Hessians tutorial (jacrev, jacfwd, hessian, jacfwd(jacrev), vmap over a batch, linearize,
grad with has_aux) on a small model's outputs with respect to its inputs."""
import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, hessian, jacfwd, jacrev, jvp, linearize, vmap

torch.manual_seed(0)
primal = torch.randn(10, 10)
tangent = torch.randn(10, 10)


def fn(x, y):
    return x ** 2 + y ** 2


# All forward AD computation must be performed in the context of
# a ``dual_level`` context. All dual tensors created in such a context
# will have their tangents destroyed upon exit. This is to ensure that
# if the output or intermediate results of this computation are reused
# in a future forward AD computation, their tangents (which are associated
# with this computation) won't be confused with tangents from the later
# computation.
with fwAD.dual_level():
    # To create a dual tensor we associate a tensor, which we call the
    # primal with another tensor of the same size, which we call the tangent.
    # If the layout of the tangent is different from that of the primal,
    # The values of the tangent are copied into a new tensor with the same
    # metadata as the primal. Otherwise, the tangent itself is used as-is.
    #
    # It is also important to note that the dual tensor created by
    # ``make_dual`` is a view of the primal.
    dual_input = fwAD.make_dual(primal, tangent)
    assert fwAD.unpack_dual(dual_input).tangent is tangent

    # To demonstrate the case where the copy of the tangent happens,
    # we pass in a tangent with a layout different from that of the primal
    dual_input_alt = fwAD.make_dual(primal, tangent.T)
    assert fwAD.unpack_dual(dual_input_alt).tangent is not tangent

    # Tensors that do not have an associated tangent are automatically
    # considered to have a zero-filled tangent of the same shape.
    plain_tensor = torch.randn(10, 10)
    dual_output = fn(dual_input, plain_tensor)

    # Unpacking the dual returns a ``namedtuple`` with ``primal`` and ``tangent``
    # as attributes
    jvp_ = fwAD.unpack_dual(dual_output).tangent
    print("unpack fields", fwAD.unpack_dual(dual_output)._fields)
    print("jvp == 2 x t", torch.allclose(jvp_, 2 * primal * tangent))
    print("alt tangent contiguous", fwAD.unpack_dual(dual_input_alt).tangent.is_contiguous(),
          torch.equal(fwAD.unpack_dual(dual_input_alt).tangent, tangent.T))
assert fwAD.unpack_dual(dual_output).tangent is None
print("outside the level", fwAD.unpack_dual(dual_output).tangent)

# Usage with Modules
model = nn.Linear(5, 5)
input = torch.randn(16, 5)

params = {name: p for name, p in model.named_parameters()}
tangents = {name: torch.rand_like(p) for name, p in params.items()}

with fwAD.dual_level():
    for name, p in params.items():
        delattr(model, name)
        setattr(model, name, fwAD.make_dual(p, tangents[name]))

    out = model(input)
    jvp_mod = fwAD.unpack_dual(out).tangent
print("module jvp", tuple(jvp_mod.shape), round(jvp_mod.sum().item(), 4))

# Using the functional Module API (also known as the stateless Module API)
model = nn.Linear(5, 5)
dual_params = {}
with fwAD.dual_level():
    for name, p in params.items():
        # Using the same ``tangents`` from the above section
        dual_params[name] = fwAD.make_dual(p, tangents[name])
    out = functional_call(model, dual_params, input)
    jvp2 = fwAD.unpack_dual(out).tangent

# Check our results
assert torch.allclose(jvp_mod, jvp2)
print("functional_call jvp matches", torch.allclose(jvp_mod, jvp2))


# Custom autograd Function
class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = torch.exp(foo)
        # Tensors stored in ``ctx`` can be used in the subsequent forward grad
        # computation.
        ctx.result = result
        return result

    @staticmethod
    def jvp(ctx, gI):
        gO = gI * ctx.result
        # If the tensor stored in`` ctx`` will not also be used in the backward pass,
        # one can manually free it using ``del``
        del ctx.result
        return gO


fn_apply = Fn.apply
primal = torch.randn(10, 10, dtype=torch.double, requires_grad=True)
tangent = torch.randn(10, 10)
with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    dual_output = fn_apply(dual_input)
    jvp_fn_out = fwAD.unpack_dual(dual_output).tangent
print("custom jvp", torch.allclose(jvp_fn_out, tangent * primal.exp()))

# It is important to use ``autograd.gradcheck`` to verify that your
# custom autograd Function computes the gradients correctly. By default,
# ``gradcheck`` only checks the backward-mode (reverse-mode) AD gradients. Specify
# ``check_forward_ad=True`` to also check forward grads. If you did not
# implement the backward formula for your function, you can also tell ``gradcheck``
# to skip the tests that require backward-mode AD by specifying
# ``check_backward_ad=False``, ``check_undefined_grad=False``, and
# ``check_batched_grad=False``.
print("gradcheck", torch.autograd.gradcheck(Fn.apply, (primal,), check_forward_ad=True,
                                            check_backward_ad=False, check_undefined_grad=False,
                                            check_batched_grad=False))

# functorch API: jvp of a model's loss in the direction of its parameters' tangents
model = nn.Linear(5, 5)
params = {k: v.detach() for k, v in model.named_parameters()}
target = torch.randn(16, 5)


def loss_of(p):
    return F.mse_loss(functional_call(model, p, (input,)), target)


loss, dloss = jvp(loss_of, (params,), (tangents,))
g = grad(loss_of)(params)
print(f"loss {loss.item():.6f} directional derivative {dloss.item():.6f}")
print("jvp == <grad, tangent>",
      torch.allclose(dloss, sum((g[k] * tangents[k]).sum() for k in g), atol=1e-6))

# --- Jacobians and Hessians of a model's outputs with respect to its inputs
torch.manual_seed(0)


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


D = 8
weight = torch.randn(D, D)
bias = torch.randn(D)
x = torch.randn(D)  # feature vector

jacobian = jacrev(predict, argnums=2)(weight, bias, x)
print("jacrev", tuple(jacobian.shape), [round(v, 4) for v in jacobian[0, :4].tolist()])
jacobian_f = jacfwd(predict, argnums=2)(weight, bias, x)
print("jacfwd == jacrev", torch.allclose(jacobian_f, jacobian, atol=1e-6))
ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)
print("w.r.t. weight and bias", tuple(ft_jac_weight.shape), tuple(ft_jac_bias.shape))

# batch jacobian: vmap over the inputs, or sum over the batch dim trick
batch_size = 4
xb = torch.randn(batch_size, D)
compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
batch_jacobian0 = compute_batch_jacobian(weight, bias, xb)


def predict_with_output_summed(weight, bias, x):
    return predict(weight, bias, x).sum(0)


batch_jacobian1 = jacrev(predict_with_output_summed, argnums=2)(weight, bias, xb).movedim(1, 0)
print("batch jacobian", tuple(batch_jacobian0.shape),
      torch.allclose(batch_jacobian0, batch_jacobian1, atol=1e-6))

hess_api = hessian(predict, argnums=2)(weight, bias, x)
hess_fwdrev = jacfwd(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
hess_revrev = jacrev(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
print("hessian", tuple(hess_api.shape), torch.allclose(hess_api, hess_fwdrev, atol=1e-6),
      torch.allclose(hess_revrev, hess_fwdrev, atol=1e-6))
print("hessian[0, 0, :3]", [round(v, 4) for v in hess_api[0, 0, :3].tolist()])
batch_hess = vmap(hessian(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, xb)
print("batch hessian", tuple(batch_hess.shape))

# linearize: evaluate once, reuse the jvp function for several tangents
out, jvp_fn = linearize(lambda v: predict(weight, bias, v), x)
tangent_e0 = torch.zeros(D)
tangent_e0[0] = 1.0
print("linearize col 0 matches jacobian", torch.allclose(jvp_fn(tangent_e0), jacobian[:, 0],
                                                          atol=1e-6))


# grad with has_aux: the loss and the predictions it was computed from
def loss_with_aux(weight, bias, x, y):
    pred = predict(weight, bias, x)
    return ((pred - y) ** 2).mean(), pred


y = torch.randn(batch_size, D)
(gw, gb), pred = grad(loss_with_aux, argnums=(0, 1), has_aux=True)(weight, bias, xb, y)
print("has_aux", tuple(gw.shape), tuple(gb.shape), tuple(pred.shape),
      round(gb.norm().item(), 5), pred.requires_grad)
