"""LoRA fine-tuning the way peft-like snippets and blog posts write it: a base model is
pre-trained, frozen with requires_grad_(False), and adapted three ways: a LoRALinear wrapper
with nn.Parameter A/B (kaiming_uniform_ on A, zeros on B), module surgery with setattr over
named_modules, and torch.nn.utils.parametrize.register_parametrization with a low-rank delta;
then trainable parameters are counted, the adapters merged into the weights (and removed with
leave_parametrized=True), and the state_dict filtered down to the "lora_" keys."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize

torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.fc2 = nn.Linear(32, 32)
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        return self.head(F.relu(self.fc2(F.relu(self.fc1(x)))))


def make_task(n, shift):
    x = torch.randn(n, 10)
    w = torch.linspace(-1, 1, 30).reshape(10, 3) + shift
    return x, (x @ w).argmax(dim=1)


def train(model, x, y, steps, lr):
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


@torch.no_grad()
def accuracy(model, x, y):
    return (model(x).argmax(1) == y).float().mean().item()


def count_parameters(model):
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return f"trainable params: {trainable} || all params: {total} || " \
           f"trainable%: {100 * trainable / total:.4f}"


base = MLP()
xa, ya = make_task(256, 0.0)
print(f"pretrain loss {train(base, xa, ya, 60, 1e-2):.4f} acc {accuracy(base, xa, ya):.4f}")
xb, yb = make_task(256, torch.randn(10, 3) * 0.8)
print(f"new task acc before {accuracy(base, xb, yb):.4f}")
base_state = {k: v.clone() for k, v in base.state_dict().items()}


class LoRALinear(nn.Module):
    def __init__(self, base_layer: nn.Linear, r=4, lora_alpha=8, lora_dropout=0.0):
        super().__init__()
        self.base_layer = base_layer
        self.r, self.scaling = r, lora_alpha / r
        self.lora_A = nn.Parameter(torch.empty(r, base_layer.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base_layer.out_features, r))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.lora_dropout = nn.Dropout(lora_dropout) if lora_dropout > 0 else nn.Identity()
        self.merged = False

    def forward(self, x):
        result = self.base_layer(x)
        if self.merged:
            return result
        return result + (self.lora_dropout(x) @ self.lora_A.T @ self.lora_B.T) * self.scaling

    @torch.no_grad()
    def merge(self):
        self.base_layer.weight.data += (self.lora_B @ self.lora_A) * self.scaling
        self.merged = True


def inject_lora(model, target_modules=("fc1", "fc2"), r=4):
    for name, module in list(model.named_modules()):
        if name.split(".")[-1] in target_modules and isinstance(module, nn.Linear):
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, LoRALinear(module, r=r))
    return model


def mark_only_lora_as_trainable(model, bias="none"):
    for n, p in model.named_parameters():
        if "lora_" not in n:
            p.requires_grad = False
    if bias == "all":
        for n, p in model.named_parameters():
            if "bias" in n:
                p.requires_grad = True


model = MLP()
model.load_state_dict(base_state)
model.requires_grad_(False)
inject_lora(model)
mark_only_lora_as_trainable(model)
model.head.requires_grad_(True)
print(count_parameters(model))
print([n for n, p in model.named_parameters() if p.requires_grad])
print(f"lora start equals base: {torch.equal(model(xb), base(xb))}")
print(f"lora loss {train(model, xb, yb, 80, 1e-2):.4f} acc {accuracy(model, xb, yb):.4f}")
print("base weights untouched:", torch.equal(model.fc1.base_layer.weight, base_state["fc1.weight"]))
before = model(xb)
for m in model.modules():
    if isinstance(m, LoRALinear):
        m.merge()
print("merged matches:", torch.allclose(before, model(xb), atol=1e-5))
lora_sd = {k: v for k, v in model.state_dict().items() if "lora_" in k}
print("lora keys", sorted(lora_sd), [tuple(v.shape) for _, v in sorted(lora_sd.items())])


# the parametrize route: W' = W + B A * scale, registered on the weight itself
class LoRAParametrization(nn.Module):
    def __init__(self, features_in, features_out, rank=2, alpha=4):
        super().__init__()
        self.lora_A = nn.Parameter(torch.zeros((rank, features_out)))
        self.lora_B = nn.Parameter(torch.zeros((features_in, rank)))
        nn.init.normal_(self.lora_A, mean=0, std=1)
        self.scale = alpha / rank
        self.enabled = True

    def forward(self, original_weights):
        if self.enabled:
            return original_weights + torch.matmul(self.lora_B, self.lora_A).view(
                original_weights.shape) * self.scale
        return original_weights


def linear_layer_parameterization(layer, rank=2, lora_alpha=4):
    features_in, features_out = layer.weight.shape
    return LoRAParametrization(features_in, features_out, rank=rank, alpha=lora_alpha)


torch.manual_seed(1)
net = MLP()
net.load_state_dict(base_state)
for layer in (net.fc1, net.fc2):
    parametrize.register_parametrization(layer, "weight", linear_layer_parameterization(layer))
for name, param in net.named_parameters():
    if "lora" not in name:
        param.requires_grad = False
print(count_parameters(net))
print("parametrized:", parametrize.is_parametrized(net.fc1), parametrize.is_parametrized(net.head),
      type(net.fc1.parametrizations.weight).__name__)
print(sorted(k for k in net.state_dict() if "fc1" in k))
print(f"param lora loss {train(net, xb, yb, 80, 1e-2):.4f} acc {accuracy(net, xb, yb):.4f}")
orig = net.fc1.parametrizations.weight.original
print("original frozen and unchanged:", orig.requires_grad,
      torch.equal(orig, base_state["fc1.weight"]))


def enable_disable_lora(enabled=True):
    for layer in [net.fc1, net.fc2]:
        layer.parametrizations["weight"][0].enabled = enabled


enable_disable_lora(False)
print(f"disabled acc {accuracy(net, xb, yb):.4f} (base {accuracy(base, xb, yb):.4f})")
enable_disable_lora(True)
out_before = net(xb)
with parametrize.cached():
    cached_out = net(xb)
print("cached agrees:", torch.allclose(out_before, cached_out))
parametrize.remove_parametrizations(net.fc1, "weight", leave_parametrized=True)
parametrize.remove_parametrizations(net.fc2, "weight", leave_parametrized=True)
print("after removal:", parametrize.is_parametrized(net), torch.allclose(out_before, net(xb),
                                                                        atol=1e-5),
      sorted(net.state_dict())[:3], net.fc1.weight.requires_grad)
