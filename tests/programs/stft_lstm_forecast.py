"""Time series: sliding windows made with Tensor.unfold, an LSTM forecaster (multi-step, with
teacher forcing and gradient clipping), a small Transformer encoder forecaster with a causal
mask and sinusoidal positions, and an STFT-feature classifier of chirps vs tones (torch.stft
magnitude, log power, istft round trip)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(13)

# a noisy seasonal series
t = torch.arange(400, dtype=torch.float32)
series = torch.sin(2 * math.pi * t / 25) + 0.5 * torch.sin(2 * math.pi * t / 7) + 0.002 * t
series = series + 0.1 * torch.randn(400)
mu, sd = series[:300].mean(), series[:300].std()
z = (series - mu) / sd

lookback, horizon = 24, 6
windows = z.unfold(0, lookback + horizon, 3)            # (N, 30), step 3
print("windows", windows.shape, windows.stride())
Xw, Yw = windows[:, :lookback], windows[:, lookback:]
n_train = 80
Xtr, Ytr, Xte, Yte = Xw[:n_train], Yw[:n_train], Xw[n_train:], Yw[n_train:]


class Seq2SeqLSTM(nn.Module):
    def __init__(self, hidden=24):
        super().__init__()
        self.enc = nn.LSTM(1, hidden, num_layers=2, batch_first=True, dropout=0.1)
        self.dec = nn.LSTMCell(1, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x, y=None, tf_ratio=0.0):
        _, (h, c) = self.enc(x.unsqueeze(-1))
        hx, cx = h[-1], c[-1]
        inp = x[:, -1:]
        outs = []
        for k in range(horizon):
            hx, cx = self.dec(inp, (hx, cx))
            o = self.out(hx)
            outs.append(o)
            use_tf = y is not None and torch.rand(()) < tf_ratio
            inp = y[:, k:k + 1] if use_tf else o
        return torch.cat(outs, 1)


model = Seq2SeqLSTM()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
for epoch in range(6):
    model.train()
    perm = torch.randperm(n_train)
    tot = 0.0
    for i in range(0, n_train, 16):
        idx = perm[i:i + 16]
        pred = model(Xtr[idx], Ytr[idx], tf_ratio=0.5 * (1 - epoch / 6))
        loss = F.smooth_l1_loss(pred, Ytr[idx])
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tot += loss.item() * len(idx)
    model.eval()
    with torch.no_grad():
        val = F.mse_loss(model(Xte), Yte).item()
    sched.step(val)
    print(f"lstm epoch {epoch} train {tot / n_train:.5f} val {val:.5f} "
          f"lr {opt.param_groups[0]['lr']:.5f}")


class PositionalEncoding(nn.Module):
    def __init__(self, d, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(max_len, d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class TSTransformer(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.inp = nn.Linear(1, d)
        self.pos = PositionalEncoding(d)
        layer = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d * lookback, horizon)

    def forward(self, x):
        h = self.pos(self.inp(x.unsqueeze(-1)))
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        h = self.enc(h, mask=mask, is_causal=True)
        return self.head(h.flatten(1))


tf = TSTransformer()
opt = torch.optim.AdamW(tf.parameters(), lr=3e-3)
for epoch in range(5):
    for i in range(0, n_train, 20):
        loss = F.mse_loss(tf(Xtr[i:i + 20]), Ytr[i:i + 20])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        print(f"transformer epoch {epoch} val {F.mse_loss(tf(Xte), Yte).item():.5f}")

# STFT features: chirps vs pure tones
fs, N = 256, 256
tt = torch.arange(N) / fs


def make(kind, f0):
    if kind == 0:
        return torch.sin(2 * math.pi * f0 * tt)
    return torch.sin(2 * math.pi * (f0 * tt + 40 * tt ** 2))


labels = torch.randint(0, 2, (32,))
f0s = 20 + 40 * torch.rand(32)
sigs = torch.stack([make(int(k), float(f)) for k, f in zip(labels, f0s)])
sigs = sigs + 0.2 * torch.randn_like(sigs)
win = torch.hann_window(64)
S = torch.stft(sigs, n_fft=64, hop_length=16, window=win, return_complex=True)
print("stft", S.shape, S.dtype)
feat = torch.log1p(S.abs() ** 2)                       # (32, 33, frames)
recon = torch.istft(S, n_fft=64, hop_length=16, window=win, length=N)
print("istft error", (recon - sigs).abs().max().item() < 1e-4)
# the chirp's peak frequency moves: the slope of the argmax bin over frames
peak = feat.argmax(1).float()
slope = (peak[:, -3:].mean(1) - peak[:, :3].mean(1))
print("slope by class", slope[labels == 0].mean().item(), slope[labels == 1].mean().item())

clf = nn.Sequential(nn.Conv1d(33, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1),
                    nn.Flatten(), nn.Linear(16, 2))
opt = torch.optim.Adam(clf.parameters(), lr=1e-2)
for _ in range(20):
    loss = F.cross_entropy(clf(feat), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("stft classifier loss", round(loss.item(), 5),
      "acc", (clf(feat).argmax(1) == labels).float().mean().item())
