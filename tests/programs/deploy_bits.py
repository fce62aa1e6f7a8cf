"""Deployment-style boilerplate: device selection, torch.jit.script/trace of a model and
functions, saving/loading scripted modules, half/bfloat16 inference, channels_last, inference_mode,
deterministic flags, random state save/restore, named_parameters filtering."""

import io
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.use_deterministic_algorithms(True)
torch.set_float32_matmul_precision("high")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(device, torch.cuda.device_count(), torch.backends.mps.is_available(),
      torch.backends.cudnn.deterministic)
torch.manual_seed(11)


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        return self.fc(x.mean(dim=(2, 3)))


@torch.jit.script
def scaled_tanh(x: torch.Tensor, s: float) -> torch.Tensor:
    return torch.tanh(x) * s


model = Small().to(device)
x = torch.randn(2, 3, 8, 8, device=device)
model.eval()
traced = torch.jit.trace(model, x)
scripted = torch.jit.script(model)
with torch.no_grad():
    ref = model(x)
    print(torch.allclose(traced(x), ref), torch.allclose(scripted(x), ref))
print(scaled_tanh(torch.tensor([0.5, -1.0]), 2.0))
state = torch.get_rng_state()
a = torch.rand(3)
torch.set_rng_state(state)
print(torch.equal(a, torch.rand(3)))
with torch.inference_mode():
    y = model(x)
print(y.requires_grad, y.is_inference())
m16 = Small()
m16.load_state_dict(model.state_dict())
m16 = m16.to(torch.bfloat16).eval()
with torch.no_grad():
    yb = m16(x.to(torch.bfloat16))
print(yb.dtype, (yb.float() - ref).abs().max().item() < 0.1)
xc = x.to(memory_format=torch.channels_last)
print(xc.is_contiguous(memory_format=torch.channels_last), xc.stride())
with torch.no_grad():
    print(torch.allclose(model(xc), ref, atol=1e-6))
decay = [n for n, p in model.named_parameters() if p.ndim > 1]
no_decay = [n for n, p in model.named_parameters() if p.ndim <= 1]
print(decay, no_decay)
groups = [
    {"params": [p for n, p in model.named_parameters() if n in decay], "weight_decay": 0.1},
    {"params": [p for n, p in model.named_parameters() if n in no_decay], "weight_decay": 0.0},
]
opt = torch.optim.AdamW(groups, lr=1e-3)
print([len(g["params"]) for g in opt.param_groups], opt.param_groups[1]["weight_decay"])
buf = io.BytesIO()
torch.save(model.state_dict(), buf)
buf.seek(0)
fresh = torch.jit.script(Small())
fresh.load_state_dict(torch.load(buf))
fresh.eval()
with torch.no_grad():
    print(torch.allclose(fresh(x), ref))
frozen = torch.jit.freeze(fresh)
print(type(frozen).__name__, torch.jit.is_scripting(), isinstance(scripted, torch.jit.ScriptModule))
torch.use_deterministic_algorithms(False)  # leave the process as it was
torch.set_float32_matmul_precision("highest")
