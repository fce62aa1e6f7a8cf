"""Weight initialisation schemes and flat-parameter utilities from research code: a custom
init_weights applied with model.apply (orthogonal_ with gain, trunc_normal_, kaiming_normal_
with fan_out, xavier_uniform_ with calculate_gain, zeros_/ones_/constant_ on biases and norms,
dirac_ and eye_), checks of the resulting statistics; parameters_to_vector /
vector_to_parameters for an evolution-strategies step and a backtracking line search;
clip_grad_norm_ with foreach and error_if_nonfinite, clip_grad_value_, get_total_norm."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, \
    vector_to_parameters

torch.manual_seed(10)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.ident = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.rnn = nn.GRU(16, 12, batch_first=True)
        self.fc1 = nn.Linear(12, 32)
        self.fc2 = nn.Linear(32, 32)
        self.out = nn.Linear(32, 3)
        self.emb = nn.Embedding(10, 16)

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        h = h + self.ident(h)
        seq = h.mean(2).transpose(1, 2)                     # (B, W, C)
        _, last = self.rnn(seq)
        z = torch.tanh(self.fc1(last[0]))
        z = F.leaky_relu(self.fc2(z), 0.2)
        return self.out(z)


def init_weights(m):
    if isinstance(m, nn.Conv2d) and m.bias is not None:
        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        nn.init.zeros_(m.bias)
    elif isinstance(m, nn.Conv2d):
        nn.init.dirac_(m.weight)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.ones_(m.weight)
        nn.init.constant_(m.bias, 0.0)
    elif isinstance(m, nn.GRU):
        for name, p in m.named_parameters():
            if "weight_ih" in name:
                nn.init.xavier_uniform_(p)
            elif "weight_hh" in name:
                for chunk in p.chunk(3, 0):
                    nn.init.orthogonal_(chunk)
            else:
                nn.init.zeros_(p)
    elif isinstance(m, nn.Linear):
        if m.out_features == 3:
            nn.init.orthogonal_(m.weight, gain=0.01)
        elif m.in_features == 12:
            nn.init.xavier_uniform_(m.weight, gain=nn.init.calculate_gain("tanh"))
        else:
            nn.init.kaiming_uniform_(m.weight, a=0.2, nonlinearity="leaky_relu")
        nn.init.constant_(m.bias, 0.01)
    elif isinstance(m, nn.Embedding):
        nn.init.trunc_normal_(m.weight, mean=0.0, std=0.02, a=-0.04, b=0.04)


model = Net()
model.apply(init_weights)
print([round(nn.init.calculate_gain(n, p), 5) for n, p in
       [("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("selu", None), ("conv2d", None)]])
w = model.rnn.weight_hh_l0[:12]
print(torch.allclose(w @ w.T, torch.eye(12), atol=1e-5),
      round(model.out.weight.norm().item(), 6))
fan_out = model.conv.weight.size(0) * 9
print(round(model.conv.weight.std().item(), 4), round(math.sqrt(2.0 / fan_out), 4))
print(model.ident.weight[3, 3, 1, 1].item(), model.ident.weight.sum().item())
print(model.emb.weight.abs().max().item() <= 0.04, round(model.emb.weight.std().item(), 4))
bound = nn.init.calculate_gain("tanh") * math.sqrt(6.0 / (12 + 32))
print(model.fc1.weight.abs().max().item() <= bound, round(bound, 5))
eye = nn.init.eye_(torch.empty(3, 5))
print(eye.sum().item(), eye[2, 2].item())
fan_in, fan_out = nn.init._calculate_fan_in_and_fan_out(model.conv.weight)
print(fan_in, fan_out)

x = torch.randn(8, 3, 6, 6)
y = torch.randint(0, 3, (8,))
flat = parameters_to_vector(model.parameters())
n_params = sum(p.numel() for p in model.parameters())
print(flat.shape, n_params, flat.requires_grad, round(flat.abs().sum().item(), 3))


def loss_at(vec):
    vector_to_parameters(vec, model.parameters())
    with torch.no_grad():
        return F.cross_entropy(model(x), y).item()


# a (1+lambda) evolution strategies step on the flat vector
base = flat.detach().clone()
f0 = loss_at(base)
sigma, lr = 0.02, 0.0005
noise = torch.randn(6, base.numel())
rewards = torch.tensor([-loss_at(base + sigma * eps) for eps in noise])
adv = (rewards - rewards.mean()) / (rewards.std() + 1e-8)
step = lr / (6 * sigma) * (noise.T @ adv)
f1 = loss_at(base + step)
print(f"{f0:.5f}", f"{f1:.5f}", [round(r, 4) for r in rewards.tolist()])

# gradient descent with a backtracking line search on the flat gradient
vector_to_parameters(base, model.parameters())
model.train()
for it in range(4):
    model.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    grads = parameters_to_vector([p.grad if p.grad is not None else torch.zeros_like(p)
                                  for p in model.parameters()])
    params = parameters_to_vector(model.parameters()).detach()
    t = 1.0
    while loss_at(params - t * grads) > loss.item() - 0.3 * t * grads.dot(grads).item():
        t *= 0.5
    vector_to_parameters(params - t * grads, model.parameters())
    print(it, f"{loss.item():.5f}", t, f"{grads.norm().item():.5f}")

model.zero_grad()
F.cross_entropy(model(x), y).backward()
norms = [p.grad.norm() for p in model.parameters() if p.grad is not None]
total = clip_grad_norm_(model.parameters(), max_norm=0.5, foreach=True)
print(f"{total.item():.5f}", f"{torch.stack(norms).norm().item():.5f}",
      len(norms), round(torch.cat([p.grad.flatten() for p in model.parameters()
                                   if p.grad is not None]).norm().item(), 5))
total_inf = clip_grad_norm_(model.parameters(), max_norm=10.0, norm_type=float("inf"))
grads = [p.grad for p in model.parameters() if p.grad is not None]
print(f"{total_inf.item():.6f}", round(max(g.abs().max().item() for g in grads), 6))
clip_grad_value_(model.parameters(), clip_value=0.01)
print(max(g.abs().max().item() for g in grads) <= 0.01)
tn = torch.nn.utils.get_total_norm(grads, norm_type=2.0)
print(f"{tn.item():.6f}")
model.out.bias.grad[0] = float("nan")
try:
    clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])
print(math.isnan(clip_grad_norm_(model.parameters(), 1.0).item()))
model.fc1.weight.grad = None
print(f"{clip_grad_norm_([model.fc1.weight], 1.0).item():.1f}")
