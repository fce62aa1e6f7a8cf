"""Quantization-aware training written by hand, as in blog posts and course notebooks: a float
MLP is trained, then fine-tuned with fake-quantized weights (per-channel, symmetric int8) and
activations (per-tensor, affine uint8 with EMA min/max observers), compared with a
straight-through estimator written with round() and detach(), and an LSQ-style learned step."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

# two-moons-like data
n = 256
t = torch.rand(n) * 3.1416
a = torch.stack([t.cos(), t.sin()], 1)
b = torch.stack([1 - t.cos(), 0.5 - t.sin()], 1)
X = torch.cat([a, b]) + 0.1 * torch.randn(2 * n, 2)
y = torch.cat([torch.zeros(n), torch.ones(n)]).long()
perm = torch.randperm(2 * n)
X, y = X[perm], y[perm]


class MinMaxObserver(nn.Module):
    def __init__(self, momentum=0.1, qmin=0, qmax=255):
        super().__init__()
        self.momentum, self.qmin, self.qmax = momentum, qmin, qmax
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))

    @torch.no_grad()
    def forward(self, x):
        lo, hi = x.min(), x.max()
        if torch.isinf(self.min_val):
            self.min_val.copy_(lo)
            self.max_val.copy_(hi)
        else:
            self.min_val.mul_(1 - self.momentum).add_(self.momentum * lo)
            self.max_val.mul_(1 - self.momentum).add_(self.momentum * hi)

    def qparams(self):
        lo = torch.clamp(self.min_val, max=0.0)
        hi = torch.clamp(self.max_val, min=0.0)
        scale = (hi - lo) / float(self.qmax - self.qmin)
        scale = torch.clamp(scale, min=1e-8)
        zp = self.qmin - torch.round(lo / scale)
        return scale, zp.clamp(self.qmin, self.qmax).to(torch.int32)


class QuantLinear(nn.Linear):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.act_obs = MinMaxObserver()
        self.quantize = False

    def weight_fq(self):
        w = self.weight
        scale = w.detach().abs().amax(dim=1).clamp(min=1e-8) / 127.0
        zp = torch.zeros(w.shape[0], dtype=torch.int32)
        return torch.fake_quantize_per_channel_affine(w, scale, zp, 0, -128, 127)

    def forward(self, x):
        if not self.quantize:
            return super().forward(x)
        if self.training:
            self.act_obs(x)
        scale, zp = self.act_obs.qparams()
        xq = torch.fake_quantize_per_tensor_affine(x, scale.item(), int(zp.item()), 0, 255)
        return F.linear(xq, self.weight_fq(), self.bias)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = QuantLinear(2, 32)
        self.fc2 = QuantLinear(32, 32)
        self.fc3 = QuantLinear(32, 2)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    def set_quant(self, flag):
        for m in self.modules():
            if isinstance(m, QuantLinear):
                m.quantize = flag


def train(model, epochs, lr):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for _ in range(epochs):
        model.train()
        for i in range(0, 2 * n, 64):
            loss = F.cross_entropy(model(X[i:i + 64]), y[i:i + 64])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return loss.item()


def accuracy(model):
    model.eval()
    with torch.no_grad():
        return (model(X).argmax(1) == y).float().mean().item()


model = Net()
print("float train loss", round(train(model, 8, 0.05), 5), "acc", accuracy(model))
model.set_quant(True)
print("quantized (before QAT) acc", accuracy(model))
print("qat loss", round(train(model, 4, 0.01), 5), "acc", accuracy(model))
for name, m in model.named_modules():
    if isinstance(m, QuantLinear):
        s, z = m.act_obs.qparams()
        wq = m.weight_fq()
        levels = (wq / (m.weight.abs().amax(1, keepdim=True) / 127)).round().unique().numel()
        print(name, "act scale", round(s.item(), 6), "zp", z.item(), "weight levels", levels,
              "max err", (wq - m.weight).abs().max().item() <= s.item() + 1)

# the same fake quantization as a straight-through estimator written by hand
w = torch.randn(4, 6, requires_grad=True)
scale = w.detach().abs().amax(1, keepdim=True) / 7
q_hand = w + ((w / scale).round().clamp(-8, 7) * scale - w).detach()
zeros = torch.zeros(4, dtype=torch.int32)
q_lib = torch.fake_quantize_per_channel_affine(w, scale.squeeze(1), zeros, 0, -8, 7)
print("hand vs lib", (q_hand - q_lib).abs().max().item())
print("mask", (q_lib == q_hand).sum().item())
(q_hand ** 2).sum().backward()
g_hand = w.grad.clone()
w.grad = None
(q_lib ** 2).sum().backward()
print("ste grads equal", torch.allclose(g_hand, w.grad), q_lib.grad_fn.name())


# LSQ (Esser et al. 2020): the step size is a parameter, gradient through round via STE
def round_pass(x):
    return (x.round() - x).detach() + x


def grad_scale(x, s):
    return (x - x * s).detach() + x * s


class LSQLinear(nn.Linear):
    def __init__(self, i, o, bits=4):
        super().__init__(i, o)
        self.qn, self.qp = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        self.step = nn.Parameter(2 * self.weight.detach().abs().mean() / self.qp ** 0.5)

    def forward(self, x):
        g = 1.0 / (self.weight.numel() * self.qp) ** 0.5
        s = grad_scale(self.step, g)
        wq = round_pass((self.weight / s).clamp(self.qn, self.qp)) * s
        return F.linear(x, wq, self.bias)


torch.manual_seed(2)
torch.set_default_dtype(torch.float64)      # rounding thresholds: keep the step exact
lsq = nn.Sequential(LSQLinear(2, 16), nn.ReLU(), LSQLinear(16, 2))
X = X.double()
opt = torch.optim.Adam(lsq.parameters(), lr=1e-2)
for _ in range(30):
    loss = F.cross_entropy(lsq(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("lsq loss", round(loss.item(), 5), "steps", [round(m.step.item(), 5) for m in lsq
                                                   if isinstance(m, LSQLinear)])
