"""Network pruning as in the torch.nn.utils.prune tutorial: a LeNet-style CNN, trained briefly,
then l1_unstructured / random_unstructured / ln_structured on single layers, iterative pruning
(PruningContainer history), global_unstructured across layers with a sparsity report, the
weight_orig parameters and weight_mask buffers, fine-tuning with masks in place, a custom
BasePruningMethod, prune.remove to make it permanent, and parameter/nonzero counting."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune

torch.manual_seed(2)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc1 = nn.Linear(8 * 2 * 2, 24)
        self.fc2 = nn.Linear(24, 12)
        self.fc3 = nn.Linear(12, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def count(model):
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return total, trainable


def sparsity(t):
    return round(100.0 * float(torch.sum(t == 0)) / float(t.nelement()), 2)


X = torch.randn(48, 1, 14, 14)
Y = (X[:, 0, :7].mean((1, 2)) > 0).long() + (X[:, 0, :, :7].mean((1, 2)) > 0).long()


def train(model, steps, lr=0.05):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        for xb, yb in zip(X.split(16), Y.split(16)):
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
    return loss.item()


def accuracy(model):
    with torch.no_grad():
        return (model(X).argmax(1) == Y).float().mean().item()


model = LeNet()
print(count(model), f"{train(model, 10, lr=0.01):.5f}", f"{accuracy(model):.4f}")

module = model.conv1
print(list(module.named_parameters())[0][0], list(module.named_buffers()))
prune.random_unstructured(module, name="weight", amount=0.3)
print([n for n, _ in module.named_parameters()], [n for n, _ in module.named_buffers()])
print(sparsity(module.weight), module.weight_mask.sum().item(), len(module._forward_pre_hooks))
prune.l1_unstructured(module, name="bias", amount=3)
print(module.bias_mask.tolist(), sparsity(module.bias))
prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
for hook in module._forward_pre_hooks.values():
    if hook._tensor_name == "weight":
        break
print(type(hook).__name__, [type(h).__name__ for h in hook], sparsity(module.weight))
print((module.weight.flatten(1).abs().sum(1) == 0).tolist())
print(prune.is_pruned(model), prune.is_pruned(model.fc3))

parameters_to_prune = (
    (model.conv2, "weight"),
    (model.fc1, "weight"),
    (model.fc2, "weight"),
    (model.fc3, "weight"),
)
prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.6)
for m, name in parameters_to_prune:
    print(type(m).__name__, sparsity(getattr(m, name)))
total_zero = sum(float(torch.sum(getattr(m, n) == 0)) for m, n in parameters_to_prune)
total = sum(getattr(m, n).nelement() for m, n in parameters_to_prune)
print("global", round(100.0 * total_zero / total, 2), f"{accuracy(model):.4f}")

# fine-tune: gradients flow to weight_orig, the mask keeps pruned entries at zero
before = model.fc1.weight_orig.detach().clone()
print(f"{train(model, 3, lr=0.005):.5f}", f"{accuracy(model):.4f}", sparsity(model.fc1.weight))
moved = (model.fc1.weight_orig.detach() != before)
print(moved.sum().item(), (moved & (model.fc1.weight_mask == 0)).sum().item())


class EveryOther(prune.BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0
        return mask


def every_other_unstructured(module, name):
    EveryOther.apply(module, name)
    return module


every_other_unstructured(model.fc3, "bias")
print(model.fc3.bias_mask.tolist(), model.fc3.bias.tolist() == (model.fc3.bias_orig *
                                                                 model.fc3.bias_mask).tolist())
prune.identity(model.fc2, "bias")
print(model.fc2.bias_mask.sum().item())

for m, name in parameters_to_prune + ((model.conv1, "weight"), (model.conv1, "bias"),
                                      (model.fc3, "bias"), (model.fc2, "bias")):
    prune.remove(m, name)
print(prune.is_pruned(model), sorted(model.state_dict().keys())[:4])
print(count(model), sum(int(torch.count_nonzero(p)) for p in model.parameters()))
print(f"{accuracy(model):.4f}", sparsity(model.fc1.weight), model.fc1.weight.requires_grad)
try:
    prune.remove(model.fc1, "weight")
except ValueError as e:
    print("ValueError", e)
