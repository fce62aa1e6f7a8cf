"""State-space and linear-recurrence sequence models as the minimal Mamba / Mamba-2 / RWKV
repositories write them: a selective scan (softplus dt, A = -exp(A_log), einsum discretisation,
a sequential loop and a log-space cumsum "segsum" parallel form), depthwise causal Conv1d,
the dt bias initialised through an inverse softplus (expm1), RWKV time-mixing with token shift
by nn.ZeroPad2d((0, 0, 1, -1)) and a numerically stable WKV recurrence, and causal linear
attention by cumsum; trained for a few steps on a copy task."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def segsum(x):
    """Stable segment sum: out[..., i, j] = sum(x[..., j+1:i+1]) below the diagonal, -inf above."""
    T = x.size(-1)
    x = x[..., None].repeat(*([1] * x.dim()), T)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=-1)
    x = x.masked_fill(~mask, 0)
    x_segsum = torch.cumsum(x, dim=-2)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=0)
    return x_segsum.masked_fill(~mask, -torch.inf)


class MambaBlock(nn.Module):
    def __init__(self, d_model=16, d_state=8, d_conv=4, expand=2, dt_min=0.001, dt_max=0.1,
                 dt_init_floor=1e-4):
        super().__init__()
        self.d_inner = expand * d_model
        self.dt_rank = math.ceil(d_model / 16)
        self.d_state = d_state
        self.in_proj = nn.Linear(d_model, self.d_inner * 2, bias=False)
        self.conv1d = nn.Conv1d(self.d_inner, self.d_inner, kernel_size=d_conv, bias=True,
                                groups=self.d_inner, padding=d_conv - 1)
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + d_state * 2, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True)
        dt_init_std = self.dt_rank ** -0.5
        nn.init.uniform_(self.dt_proj.weight, -dt_init_std, dt_init_std)
        dt = torch.exp(torch.rand(self.d_inner) * (math.log(dt_max) - math.log(dt_min))
                       + math.log(dt_min)).clamp(min=dt_init_floor)
        inv_dt = dt + torch.log(-torch.expm1(-dt))
        with torch.no_grad():
            self.dt_proj.bias.copy_(inv_dt)
        self.dt_proj.bias._no_reinit = True
        A = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(self.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.A_log._no_weight_decay = True
        self.D = nn.Parameter(torch.ones(self.d_inner))
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)

    def forward(self, x, parallel=False):
        b, l, d = x.shape  # noqa: E741
        x_and_res = self.in_proj(x)
        x, res = x_and_res.split(split_size=[self.d_inner, self.d_inner], dim=-1)
        x = x.transpose(1, 2)
        x = self.conv1d(x)[:, :, :l]
        x = x.transpose(1, 2)
        x = F.silu(x)
        y = self.ssm(x, parallel)
        y = y * F.silu(res)
        return self.out_proj(y)

    def ssm(self, x, parallel):
        A = -torch.exp(self.A_log.float())
        D = self.D.float()
        x_dbl = self.x_proj(x)
        delta, B, C = x_dbl.split(split_size=[self.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(self.dt_proj(delta))
        if parallel:
            return self.scan_parallel(x, delta, A, B, C, D)
        return self.selective_scan(x, delta, A, B, C, D)

    def selective_scan(self, u, delta, A, B, C, D):
        b, l, d_in = u.shape  # noqa: E741
        deltaA = torch.exp(torch.einsum("b l d, d n -> b l d n", delta, A))
        deltaB_u = torch.einsum("b l d, b l n, b l d -> b l d n", delta, B, u)
        x = torch.zeros((b, d_in, A.shape[1]))
        ys = []
        for i in range(l):
            x = deltaA[:, i] * x + deltaB_u[:, i]
            y = torch.einsum("b d n, b n -> b d", x, C[:, i, :])
            ys.append(y)
        y = torch.stack(ys, dim=1)
        return y + u * D

    def scan_parallel(self, u, delta, A, B, C, D):
        # log-space: h_t = sum_s exp(sum_{s<r<=t} delta_r A) delta_s B_s u_s
        dA = torch.einsum("bld,dn->bdnl", delta, A)
        L = torch.exp(segsum(dA))                                  # b d n t s
        dBu = torch.einsum("bld,bln,bld->bdnl", delta, B, u)
        h = torch.einsum("bdnts,bdns->bdnt", L, dBu)
        y = torch.einsum("bdnt,btn->btd", h, C)
        return y + u * D


class RWKVTimeMix(nn.Module):
    def __init__(self, n_embd=16):
        super().__init__()
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        with torch.no_grad():
            ratio = torch.arange(n_embd) / n_embd
            self.time_decay = nn.Parameter(-5 + 8 * ratio ** 0.7)
            self.time_first = nn.Parameter(torch.ones(n_embd) * math.log(0.3))
            self.time_mix_k = nn.Parameter(torch.pow(ratio, 0.5))
            self.time_mix_v = nn.Parameter(torch.pow(ratio, 0.5) + 0.1)
            self.time_mix_r = nn.Parameter(torch.pow(ratio, 0.25))
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.receptance = nn.Linear(n_embd, n_embd, bias=False)
        self.output = nn.Linear(n_embd, n_embd, bias=False)

    def wkv(self, w, u, k, v):
        B, T, C = k.shape
        aa = torch.zeros(B, C)
        bb = torch.zeros(B, C)
        pp = torch.full((B, C), -1e38)
        w = -torch.exp(w)
        outs = []
        for t in range(T):
            kk, vv = k[:, t], v[:, t]
            ww = u + kk
            p = torch.maximum(pp, ww)
            e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
            outs.append((e1 * aa + e2 * vv) / (e1 * bb + e2))
            ww = pp + w
            p = torch.maximum(ww, kk)
            e1, e2 = torch.exp(ww - p), torch.exp(kk - p)
            aa, bb, pp = e1 * aa + e2 * vv, e1 * bb + e2, p
        return torch.stack(outs, 1)

    def forward(self, x):
        xx = self.time_shift(x)
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xv = x * self.time_mix_v + xx * (1 - self.time_mix_v)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
        k, v, sr = self.key(xk), self.value(xv), torch.sigmoid(self.receptance(xr))
        return self.output(sr * self.wkv(self.time_decay, self.time_first, k, v))


def causal_linear_attention(q, k, v, eps=1e-6):
    q, k = F.elu(q) + 1, F.elu(k) + 1
    kv = torch.einsum("bnd,bne->bnde", k, v).cumsum(dim=1)
    z = 1 / (torch.einsum("bnd,bnd->bn", q, k.cumsum(dim=1)) + eps)
    return torch.einsum("bnd,bnde,bn->bne", q, kv, z)


m = MambaBlock()
x = torch.randn(2, 6, 16)
print("dt bias", f"{m.dt_proj.bias.min().item():.5f}", f"{m.dt_proj.bias.max().item():.5f}",
      "softplus round trip", torch.allclose(F.softplus(m.dt_proj.bias),
                                           torch.log1p(torch.exp(m.dt_proj.bias))))
ys, yp = m(x), m(x, parallel=True)
print("mamba", tuple(ys.shape), f"{ys.pow(2).mean().item():.6f}",
      "scan forms agree:", torch.allclose(ys, yp, atol=1e-5))
print("segsum", [[round(v, 3) if v != -math.inf else "-inf" for v in r]
                 for r in segsum(torch.tensor([1.0, 2.0, 3.0])).tolist()])
g1 = torch.autograd.grad(ys.sum(), m.A_log)[0]
g2 = torch.autograd.grad(m(x, parallel=True).sum(), m.A_log)[0]
print("A_log grads agree:", torch.allclose(g1, g2, atol=1e-5), f"{g1.abs().sum().item():.5f}")
print("no-decay flags", [n for n, p in m.named_parameters() if getattr(p, "_no_weight_decay",
                                                                         False)])

tm = RWKVTimeMix()
xs = torch.randn(2, 5, 16)
print("token shift", torch.equal(tm.time_shift(xs)[:, 1:], xs[:, :-1]),
      tm.time_shift(xs)[:, 0].abs().sum().item(), tuple(tm.time_shift(xs).shape))
out = tm(xs)
print("rwkv", tuple(out.shape), f"{out.pow(2).mean().item():.6f}")

q, k, v = torch.randn(3, 2, 5, 8).unbind(0)
la = causal_linear_attention(q, k, v)
qf, kf = F.elu(q) + 1, F.elu(k) + 1
att = torch.tril(qf @ kf.transpose(1, 2))
ref = (att @ v) / att.sum(-1, keepdim=True)
print("linear attention = masked form:", torch.allclose(la, ref, atol=1e-5))


class SeqModel(nn.Module):
    def __init__(self, vocab=8, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.mamba = MambaBlock(d)
        self.norm = nn.RMSNorm(d)
        self.rwkv = RWKVTimeMix(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        h = self.emb(idx)
        h = h + self.mamba(self.norm(h), parallel=True)
        h = h + self.rwkv(h)
        return self.head(h)


torch.manual_seed(1)
net = SeqModel()
decay = [p for n, p in net.named_parameters() if p.dim() >= 2 and "A_log" not in n]
no_decay = [p for n, p in net.named_parameters() if p.dim() < 2 or "A_log" in n]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                         {"params": no_decay, "weight_decay": 0.0}], lr=1e-2)
for step in range(30):
    seq = torch.randint(1, 8, (8, 4))
    inp = torch.cat([seq, torch.zeros(8, 4, dtype=torch.long)], 1)
    tgt = torch.cat([torch.full((8, 4), -100), seq], 1)
    logits = net(inp)
    loss = F.cross_entropy(logits.reshape(-1, 8), tgt.reshape(-1), ignore_index=-100)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
    opt.step()
    if step % 10 == 0 or step == 29:
        print(f"step {step:2d} loss {loss.item():.4f}")
