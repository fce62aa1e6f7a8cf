"""Time-series forecasting as in blog posts: min-max scaling, sliding windows with unfold,
a causal dilated TCN with the old torch.nn.utils.weight_norm API and F.pad, an LSTM with
proj_size, truncated BPTT with detached hidden state, and multi-step recursive forecasts."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import weight_norm

torch.manual_seed(0)
np.random.seed(0)
t = np.arange(200, dtype=np.float32)
series = (np.sin(t * 2 * math.pi / 25) + 0.3 * np.sin(t * 2 * math.pi / 7)
          + 0.05 * np.random.randn(200))
series = series.astype(np.float32)
lo, hi = series[:150].min(), series[:150].max()
scaled = torch.from_numpy((series - lo) / (hi - lo))
print(scaled.dtype, round(float(scaled.max()), 4), scaled.shape)
W = 20
windows = scaled.unfold(0, W + 1, 1)
X, Y = windows[:, :-1], windows[:, -1:]
print(windows.shape, windows.stride(), torch.equal(X[1, :-1], X[0, 1:]))
Xtr, Ytr, Xte, Yte = X[:130], Y[:130], X[130:], Y[130:]


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super().__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_in, n_out, k, dilation, dropout=0.1):
        super().__init__()
        pad = (k - 1) * dilation
        self.conv1 = weight_norm(nn.Conv1d(n_in, n_out, k, padding=pad, dilation=dilation))
        self.chomp1 = Chomp1d(pad)
        self.conv2 = weight_norm(nn.Conv1d(n_out, n_out, k, dilation=dilation))
        self.pad2 = pad
        self.drop = nn.Dropout(dropout)
        self.downsample = nn.Conv1d(n_in, n_out, 1) if n_in != n_out else None
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)

    def forward(self, x):
        out = self.drop(F.relu(self.chomp1(self.conv1(x))))
        out = self.drop(F.relu(self.conv2(F.pad(out, (self.pad2, 0)))))
        res = x if self.downsample is None else self.downsample(x)
        return F.relu(out + res)


class TCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(TemporalBlock(1, 8, 3, 1), TemporalBlock(8, 8, 3, 2),
                                 TemporalBlock(8, 8, 3, 4))
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc(self.net(x.unsqueeze(1))[:, :, -1])


tcn = TCN()
print(sorted(n for n, _ in tcn.net[0].conv1.named_parameters()))
opt = torch.optim.Adam(tcn.parameters(), lr=5e-3)
for epoch in range(6):
    tcn.train()
    perm = torch.randperm(130)
    for i in range(0, 130, 26):
        idx = perm[i:i + 26]
        opt.zero_grad()
        loss = F.mse_loss(tcn(Xtr[idx]), Ytr[idx])
        loss.backward()
        opt.step()
    tcn.eval()
    with torch.no_grad():
        val = F.mse_loss(tcn(Xte), Yte)
    print("tcn", epoch, f"{loss.item():.5f}", f"{val.item():.5f}")
g = tcn.net[0].conv1.weight_g
print(g.shape, round(g.abs().sum().item(), 4))
torch.nn.utils.remove_weight_norm(tcn.net[0].conv1)
print(sorted(n for n, _ in tcn.net[0].conv1.named_parameters()))


class LSTMForecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, 16, num_layers=2, batch_first=True, dropout=0.1, proj_size=4)
        self.head = nn.Linear(4, 1)

    def forward(self, x, state=None):
        out, state = self.lstm(x, state)
        return self.head(out), state


lstm = LSTMForecaster()
print([tuple(p.shape) for n, p in lstm.lstm.named_parameters() if n.endswith("_l0")])
opt = torch.optim.RMSprop(lstm.parameters(), lr=5e-3)
seq = scaled[:150].view(1, -1, 1).repeat(3, 1, 1) + 0.01 * torch.randn(3, 150, 1)
bptt = 25
for epoch in range(3):
    state = None
    total = 0.0
    for s in range(0, 149 - bptt, bptt):
        inp, tgt = seq[:, s:s + bptt], seq[:, s + 1:s + 1 + bptt]
        if state is not None:
            state = tuple(h.detach() for h in state)
        pred, state = lstm(inp, state)
        loss = F.mse_loss(pred, tgt)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(lstm.parameters(), 0.5)
        opt.step()
        total += loss.item()
    print("lstm", epoch, f"{total:.5f}", state[0].shape, state[1].shape)

lstm.eval()
with torch.no_grad():
    _, state = lstm(seq[:1, :150])
    last = seq[:1, -1:]
    preds = []
    for _ in range(10):
        p, state = lstm(last, state)
        preds.append(p.item())
        last = p
forecast = np.array(preds) * (hi - lo) + lo
print("forecast", np.round(forecast, 3).tolist())
print("mae", round(float(np.abs(forecast - series[150:160]).mean()), 4))
