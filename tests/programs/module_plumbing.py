"""nn.Module plumbing people write: apply(init_fn) with nn.init, named_parameters filters,
freezing a backbone, ModuleDict/ParameterList/ParameterDict, load_state_dict(strict=False),
non-persistent buffers, extra_repr and print(model), deepcopy, parameter counting."""
import copy
import math

import torch
import torch.nn as nn

torch.manual_seed(0)


class Scale(nn.Module):
    def __init__(self, dim, init=1.0):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), init))
        self.register_buffer("pos", torch.arange(dim).float(), persistent=False)
        self.register_buffer("count", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.count += 1
        return x * self.gamma + 0 * self.pos

    def extra_repr(self):
        return f"dim={self.gamma.numel()}"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv1d(2, 4, 3, padding=1), nn.BatchNorm1d(4),
                                      nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten())
        self.heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "reg": nn.Linear(4, 1)})
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(1)) for _ in range(2)])
        self.extra = nn.ParameterDict({"bias": nn.Parameter(torch.zeros(3))})
        self.scale = Scale(3)

    def forward(self, x):
        h = self.backbone(x)
        return (self.scale(self.heads["cls"](h) * self.scales[0] + self.extra["bias"]),
                self.heads["reg"](h) * self.scales[1])


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight, gain=nn.init.calculate_gain("relu"))
        nn.init.zeros_(m.bias)
    elif isinstance(m, nn.Conv1d):
        nn.init.kaiming_uniform_(m.weight, a=math.sqrt(5))
        if m.bias is not None:
            fan_in, _ = nn.init._calculate_fan_in_and_fan_out(m.weight)
            bound = 1 / math.sqrt(fan_in)
            nn.init.uniform_(m.bias, -bound, bound)
    elif isinstance(m, nn.BatchNorm1d):
        nn.init.ones_(m.weight)
        nn.init.constant_(m.bias, 0.1)


model = Net()
model.apply(init_weights)
print(model)
print([n for n, _ in model.named_parameters()])
print([n for n, _ in model.named_buffers()])
print(list(model.state_dict().keys()))
print("params", sum(p.numel() for p in model.parameters()),
      sum(p.numel() for p in model.parameters() if p.requires_grad))
print([n for n, m in model.named_modules() if isinstance(m, (nn.Linear, nn.Conv1d))])
print([type(c).__name__ for c in model.children()])

for p in model.backbone.parameters():
    p.requires_grad = False
model.backbone.eval()
opt = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=0.01)
print("trainable", sum(p.numel() for p in model.parameters() if p.requires_grad),
      len(opt.param_groups[0]["params"]))
x = torch.randn(8, 2, 5)
y = torch.randint(0, 3, (8,))
before = model.backbone[0].weight.clone()
for step in range(3):
    cls, reg = model(x)
    loss = nn.functional.cross_entropy(cls, y) + reg.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 5), model.backbone[0].weight.grad is None,
          model.scale.count.item())
print("frozen unchanged", torch.equal(before, model.backbone[0].weight),
      model.backbone[1].running_mean.abs().sum().item(), model.backbone.training, model.training)

# partial loading
sd = model.state_dict()
sd.pop("heads.reg.weight")
sd["heads.new.weight"] = torch.zeros(2)
fresh = Net()
res = fresh.load_state_dict(sd, strict=False)
print(res.missing_keys, res.unexpected_keys)
try:
    fresh.load_state_dict({"heads.cls.weight": torch.zeros(2, 2)}, strict=False)
except RuntimeError as e:
    print("RuntimeError", str(e).splitlines()[0], "size mismatch" in str(e))
try:
    fresh.load_state_dict(sd)
except RuntimeError as e:
    print("strict", "Missing key(s)" in str(e), "Unexpected key(s)" in str(e))

twin = copy.deepcopy(model)
twin.heads["cls"].weight.data.fill_(0)
print(model.heads["cls"].weight.abs().sum().item() > 0, twin.scale.pos.tolist(),
      twin.scale.count.item())
model.requires_grad_(True)
model.zero_grad()
print([p.grad is None for p in model.parameters()][:4])
print(model.get_submodule("heads.cls"), model.get_parameter("scale.gamma").shape)
model.heads["aux"] = nn.Identity()
del model.heads["reg"]
print(list(model.heads.keys()), "cls" in model.heads, len(model.scales))
model.half()
print(model.scale.gamma.dtype, model.scale.count.dtype, model.scale.pos.dtype)
model.to(torch.float64)
print(model.heads["cls"].weight.dtype)
