"""Deploying a model with TorchScript the way tutorials show: torch.jit.trace of a CNN
classifier and torch.jit.script of a module with data-dependent control flow (and what tracing
that module records: the example's branch), @torch.jit.export
and @torch.jit.ignore methods, scripted helper functions with type annotations, saving to a
file (torch.jit.save / ScriptModule.save) and loading it back (torch.jit.load with
map_location), freezing and optimize_for_inference, and checking that the deployed outputs equal
the eager ones on new batch sizes."""

import os
import tempfile
from typing import List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(9)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 3, padding=1, bias=False), nn.BatchNorm2d(6), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class Gate(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.steps = 3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.steps):
            if x.sum() > 0:
                x = torch.relu(self.lin(x))
            else:
                x = -self.lin(x)
        return x

    @torch.jit.export
    def scores(self, x: torch.Tensor) -> List[float]:
        out = self.forward(x)
        return [float(v) for v in out.sum(1)]

    @torch.jit.ignore
    def debug(self, x):
        return x.shape


@torch.jit.script
def topk_labels(logits: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    probs = F.softmax(logits, dim=-1)
    values, idx = torch.topk(probs, k, dim=-1)
    return values, idx


model = Classifier()
x = torch.randn(16, 1, 8, 8)
y = torch.randint(0, 4, (16,))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for _ in range(5):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print(f"{loss.item():.5f}")
model.eval()

example = torch.rand(1, 1, 8, 8)
traced = torch.jit.trace(model, example)
print(type(traced).__name__, isinstance(traced, torch.jit.ScriptModule), traced.training)
batch = torch.randn(5, 1, 8, 8)
with torch.no_grad():
    ref = model(batch)
    print(torch.allclose(traced(batch), ref, atol=1e-6), traced(batch).shape)

gate = Gate(4)
scripted = torch.jit.script(gate)
print(type(scripted).__name__, scripted.original_name)
for s in (1.0, -1.0):
    inp = torch.full((2, 4), s)
    print(torch.allclose(scripted(inp), gate(inp)), [round(v, 4) for v in scripted.scores(inp)])
print(gate.debug(torch.zeros(2, 4)))
# the tutorial's point: tracing records the branch the example took, scripting keeps the if
class SignGate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if x.mean() > 0:
            return torch.relu(self.lin(x))
        return self.lin(x) * x.abs().max().item()


sg = SignGate()
traced_sg, scripted_sg = torch.jit.trace(sg, torch.ones(2, 4)), torch.jit.script(sg)
for s in (1.0, -2.0):
    inp = torch.full((3, 4), s)
    with torch.no_grad():
        print(s, torch.allclose(traced_sg(inp), sg(inp)), torch.allclose(scripted_sg(inp),
                                                                         sg(inp)))
vals, idx = topk_labels(ref, 2)
print([[round(v, 4) for v in row] for row in vals.tolist()], idx.tolist())

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "classifier.pt")
    torch.jit.save(traced, path)
    scripted.save(os.path.join(d, "gate.pt"))
    print(sorted(os.listdir(d)))
    loaded = torch.jit.load(path, map_location="cpu")
    loaded_gate = torch.jit.load(os.path.join(d, "gate.pt"))
loaded.eval()
with torch.no_grad():
    out = loaded(batch)
print(torch.allclose(out, ref, atol=1e-6), out.argmax(1).tolist(), ref.argmax(1).tolist())
print(sorted(k for k in loaded.state_dict())[:3], len(list(loaded.parameters())))
inp = torch.randn(3, 4)
print(torch.allclose(loaded_gate(inp), gate(inp)), isinstance(loaded_gate, torch.jit.ScriptModule))

frozen = torch.jit.freeze(torch.jit.script(model).eval())
opt_model = torch.jit.optimize_for_inference(torch.jit.script(model).eval())
with torch.inference_mode():
    print(torch.allclose(frozen(batch), ref, atol=1e-5),
          torch.allclose(opt_model(batch), ref, atol=1e-5))
probs = F.softmax(out, dim=1)
print([round(v, 4) for v in probs.max(1).values.tolist()])
