"""Implicit neural representations and function-valued networks as in the SIREN, KAN and
hypernetwork repositories: a SIREN (sine layers with omega_0 and their special uniform init)
fitted to an 8x8 image with its gradient and Laplacian taken by autograd.grad, an efficient-KAN
layer (B-spline bases built with broadcasting comparisons, coefficient fitting with
torch.linalg.lstsq, SiLU base branch), a hypernetwork emitting the weights of a target MLP
run with torch.func.functional_call, and an ensemble of models evaluated with
torch.func.stack_module_state + torch.vmap."""
import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap

torch.manual_seed(0)


class SineLayer(nn.Module):
    def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30.0):
        super().__init__()
        self.omega_0, self.is_first, self.in_features = omega_0, is_first, in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features, 1 / self.in_features)
            else:
                bound = np.sqrt(6 / self.in_features) / self.omega_0
                self.linear.weight.uniform_(-bound, bound)

    def forward(self, input):
        return torch.sin(self.omega_0 * self.linear(input))


class Siren(nn.Module):
    def __init__(self, in_features=2, hidden=32, layers=2, out_features=1, first_omega_0=30.,
                 hidden_omega_0=30.):
        super().__init__()
        net = [SineLayer(in_features, hidden, is_first=True, omega_0=first_omega_0)]
        for _ in range(layers):
            net.append(SineLayer(hidden, hidden, omega_0=hidden_omega_0))
        final_linear = nn.Linear(hidden, out_features)
        with torch.no_grad():
            bound = np.sqrt(6 / hidden) / hidden_omega_0
            final_linear.weight.uniform_(-bound, bound)
        net.append(final_linear)
        self.net = nn.Sequential(*net)

    def forward(self, coords):
        coords = coords.clone().detach().requires_grad_(True)
        return self.net(coords), coords


def get_mgrid(sidelen, dim=2):
    tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
    mgrid = torch.stack(torch.meshgrid(*tensors, indexing="ij"), dim=-1)
    return mgrid.reshape(-1, dim)


def gradient(y, x, grad_outputs=None):
    if grad_outputs is None:
        grad_outputs = torch.ones_like(y)
    return torch.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]


def divergence(y, x):
    div = 0.
    for i in range(y.shape[-1]):
        div += torch.autograd.grad(y[..., i], x, torch.ones_like(y[..., i]),
                                   create_graph=True)[0][..., i:i + 1]
    return div


def laplace(y, x):
    return divergence(gradient(y, x), x)


coords = get_mgrid(8)
img = (torch.sin(3 * coords[:, :1]) * torch.cos(2 * coords[:, 1:])).float()
siren = Siren()
opt = torch.optim.Adam(lr=1e-3, params=siren.parameters())
for step in range(40):
    out, c = siren(coords)
    loss = ((out - img) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0 or step == 39:
        print(f"siren step {step:2d} loss {loss.item():.6f}")
out, c = siren(coords)
g = gradient(out, c)
lap = laplace(out, c)
print(f"siren grad norm {g.norm(dim=-1).mean().item():.4f} laplace {lap.abs().mean().item():.4f}",
      tuple(lap.shape))


class KANLinear(nn.Module):
    def __init__(self, in_features, out_features, grid_size=5, spline_order=3, scale_noise=0.1,
                 scale_base=1.0, scale_spline=1.0, grid_range=(-1, 1)):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.grid_size, self.spline_order = grid_size, spline_order
        h = (grid_range[1] - grid_range[0]) / grid_size
        grid = ((torch.arange(-spline_order, grid_size + spline_order + 1) * h + grid_range[0])
                .expand(in_features, -1).contiguous())
        self.register_buffer("grid", grid)
        self.base_weight = nn.Parameter(torch.Tensor(out_features, in_features))
        self.spline_weight = nn.Parameter(torch.Tensor(out_features, in_features,
                                                       grid_size + spline_order))
        self.scale_noise, self.scale_base, self.scale_spline = scale_noise, scale_base, scale_spline
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5) * self.scale_base)
        with torch.no_grad():
            noise = ((torch.rand(self.grid_size + 1, self.in_features, self.out_features) - 1 / 2)
                     * self.scale_noise / self.grid_size)
            self.spline_weight.data.copy_(self.scale_spline * self.curve2coeff(
                self.grid.T[self.spline_order: -self.spline_order], noise))

    def b_splines(self, x):
        assert x.dim() == 2 and x.size(1) == self.in_features
        grid = self.grid
        x = x.unsqueeze(-1)
        bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
        for k in range(1, self.spline_order + 1):
            bases = ((x - grid[:, : -(k + 1)]) / (grid[:, k:-1] - grid[:, : -(k + 1)])
                     * bases[:, :, :-1]) + ((grid[:, k + 1:] - x)
                                            / (grid[:, k + 1:] - grid[:, 1:(-k)]) * bases[:, :, 1:])
        assert bases.size() == (x.size(0), self.in_features, self.grid_size + self.spline_order)
        return bases.contiguous()

    def curve2coeff(self, x, y):
        A = self.b_splines(x).transpose(0, 1)
        B = y.transpose(0, 1)
        solution = torch.linalg.lstsq(A, B).solution
        result = solution.permute(2, 0, 1)
        return result.contiguous()

    def forward(self, x):
        original_shape = x.shape
        x = x.reshape(-1, self.in_features)
        base_output = F.linear(F.silu(x), self.base_weight)
        spline_output = F.linear(self.b_splines(x).view(x.size(0), -1),
                                 self.spline_weight.view(self.out_features, -1))
        output = base_output + spline_output
        return output.reshape(*original_shape[:-1], self.out_features)

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        l1_fake = self.spline_weight.abs().mean(-1)
        regularization_loss_activation = l1_fake.sum()
        p = l1_fake / regularization_loss_activation
        regularization_loss_entropy = -torch.sum(p * p.log())
        return (regularize_activation * regularization_loss_activation
                + regularize_entropy * regularization_loss_entropy)


torch.manual_seed(1)
kan = nn.Sequential(KANLinear(2, 4), KANLinear(4, 1))
xk = torch.rand(128, 2) * 2 - 1
yk = torch.exp(torch.sin(math.pi * xk[:, :1]) + xk[:, 1:] ** 2)
print("kan params", sum(p.numel() for p in kan.parameters()),
      "bases sum to 1:", torch.allclose(kan[0].b_splines(xk).sum(-1), torch.ones(128, 2)))
opt = torch.optim.Adam(kan.parameters(), lr=2e-2)
for step in range(40):
    loss = F.mse_loss(kan(xk), yk) + 1e-4 * sum(layer.regularization_loss() for layer in kan)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0 or step == 39:
        print(f"kan step {step:2d} loss {loss.item():.5f}")
# the efficient-kan examples finish with L-BFGS; one strong-Wolfe step (more amplify float32
# rounding of the lstsq initialisation into visibly different iterates on either library)
opt = torch.optim.LBFGS(kan.parameters(), lr=0.5, history_size=10, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    loss = F.mse_loss(kan(xk), yk)
    loss.backward()
    return loss


print(f"kan lbfgs loss {opt.step(closure).item():.5f} after {F.mse_loss(kan(xk), yk).item():.5f}")


class HyperNet(nn.Module):
    """Emits the parameters of a small target MLP from a task embedding."""

    def __init__(self, target: nn.Module, z_dim=4):
        super().__init__()
        self.shapes = {n: p.shape for n, p in target.named_parameters()}
        total = sum(math.prod(s) for s in self.shapes.values())
        self.body = nn.Sequential(nn.Linear(z_dim, 32), nn.ReLU(), nn.Linear(32, total))

    def forward(self, z):
        flat = self.body(z) * 0.3
        params, offset = {}, 0
        for n, s in self.shapes.items():
            k = math.prod(s)
            params[n] = flat[offset:offset + k].view(s)
            offset += k
        return params


torch.manual_seed(2)
target = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))
hyper = HyperNet(target)
task_z = torch.randn(3, 4)
amps = torch.tensor([0.5, 1.0, 1.5])
xs = torch.linspace(-2, 2, 16)[:, None]
opt = torch.optim.Adam(hyper.parameters(), lr=5e-3)
for step in range(60):
    loss = 0.
    for z, a in zip(task_z, amps):
        pred = functional_call(target, hyper(z), (xs,))
        loss = loss + F.mse_loss(pred, a * torch.sin(xs))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0 or step == 59:
        print(f"hyper step {step:2d} loss {loss.item():.5f}")
print("target params untouched:", all(p.grad is None for p in target.parameters()))

# ensembles with vmap: stack the states of a few models and run them at once
torch.manual_seed(3)
models = [nn.Sequential(nn.Linear(3, 16), nn.GELU(), nn.Linear(16, 2)) for _ in range(4)]
params, buffers = stack_module_state(models)
base_model = copy.deepcopy(models[0])  # the tutorial moves it to "meta"


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


xb = torch.randn(5, 3)
same_batch = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, xb)
loop = torch.stack([m(xb) for m in models])
print("vmap ensemble", tuple(same_batch.shape), torch.allclose(same_batch, loop, atol=1e-6))
minibatches = torch.randn(4, 5, 3)
diff_batch = vmap(fmodel)(params, buffers, minibatches)
print("per-model batches", tuple(diff_batch.shape),
      torch.allclose(diff_batch[2], models[2](minibatches[2]), atol=1e-6))
loss = diff_batch.pow(2).mean()
loss.backward()
print("stacked grads", tuple(params["0.weight"].grad.shape),
      f"{params['0.weight'].grad.abs().sum().item():.5f}")
