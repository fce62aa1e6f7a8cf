"""The training utilities recent PyTorch tutorials and repos lean on, in one small script:
nn.Buffer, LazyLinear, a weight_norm parametrization, activation checkpointing with
use_reentrant=False, cross entropy with label smoothing, SequentialLR (LinearLR warmup then
CosineAnnealingLR), get_total_norm + clip_grads_with_norm_, AdamW(foreach=True), the optimizer
step fused into backward with register_post_accumulate_grad_hook, Muon for the matrices with
AdamW for the rest, optimizer step hooks, a full backward pre-hook, and a KV-cache decode
with scaled_dot_product_attention(enable_gqa=True) and a causal_lower_right chunk mask checked
against the full forward."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.norm = nn.RMSNorm(d)
        self.fc1 = nn.utils.parametrizations.weight_norm(nn.Linear(d, 2 * d))
        self.fc2 = nn.Linear(2 * d, d)
        self.scale = nn.Buffer(torch.tensor(0.5))

    def forward(self, x):
        return x + self.scale * self.fc2(F.gelu(self.fc1(self.norm(x))))


class Net(nn.Module):
    def __init__(self, d=32, n_classes=5, use_ckpt=True):
        super().__init__()
        self.inp = nn.LazyLinear(d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
        self.head = nn.Linear(d, n_classes)
        self.use_ckpt = use_ckpt

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            h = checkpoint(blk, h, use_reentrant=False) if self.use_ckpt and self.training \
                else blk(h)
        return self.head(h)


x = torch.randn(64, 12)
y = (x[:, :5].argmax(1) + (x[:, 5] > 0).long()) % 5
model = Net()
model(x[:2])                                       # materialise the lazy layer
print("lazy in_features", model.inp.in_features, type(model.inp).__name__)
print("buffers", [n for n, _ in model.named_buffers()])
print("weight_norm params", sorted(n for n, _ in model.blocks[0].fc1.named_parameters()))

opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.05, foreach=True)
warmup = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5)
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=15, eta_min=1e-4)
sched = torch.optim.lr_scheduler.SequentialLR(opt, schedulers=[warmup, cosine], milestones=[5])
step_log = []
opt.register_step_post_hook(lambda o, args, kwargs: step_log.append(o.param_groups[0]["lr"]))
bwd_calls = []
model.head.register_full_backward_pre_hook(lambda m, go: bwd_calls.append(go[0].shape) or None)
for step in range(20):
    logits = model(x)
    loss = F.cross_entropy(logits, y, label_smoothing=0.1)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    total = torch.nn.utils.get_total_norm(grads, norm_type=2.0, foreach=True)
    torch.nn.utils.clip_grads_with_norm_(model.parameters(), max_norm=1.0, total_norm=total)
    clipped = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])
    opt.step()
    sched.step()
    if step % 5 == 0 or step == 19:
        acc = (logits.argmax(1) == y).float().mean().item()
        print(f"step {step:2d} loss {loss.item():.4f} acc {acc:.3f} norm {total.item():.4f} "
              f"clipped {clipped.item():.4f} lr {sched.get_last_lr()[0]:.6f}")
print("hook lrs", [round(v, 6) for v in step_log[:6]], len(step_log), "bwd pre-hook",
      len(bwd_calls), tuple(bwd_calls[0]))

# the checkpointed and plain forward give the same gradients
model.zero_grad()
F.cross_entropy(model(x), y).backward()
g_ckpt = [p.grad.clone() for p in model.parameters()]
model.use_ckpt = False
model.zero_grad()
F.cross_entropy(model(x), y).backward()
print("checkpoint grads agree:", all(torch.allclose(a, b, atol=1e-6) for a, b in
                                     zip(g_ckpt, (p.grad for p in model.parameters()))))

# optimizer step in backward: one optimizer per parameter, run by the accumulate-grad hook
torch.manual_seed(1)
model2 = Net(use_ckpt=False)
model2(x[:1])
optimizer_dict = {p: torch.optim.SGD([p], lr=0.05, momentum=0.9) for p in model2.parameters()}


def optimizer_hook(parameter) -> None:
    optimizer_dict[parameter].step()
    optimizer_dict[parameter].zero_grad()


for p in model2.parameters():
    p.register_post_accumulate_grad_hook(optimizer_hook)
for step in range(10):
    loss = F.cross_entropy(model2(x), y)
    loss.backward()
    if step % 3 == 0:
        print(f"in-backward step {step} loss {loss.item():.4f} grads cleared "
              f"{all(p.grad is None for p in model2.parameters())}")

# Muon on the hidden matrices, AdamW on embeddings/heads/gains (the modded-nanogpt recipe)
torch.manual_seed(2)
model3 = Net(d=16, use_ckpt=False)
model3(x[:1])
hidden_matrices = [p for n, p in model3.blocks.named_parameters() if p.ndim == 2]
others = [p for n, p in model3.named_parameters()
          if not (n.startswith("blocks") and p.ndim == 2)]
opts = [torch.optim.Muon(hidden_matrices, lr=0.02, momentum=0.95, weight_decay=0.0),
        torch.optim.AdamW(others, lr=3e-3, betas=(0.9, 0.95), weight_decay=0.0)]
print("muon params", len(hidden_matrices), "adamw params", len(others))
for step in range(10):
    loss = F.cross_entropy(model3(x), y)
    for o in opts:
        o.zero_grad()
    loss.backward()
    for o in opts:
        o.step()
    if step % 3 == 0 or step == 9:
        print(f"muon step {step} loss {loss.item():.4f}")


# KV cache decode with grouped-query attention: the incremental and full results agree
class GQA(nn.Module):
    def __init__(self, d=32, n_head=4, n_kv=2):
        super().__init__()
        self.n_head, self.n_kv, self.hd = n_head, n_kv, d // n_head
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * n_kv * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        q = self.q(x).view(B, T, self.n_head, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(B, T, 2, self.n_kv, self.hd).permute(2, 0, 3, 1, 4)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        if cache is not None and T > 1:         # a chunk after the cache: bottom-right triangle
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(
                T, k.shape[2]), enable_gqa=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None and T > 1,
                                               enable_gqa=True)
        return self.o(y.transpose(1, 2).reshape(B, T, -1)), (k, v)


torch.manual_seed(3)
attn = GQA().eval()
seq = torch.randn(2, 6, 32)
with torch.inference_mode():
    full, _ = attn(seq)
    out, cache = attn(seq[:, :2])
    steps = [out]
    for a, b in ((2, 4), (4, 5), (5, 6)):      # a chunk of two, then one token at a time
        o, cache = attn(seq[:, a:b], cache)
        steps.append(o)
    inc = torch.cat(steps, dim=1)
print("kv cache", tuple(cache[0].shape), "agrees:", torch.allclose(full, inc, atol=1e-6),
      f"{full.abs().sum().item():.4f}")
smoothed = F.cross_entropy(torch.zeros(1, 5), torch.tensor([2]), label_smoothing=0.2)
print("label smoothing check", f"{smoothed.item():.6f}", f"{math.log(5):.6f}")
