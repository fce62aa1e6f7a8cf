"""The torch.func model-ensembling tutorial: stack_module_state over several MLPs, a 'meta'
copy of one model as the stateless base, functional_call under vmap with different minibatches
(in_dims=0) and the same minibatch (in_dims=(0, 0, None)), checked against a Python loop."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap

torch.manual_seed(0)


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


device = "cpu"
num_models = 6
data = torch.randn(10, 32, 1, 28, 28, device=device)
targets = torch.randint(10, (6400,), device=device)
models = [SimpleMLP().to(device) for _ in range(num_models)]

minibatches = data[:num_models]
predictions_diff_minibatch_loop = [model(minibatch)
                                   for model, minibatch in zip(models, minibatches)]

minibatch = data[0]
predictions2 = [model(minibatch) for model in models]

params, buffers = stack_module_state(models)
print({k: tuple(v.shape) for k, v in params.items()})
print("buffers", buffers, "requires_grad", params["fc1.weight"].requires_grad)

# Construct a "stateless" version of one of the models. It is "stateless" in
# the sense that the parameters are meta Tensors and do not have storage.
base_model = copy.deepcopy(models[0])
base_model = base_model.to("meta")


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


print([p.size(0) for p in params.values()])  # show the leading 'num_models' dimension
# verify minibatch has leading dim of size 'num_models'
assert minibatches.shape == (num_models, 32, 1, 28, 28)

predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
print("vmap diff minibatch", tuple(predictions1_vmap.shape))
# verify the ``vmap`` predictions match the
assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop),
                      atol=1e-3, rtol=1e-5)

predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)
print("vmap same minibatch", tuple(predictions2_vmap.shape))
print("max |vmap - loop|",
      (predictions2_vmap - torch.stack(predictions2)).abs().max().item() < 1e-5)
print("logits[3, 0, :4]", [round(v, 5) for v in predictions2_vmap[3, 0, :4].tolist()])

# ensemble prediction: average the softmax, majority vote, agreement with each member
probs = predictions2_vmap.softmax(-1)
ensemble = probs.mean(0).argmax(-1)
votes = predictions2_vmap.argmax(-1)
print("ensemble classes", ensemble[:12].tolist())
print("agreement", [round(v, 4) for v in (votes == ensemble).float().mean(1).tolist()])
print("mode vote", torch.mode(votes, dim=0).values[:12].tolist())

# training the whole ensemble at once: the stacked params are leaves that require grad
opt = torch.optim.SGD(params.values(), lr=0.05)
x = data[:num_models, :16]
y = targets[: num_models * 16].view(num_models, 16)
for step in range(3):
    out = vmap(fmodel)(params, buffers, x)
    loss = F.cross_entropy(out.reshape(-1, 10), y.reshape(-1), reduction="none")
    loss = loss.view(num_models, 16).mean(1)
    opt.zero_grad()
    loss.sum().backward()
    opt.step()
    print(f"step {step} per-model loss", [round(v, 5) for v in loss.tolist()])
print("grad shapes", {k: tuple(v.grad.shape) for k, v in params.items()})

# models that differ in structure cannot be stacked
try:
    stack_module_state([nn.Linear(3, 2), nn.Linear(3, 4)])
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])

# an ensemble with BatchNorm in training mode: the stacked buffers are updated in place,
# each model's from its own minibatch
bn_models = [nn.Sequential(nn.Linear(8, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
             for _ in range(3)]
bn_params, bn_buffers = stack_module_state(bn_models)
bn_base = copy.deepcopy(bn_models[0]).to("meta")
bn_x = torch.randn(3, 10, 8)
bn_out = vmap(lambda p, b, x: functional_call(bn_base, (p, b), (x,)))(bn_params, bn_buffers,
                                                                      bn_x)
print("bn ensemble", tuple(bn_out.shape),
      [round(v, 5) for v in bn_buffers["1.running_mean"].sum(1).tolist()],
      [round(v, 5) for v in bn_buffers["1.running_var"].sum(1).tolist()],
      bn_buffers["1.num_batches_tracked"].tolist())
loop = torch.stack([m(xb) for m, xb in zip(bn_models, bn_x)])
print("matches the models run one by one", torch.allclose(bn_out, loop, atol=1e-5),
      torch.allclose(bn_buffers["1.running_mean"][2], bn_models[2][1].running_mean))
