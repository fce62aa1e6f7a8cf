"""Module API: forward pre/post hooks, full backward hooks, named_modules/apply/init,
freezing, ModuleDict/ParameterList, buffers in state_dict, parameters_to_vector,
weight_norm/spectral_norm parametrizations, clip_grad_value_."""

import torch
import torch.nn as nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

torch.manual_seed(7)
log = []


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.ModuleDict({"a": nn.Linear(4, 6), "b": nn.Linear(6, 3)})
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(3)), nn.Parameter(torch.zeros(3))])
        self.register_buffer("count", torch.zeros((), dtype=torch.long))
        self.register_buffer("tmp", torch.ones(2), persistent=False)

    def forward(self, x):
        self.count += 1
        h = torch.tanh(self.body["a"](x))
        return self.body["b"](h) * self.scales[0] + self.scales[1]


net = Net()


def init(m):
    if isinstance(m, nn.Linear):
        nn.init.orthogonal_(m.weight)
        nn.init.constant_(m.bias, 0.01)


net.apply(init)
print([n for n, _ in net.named_modules()], list(net.state_dict().keys()))
h1 = net.body["a"].register_forward_pre_hook(lambda m, inp: log.append(("pre", inp[0].shape)))
h2 = net.body["b"].register_forward_hook(lambda m, inp, out: log.append(("fwd", out.shape)))
h3 = net.body["a"].register_full_backward_hook(
    lambda m, gin, gout: log.append(("bwd", gin[0] is None, round(gout[0].abs().sum().item(), 4)))
)
x = torch.randn(5, 4, requires_grad=True)
out = net(x)
out.pow(2).mean().backward()
print(log, net.count.item())
h1.remove()
h2.remove()
h3.remove()
vec = parameters_to_vector(net.parameters())
print(vec.shape, round(vec.sum().item(), 5))
vector_to_parameters(vec * 2, net.parameters())
print(round(net.body["a"].weight.sum().item(), 5))
for p in net.body["a"].parameters():
    p.requires_grad_(False)
print(sum(p.numel() for p in net.parameters() if p.requires_grad))
lin = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3))
sn = nn.utils.parametrizations.spectral_norm(nn.Linear(4, 3))
print(sorted(n for n, _ in lin.named_parameters()))
opt = torch.optim.RMSprop(
    list(lin.parameters()) + list(sn.parameters()) + list(net.parameters()),
    lr=1e-2,
    momentum=0.5,
    centered=True,
)
for i in range(4):
    opt.zero_grad()
    loss = (lin(x) - sn(x)).pow(2).sum() + net(x).sum()
    loss.backward()
    nn.utils.clip_grad_value_(lin.parameters(), 0.5)
    opt.step()
    print(i, round(loss.item(), 4))
sd = net.state_dict()
print(sd["count"].item(), "tmp" in sd)
net2 = Net()
missing = net2.load_state_dict({k: v for k, v in sd.items() if k != "count"}, strict=False)
print(missing.missing_keys, missing.unexpected_keys)
print(torch.linalg.matrix_norm(sn.weight, ord=2).item() < 1.01)
