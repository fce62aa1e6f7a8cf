"""The torch.func whirlwind tour and the hvp/vhp part of the Jacobians-and-Hessians tutorial:
hvp as jvp of grad, vhp through vjp, both checked against a full hessian and
torch.autograd.functional.hvp/vhp; jacrev and vmap with chunk_size; vmap over a model with
dropout (randomness='different' / 'same' / the default error); replace_all_batch_norm_modules_
so a BatchNorm model can be vmapped in training mode; in_dims/out_dims as pytrees."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import (functional_call, grad, hessian, jacfwd, jacrev, jvp,
                        replace_all_batch_norm_modules_, vjp, vmap)

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)


def f(x):
    return x.sin().sum()


x = torch.randn(5)
print("grad", torch.allclose(grad(f)(x), x.cos()))
print("grad of grad", torch.allclose(grad(grad(lambda x: x.sin()))(torch.tensor(1.0)),
                                     -torch.tensor(1.0).sin()))
batched = torch.randn(3, 5)
print("vmap grad", torch.allclose(vmap(grad(f))(batched), batched.cos()))
_, vjp_fn = vjp(torch.sin, x)
print("vjp", torch.allclose(vjp_fn(torch.ones(5))[0], x.cos()))
_, jvp_out = jvp(torch.sin, (x,), (torch.ones(5),))
print("jvp", torch.allclose(jvp_out, x.cos()))


def hvp(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


def vhp(f, x, v):
    return vjp(grad(f), x)[1](v)[0]


def g(x):
    return (x.sin() * x.cumsum(0)).sum() + (x @ x) ** 2 / 10


x = torch.randn(6)
tangent = torch.randn(6)
H = hessian(g)(x)
print("hvp == H @ v", torch.allclose(hvp(g, (x,), (tangent,)), H @ tangent))
print("vhp == v @ H", torch.allclose(vhp(g, x, tangent), tangent @ H))
print("autograd.functional.hvp", torch.allclose(
    torch.autograd.functional.hvp(g, x, tangent)[1], H @ tangent))
print("autograd.functional.vhp", torch.allclose(
    torch.autograd.functional.vhp(g, x, tangent)[1], tangent @ H))
print("H symmetric", torch.allclose(H, H.T), "diag", [round(v, 5) for v in H.diag().tolist()])
print("jacfwd(jacrev) == jacrev(jacrev)", torch.allclose(jacfwd(jacrev(g))(x),
                                                         jacrev(jacrev(g))(x)))
# hvp for a batch of tangents: vmap over the tangent only
V = torch.randn(4, 6)
print("batched hvp", torch.allclose(vmap(lambda v: hvp(g, (x,), (v,)))(V), V @ H))

# chunked Jacobian and vmap
W = torch.randn(20, 6)


def model_out(x):
    return torch.tanh(W @ x)


J = jacrev(model_out)(x)
print("jacrev chunk_size", all(torch.allclose(jacrev(model_out, chunk_size=c)(x), J)
                               for c in (1, 3, 7)))
xs = torch.randn(10, 6)
print("vmap chunk_size", torch.allclose(vmap(model_out, chunk_size=3)(xs), torch.tanh(xs @ W.T)))

# in_dims / out_dims as pytrees
out = vmap(lambda d: {"s": d["a"] + d["b"], "p": d["a"] * d["b"]},
           in_dims=({"a": 0, "b": None},), out_dims={"s": 0, "p": 1})(
    {"a": torch.arange(6.0).view(3, 2), "b": torch.tensor([10.0, 20.0])})
print("pytree dims", tuple(out["s"].shape), tuple(out["p"].shape), out["p"].tolist())

# randomness: dropout inside vmap
net = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.5), nn.Linear(8, 2))
params = {k: v.detach() for k, v in net.named_parameters()}
inp = torch.randn(6).expand(4, 6)
try:
    vmap(lambda x: functional_call(net, params, (x,)))(inp)
except RuntimeError as e:
    print("RuntimeError", str(e)[:70])
torch.manual_seed(3)
diff = vmap(lambda x: functional_call(net, params, (x,)), randomness="different")(inp)
torch.manual_seed(3)
same = vmap(lambda x: functional_call(net, params, (x,)), randomness="same")(inp)
print("different rows differ", not torch.allclose(diff[0], diff[1]),
      "same rows equal", torch.allclose(same[0], same[1]) and torch.allclose(same[0], same[3]))
print("draws", [round(v, 5) for v in diff[:, 0].tolist()],
      [round(v, 5) for v in same[:, 0].tolist()])
net.eval()
print("eval: no randomness needed", tuple(vmap(lambda x: functional_call(net, params, (x,)))(
    inp).shape))

# BatchNorm in training mode under vmap: replace_all_batch_norm_modules_ stops the
# running-statistics updates so each vmapped call uses its own batch statistics
bn_net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))
replace_all_batch_norm_modules_(bn_net)
bn = bn_net[1]
print("running stats removed", bn.running_mean, bn.running_var, bn.track_running_stats)
bparams = {k: v.detach() for k, v in bn_net.named_parameters()}
groups = torch.randn(5, 8, 3)
ensemble_out = vmap(lambda xb: functional_call(bn_net, bparams, (xb,)))(groups)
loop_out = torch.stack([bn_net(xb) for xb in groups])
print("vmapped batchnorm", tuple(ensemble_out.shape), torch.allclose(ensemble_out, loop_out))


def loss(p, xb, yb):
    return F.mse_loss(functional_call(bn_net, p, (xb,)), yb)


ys = torch.randn(5, 8, 1)
per_group = vmap(grad(loss), in_dims=(None, 0, 0))(bparams, groups, ys)
print("per-group grads", {k: tuple(v.shape) for k, v in per_group.items()})
print("bn weight grads", [round(v, 6) for v in per_group["1.weight"][:, 0].tolist()])
