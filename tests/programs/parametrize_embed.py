"""Reparametrized weights and embeddings: torch.nn.utils.parametrizations.weight_norm /
spectral_norm / orthogonal, a custom parametrization (symmetric matrix) with
register_parametrization and cached(), remove_parametrizations, and nn.Embedding with
padding_idx, max_norm and from_pretrained, EmbeddingBag with offsets and per-sample weights."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as P
from torch.nn.utils import parametrizations

torch.manual_seed(0)

lin = parametrizations.weight_norm(nn.Linear(5, 3), name="weight", dim=0)
print(sorted(n for n, _ in lin.named_parameters()))
print(lin.parametrizations.weight.original0.shape, lin.parametrizations.weight.original1.shape)
x = torch.randn(4, 5)
out = lin(x)
out.pow(2).sum().backward()
g = lin.parametrizations.weight.original0.grad
print([round(v, 5) for v in g.flatten().tolist()], P.is_parametrized(lin, "weight"))
print(torch.allclose(lin.weight.norm(dim=1, keepdim=True), lin.parametrizations.weight.original0))

conv = parametrizations.spectral_norm(nn.Conv2d(2, 4, 3), n_power_iterations=3)
y = conv(torch.randn(1, 2, 5, 5))
print(y.shape, round(torch.linalg.matrix_norm(conv.weight.flatten(1), ord=2).item(), 4))
conv.eval()
y2 = conv(torch.randn(1, 2, 5, 5))
print(round(y2.abs().mean().item(), 5))


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class MatrixExp(nn.Module):
    def forward(self, X):
        return torch.matrix_exp(X - X.T)


layer = nn.Linear(3, 3)
P.register_parametrization(layer, "weight", Symmetric())
print(torch.equal(layer.weight, layer.weight.T), type(layer).__name__,
      layer.parametrizations.weight.original.shape)
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    loss = (layer(torch.eye(3)) - torch.ones(3, 3)).pow(2).sum()
    loss.backward()
    opt.step()
print(round(loss.item(), 5), torch.equal(layer.weight, layer.weight.T))
with P.cached():
    a = layer.weight
    b = layer.weight
    print("cached same object", a is b)
P.register_parametrization(layer, "weight", MatrixExp())
W = layer.weight
print(len(layer.parametrizations.weight), torch.allclose(W @ W.T, torch.eye(3), atol=1e-5))
P.remove_parametrizations(layer, "weight", leave_parametrized=True)
print(type(layer).__name__, isinstance(layer.weight, nn.Parameter), P.is_parametrized(layer))

orth = parametrizations.orthogonal(nn.Linear(4, 4))
Q = orth.weight
print(torch.allclose(Q @ Q.T, torch.eye(4), atol=1e-5))
o2 = torch.optim.Adam(orth.parameters(), lr=0.05)
for _ in range(3):
    o2.zero_grad()
    (orth(torch.randn(6, 4)) ** 2).mean().backward()
    o2.step()
Q = orth.weight
print(torch.allclose(Q @ Q.T, torch.eye(4), atol=1e-5))

# embeddings
emb = nn.Embedding(10, 4, padding_idx=0)
print(emb.weight[0].tolist(), emb)
ids = torch.tensor([[0, 2, 3, 0], [4, 0, 5, 6]])
emb(ids).sum().backward()
print(emb.weight.grad[0].tolist(), emb.weight.grad[2].tolist(), emb.weight.grad[7].tolist())
mn = nn.Embedding(6, 3, max_norm=1.0)
before = mn.weight.norm(dim=1).clone()
out = mn(torch.tensor([1, 2, 2]))
after = mn.weight.norm(dim=1)
print([round(v, 4) for v in before.tolist()], [round(v, 4) for v in after.tolist()],
      [round(v, 4) for v in out.norm(dim=1).tolist()])
pre = torch.tensor([[1.0, 2.0], [3.0, 4.0], [0.0, 0.0]])
fp = nn.Embedding.from_pretrained(pre, freeze=True, padding_idx=2)
print(fp(torch.tensor([1, 2])).tolist(), fp.weight.requires_grad, fp.padding_idx)
print(F.embedding(torch.tensor([[0, 1]]), pre, max_norm=2.0, norm_type=1.0).tolist())

bag = nn.EmbeddingBag(10, 3, mode="mean")
flat = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
offsets = torch.tensor([0, 4])
print([round(v, 5) for v in bag(flat, offsets).flatten().tolist()])
bag_sum = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2)
psw = torch.rand(8)
r = bag_sum(flat, offsets, per_sample_weights=psw)
r.sum().backward()
print([round(v, 5) for v in r.flatten().tolist()], bag_sum.weight.grad[2].tolist())
bag_max = nn.EmbeddingBag.from_pretrained(torch.arange(20.0).view(10, 2), mode="max")
print(bag_max(torch.tensor([[1, 3], [7, 2]])).tolist())
