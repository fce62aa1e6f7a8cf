"""Normalised layers as people use them: an SN-GAN style discriminator with
torch.nn.utils.parametrizations.spectral_norm and a hinge loss, a weight-normalised MLP
(parametrizations.weight_norm, and the legacy torch.nn.utils.weight_norm with
remove_weight_norm), an orthogonal recurrent matrix via parametrizations.orthogonal, and the
plumbing around them: parametrize.cached(), state_dict keys, remove_parametrizations,
parameters counted before and after."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrizations, parametrize
from torch.nn.utils import remove_weight_norm, weight_norm

torch.manual_seed(21)
SN = parametrizations.spectral_norm


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            SN(nn.Conv2d(1, 8, 3, stride=2, padding=1)), nn.LeakyReLU(0.1),
            SN(nn.Conv2d(8, 16, 3, stride=2, padding=1)), nn.LeakyReLU(0.1),
            nn.Flatten(), SN(nn.Linear(16 * 2 * 2, 1)))

    def forward(self, x):
        return self.net(x)


class Generator(nn.Module):
    def __init__(self, nz=6):
        super().__init__()
        self.fc = nn.Linear(nz, 16 * 2 * 2)
        self.up = nn.Sequential(
            nn.ConvTranspose2d(16, 8, 4, 2, 1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.ConvTranspose2d(8, 1, 4, 2, 1), nn.Tanh())

    def forward(self, z):
        return self.up(self.fc(z).view(-1, 16, 2, 2))


D, G = Discriminator(), Generator()
print([k for k in D.state_dict().keys()][:4])
print("D params", sum(p.numel() for p in D.parameters()),
      parametrize.is_parametrized(D.net[0]), parametrize.is_parametrized(D.net[0], "bias"))

with torch.no_grad():
    for i in (0, 2):
        w = D.net[i].weight
        s = torch.linalg.matrix_norm(w.flatten(1), ord=2).item()
        print(f"layer {i} sigma after init (power iteration) {s:.4f}")

opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.0, 0.9))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.0, 0.9))
yy, xx = torch.meshgrid(torch.linspace(-1, 1, 8), torch.linspace(-1, 1, 8), indexing="ij")
for step in range(10):
    shift = torch.rand(8, 1, 1) - 0.5
    real = torch.tanh(3 * (xx - shift)).unsqueeze(1)
    z = torch.randn(8, 6)
    fake = G(z)
    d_loss = F.relu(1 - D(real)).mean() + F.relu(1 + D(fake.detach())).mean()
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = -D(fake).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    if step % 3 == 0:
        print(f"step {step} hinge d {d_loss.item():.4f} g {g_loss.item():.4f}")

D.eval()
with torch.no_grad():
    sig = torch.linalg.matrix_norm(D.net[5].weight, ord=2).item()
    print("eval sigma", round(sig, 4), "u shape", D.net[5].parametrizations.weight[0]._u.shape)
print("original", D.net[0].parametrizations.weight.original.shape)
parametrize.remove_parametrizations(D.net[0], "weight")
print("after remove", type(D.net[0].weight).__name__, list(D.net[0].state_dict().keys()))

# weight normalisation, new API
torch.manual_seed(3)
mlp = nn.Sequential(parametrizations.weight_norm(nn.Linear(4, 16)), nn.ReLU(),
                    parametrizations.weight_norm(nn.Linear(16, 1), dim=None))
print(sorted(mlp.state_dict().keys()))
g0 = mlp[0].parametrizations.weight.original0
print("g shape", g0.shape, "v shape", mlp[0].parametrizations.weight.original1.shape,
      "dim=None g", mlp[2].parametrizations.weight.original0.shape)
x = torch.randn(32, 4)
y = (x[:, :1] * x[:, 1:2]).sin()
opt = torch.optim.SGD(mlp.parameters(), lr=0.1, momentum=0.9)
for it in range(15):
    with parametrize.cached():
        loss = F.mse_loss(mlp(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 5 == 4:
        print(f"wn it {it} loss {loss.item():.5f} |w| row0 {mlp[0].weight[0].norm().item():.5f} "
              f"g0 {g0[0].item():.5f}")

# legacy weight_norm hooks
torch.manual_seed(3)
lin = weight_norm(nn.Linear(4, 3), name="weight", dim=0)
print("legacy", sorted(n for n, _ in lin.named_parameters()), lin.weight_g.shape)
out = lin(torch.ones(2, 4)).sum()
out.backward()
print("legacy grads", lin.weight_g.grad.view(-1).tolist()[:2], lin.weight_v.grad.shape)
w_before = lin.weight.detach().clone()
remove_weight_norm(lin)
print("removed", sorted(n for n, _ in lin.named_parameters()), torch.allclose(lin.weight, w_before))
conv_wn = weight_norm(nn.Conv1d(2, 3, 3), dim=1)
print("conv dim=1 g", conv_wn.weight_g.shape)

# orthogonal recurrent matrix
torch.manual_seed(4)
rnn_cell = nn.Linear(6, 6, bias=False)
parametrizations.orthogonal(rnn_cell, "weight")
W = rnn_cell.weight
print("orthogonal", torch.allclose(W @ W.T, torch.eye(6), atol=1e-5),
      round(torch.linalg.det(W).abs().item(), 5))
opt = torch.optim.Adam(rnn_cell.parameters(), lr=0.05)
seq = torch.randn(10, 3, 6)
target = torch.roll(seq, 1, dims=-1)
for it in range(12):
    h = seq[0]
    loss = 0
    for t in range(1, 10):
        h = torch.tanh(rnn_cell(h) + seq[t])
        loss = loss + F.mse_loss(h, target[t])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 4 == 3:
        W = rnn_cell.weight
        print(f"orth it {it} loss {loss.item():.5f} still orthogonal "
              f"{torch.allclose(W @ W.T, torch.eye(6), atol=1e-4)}")
wide = parametrizations.orthogonal(nn.Linear(3, 5))
print("tall", torch.allclose(wide.weight.T @ wide.weight, torch.eye(3), atol=1e-5),
      wide.parametrizations.weight.original.shape)
