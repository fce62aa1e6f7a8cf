"""The torch.func neural tangent kernel tutorial: a small CNN, jacrev of a functional_call
wrapper, vmap over examples, the full NTK ('full', 'trace', 'diagonal') by einsum of Jacobians,
and the NTK-vector-product method with vjp/jvp, checked to agree."""
import torch
import torch.nn as nn
from torch.func import functional_call, jacrev, jvp, vjp, vmap

torch.manual_seed(0)
device = "cpu"


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, (3, 3))
        self.conv2 = nn.Conv2d(8, 8, (3, 3))
        self.conv3 = nn.Conv2d(8, 8, (3, 3))
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = self.conv1(x)
        x = x.relu()
        x = self.conv2(x)
        x = x.relu()
        x = self.conv3(x)
        x = x.relu()
        x = x.mean((-1, -2))
        x = self.fc(x)
        return x


x_train = torch.randn(5, 3, 12, 12, device=device)
x_test = torch.randn(3, 3, 12, 12, device=device)
net = CNN().to(device)

# Detaching the parameters because we won't be calling Tensor.backward().
params = {k: v.detach() for k, v in net.named_parameters()}


def fnet_single(params, x):
    return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)


def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute="full"):
    # Compute J(x1)
    jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    jac1 = jac1.values()
    jac1 = [j.flatten(2) for j in jac1]

    # Compute J(x2)
    jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    jac2 = jac2.values()
    jac2 = [j.flatten(2) for j in jac2]

    # Compute J(x1) @ J(x2).T
    if compute == "full":
        einsum_expr = "Naf,Mbf->NMab"
    elif compute == "trace":
        einsum_expr = "Naf,Maf->NM"
    elif compute == "diagonal":
        einsum_expr = "Naf,Maf->NMa"
    else:
        raise AssertionError(compute)

    result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
    result = result.sum(0)
    return result


result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
print(result.shape)
print("full ntk [0, 0]", [[round(v, 4) for v in row] for row in result[0, 0].tolist()])

result_trace = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, "trace")
print(result_trace.shape)
print("trace ntk", [[round(v, 3) for v in row] for row in result_trace.tolist()])
diag = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, "diagonal")
print("diagonal matches full", torch.allclose(diag, torch.diagonal(result, dim1=-2, dim2=-1),
                                              rtol=1e-4, atol=1e-5))
print("trace matches full", torch.allclose(result_trace, diag.sum(-1), rtol=1e-4, atol=1e-5))


def empirical_ntk_ntk_vps(func, params, x1, x2, compute="full"):
    def get_ntk(x1, x2):
        def func_x1(params):
            return func(params, x1)

        def func_x2(params):
            return func(params, x2)

        output, vjp_fn = vjp(func_x1, params)

        def get_ntk_slice(vec):
            # This computes ``vec @ J(x2).T``
            # `vec` is some unit vector (a single slice of the Identity matrix)
            vjps = vjp_fn(vec)
            # This computes ``J(X1) @ vjps``
            _, jvps = jvp(func_x2, (params,), vjps)
            return jvps

        # Here's our identity matrix
        basis = torch.eye(output.numel(), dtype=output.dtype, device=output.device).view(
            output.numel(), -1)
        return vmap(get_ntk_slice)(basis)

    # ``get_ntk(x1, x2)`` computes the NTK for a single data point x1, x2
    # Since the x1, x2 inputs to ``empirical_ntk_ntk_vps`` are batched,
    # we actually wish to compute the NTK between every pair of data points
    # between {x1} and {x2}. That's what the ``vmaps`` here do.
    result = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)

    if compute == "full":
        return result
    if compute == "trace":
        return torch.einsum("NMKK->NM", result)
    raise AssertionError(compute)


result_from_jacobian_contraction = empirical_ntk_jacobian_contraction(fnet_single, params,
                                                                      x_test, x_train)
result_from_ntk_vps = empirical_ntk_ntk_vps(fnet_single, params, x_test, x_train)
print(result_from_ntk_vps.shape)
print("vps == contraction", torch.allclose(result_from_jacobian_contraction, result_from_ntk_vps,
                                           atol=1e-5))
print("vps trace", [[round(v, 3) for v in row]
                    for row in empirical_ntk_ntk_vps(fnet_single, params, x_test, x_train,
                                                     "trace").tolist()])

# kernel regression with the NTK: predict test outputs from train targets
y_train = torch.randn(5, 4)
K = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_train, "trace")
K_star = empirical_ntk_jacobian_contraction(fnet_single, params, x_test, x_train, "trace")
eig = torch.linalg.eigvalsh(K)
print("K symmetric", torch.allclose(K, K.T, atol=1e-4), "min eig > 0", bool(eig.min() > 0))
alpha = torch.linalg.solve(K + 1e-3 * torch.eye(5), y_train)
print("ntk regression", [[round(v, 3) for v in row] for row in (K_star @ alpha).tolist()])
