"""Pure-bfloat16 fine-tuning as in LLM scripts: model.to(torch.bfloat16), a small transformer
block, AdamW on bfloat16 parameters, a float32 master copy variant, loss in float32, and
inference with torch.inference_mode."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
V, D, T = 16, 32, 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.ln1 = nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, 4, batch_first=True)
        self.ln2 = nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 64), nn.GELU(), nn.Linear(64, D))
        self.out = nn.Linear(D, V)

    def forward(self, ids):
        x = self.emb(ids)
        h = self.ln1(x)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        x = x + self.ff(self.ln2(x))
        return self.out(x)


ids = torch.randint(0, V, (8, T + 1))
model = Block().to(torch.bfloat16)
print({p.dtype for p in model.parameters()})
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
for step in range(4):
    logits = model(ids[:, :-1])
    loss = F.cross_entropy(logits.float().reshape(-1, V), ids[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, logits.dtype, f"{loss.item():.3f}", model.out.weight.grad.dtype,
          f"{model.out.weight.grad.float().norm().item():.3f}")
sd = opt.state_dict()["state"][0]
print(sd["exp_avg"].dtype, sd["exp_avg_sq"].dtype, sd["step"].dtype)

# float32 master weights updated from bfloat16 gradients
torch.manual_seed(0)
master = Block()
work = Block().to(torch.bfloat16)
opt = torch.optim.SGD(master.parameters(), lr=0.1, momentum=0.9)
for step in range(4):
    with torch.no_grad():
        for pw, pm in zip(work.parameters(), master.parameters()):
            pw.copy_(pm)
    loss = F.cross_entropy(work(ids[:, :-1]).float().reshape(-1, V), ids[:, 1:].reshape(-1))
    work.zero_grad()
    loss.backward()
    for pw, pm in zip(work.parameters(), master.parameters()):
        pm.grad = pw.grad.float()
    opt.step()
    print("master", step, f"{loss.item():.3f}")

with torch.inference_mode():
    out = model(ids[:2, :-1])
    probs = out.float().softmax(-1)
    print(out.dtype, out.requires_grad, torch.is_inference(out), probs.argmax(-1).tolist())
x = torch.randn(4, D, dtype=torch.bfloat16)
print(F.layer_norm(x, (D,)).dtype, F.gelu(x).dtype, (x @ x.T).dtype, x.float().sum().dtype,
      torch.softmax(x, -1).dtype, F.cross_entropy(x, torch.zeros(4, dtype=torch.long)).dtype)
