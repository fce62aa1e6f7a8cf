"""A toy speech pipeline: synthesize "utterances" as sequences of tones, take torch.stft with a
Hann window, build a mel filterbank by hand, log-mel features with mean/var normalisation, a
WaveNet-ish stack of causal dilated Conv1d blocks with gated activations and residual/skip
connections, nn.CTCLoss training on the tone labels and greedy CTC decoding; an istft round
trip checks the transform."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
sr = 4000
n_fft, hop = 128, 32
freqs = [300.0, 700.0, 1100.0, 1500.0]      # token k (1..4) is a tone at freqs[k-1]


def synth(tokens, seg=384):
    t = torch.arange(seg) / sr
    parts = []
    for tok in tokens:
        env = torch.hann_window(seg, periodic=False)
        parts.append(env * torch.sin(2 * math.pi * freqs[tok - 1] * t))
        parts.append(torch.zeros(64))
    wave = torch.cat(parts)
    return wave + 0.02 * torch.randn_like(wave)


def hz_to_mel(f):
    return 2595.0 * math.log10(1.0 + f / 700.0)


def mel_filterbank(n_mels, n_fft, sr, fmin=0.0, fmax=None):
    fmax = fmax or sr / 2
    mels = torch.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2)
    hz = 700.0 * (10 ** (mels / 2595.0) - 1.0)
    bins = torch.linspace(0, sr / 2, n_fft // 2 + 1)
    fb = torch.zeros(n_mels, n_fft // 2 + 1)
    for m in range(1, n_mels + 1):
        lo, c, hi = hz[m - 1], hz[m], hz[m + 1]
        up = (bins - lo) / (c - lo)
        down = (hi - bins) / (hi - c)
        fb[m - 1] = torch.clamp(torch.minimum(up, down), min=0)
    return fb


window = torch.hann_window(n_fft)
fb = mel_filterbank(20, n_fft, sr)
print("filterbank", fb.shape, round(fb.sum().item(), 4), fb.argmax(dim=1)[:6].tolist())


def log_mel(wave):
    spec = torch.stft(wave, n_fft, hop_length=hop, win_length=n_fft, window=window,
                      center=True, pad_mode="reflect", normalized=False, onesided=True,
                      return_complex=True)
    power = spec.abs() ** 2
    mel = torch.matmul(fb, power)
    return torch.log(mel + 1e-6)


# istft round trip
w = synth([1, 3])
spec = torch.stft(w, n_fft, hop_length=hop, window=window, return_complex=True)
rec = torch.istft(spec, n_fft, hop_length=hop, window=window, length=w.shape[-1])
print("stft", spec.shape, spec.dtype, "roundtrip err < 1e-5:", (rec - w).abs().max().item() < 1e-5)
spec2 = torch.stft(w.unsqueeze(0), 64, hop_length=16, window=torch.hamming_window(64),
                   center=False, onesided=False, return_complex=True)
print("two-sided", spec2.shape, round(torch.view_as_real(spec2).abs().sum().item(), 2))


def make_batch(n):
    feats, targets, in_lens, tgt_lens = [], [], [], []
    for _ in range(n):
        L = int(torch.randint(2, 5, (1,)))
        toks = torch.randint(1, 5, (L,)).tolist()
        f = log_mel(synth(toks))
        feats.append(f.t())
        targets.append(torch.tensor(toks))
        in_lens.append(f.shape[1])
        tgt_lens.append(L)
    x = nn.utils.rnn.pad_sequence(feats, batch_first=True).transpose(1, 2)  # N, mel, T
    x = (x - x.mean(dim=(0, 2), keepdim=True)) / (x.std(dim=(0, 2), keepdim=True) + 1e-5)
    return x, torch.cat(targets), torch.tensor(in_lens), torch.tensor(tgt_lens)


class CausalConv1d(nn.Conv1d):
    def __init__(self, cin, cout, k, dilation=1):
        super().__init__(cin, cout, k, dilation=dilation)
        self.left = (k - 1) * dilation

    def forward(self, x):
        return super().forward(F.pad(x, (self.left, 0)))


class ResidualBlock(nn.Module):
    def __init__(self, ch, dilation):
        super().__init__()
        self.filt = CausalConv1d(ch, ch, 2, dilation)
        self.gate = CausalConv1d(ch, ch, 2, dilation)
        self.res = nn.Conv1d(ch, ch, 1)
        self.skip = nn.Conv1d(ch, ch, 1)

    def forward(self, x):
        h = torch.tanh(self.filt(x)) * torch.sigmoid(self.gate(x))
        return x + self.res(h), self.skip(h)


class TinyWaveNet(nn.Module):
    def __init__(self, n_in, ch, n_classes, dilations=(1, 2, 4, 8)):
        super().__init__()
        self.inp = nn.Conv1d(n_in, ch, 1)
        self.blocks = nn.ModuleList([ResidualBlock(ch, d) for d in dilations])
        self.out = nn.Sequential(nn.ReLU(), nn.Conv1d(ch, ch, 1), nn.ReLU(),
                                 nn.Conv1d(ch, n_classes, 1))

    def forward(self, x):
        x = self.inp(x)
        skips = 0
        for b in self.blocks:
            x, s = b(x)
            skips = skips + s
        return self.out(skips)


# causality: changing the future does not change the past
net = TinyWaveNet(20, 16, 5)
probe = torch.randn(1, 20, 30)
probe2 = probe.clone()
probe2[..., 20:] += 1.0
with torch.no_grad():
    same = torch.allclose(net(probe)[..., :20], net(probe2)[..., :20])
print("causal", same, "receptive field", 1 + sum(b.filt.left for b in net.blocks))

x, targets, in_lens, tgt_lens = make_batch(8)
print("batch", x.shape, targets.shape, in_lens.tolist(), tgt_lens.tolist())
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
opt = torch.optim.Adam(net.parameters(), lr=5e-3)
for step in range(25):
    log_probs = net(x).permute(2, 0, 1).log_softmax(2)   # T, N, C
    loss = ctc(log_probs, targets, in_lens, tgt_lens)
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(net.parameters(), 5.0)
    opt.step()
    if step % 6 == 0:
        print(f"step {step:2d} ctc {loss.item():.4f}")

# reductions and zero_infinity on an impossible alignment
with torch.no_grad():
    lp = net(x).permute(2, 0, 1).log_softmax(2)
for red in ["none", "sum", "mean"]:
    v = F.ctc_loss(lp, targets, in_lens, tgt_lens, reduction=red)
    print(red, [round(t, 3) for t in v.reshape(-1).tolist()])
short = torch.full((8,), 2, dtype=torch.long)
inf_loss = F.ctc_loss(lp, targets, short, tgt_lens, reduction="none")
zero_loss = F.ctc_loss(lp, targets, short, tgt_lens, reduction="none", zero_infinity=True)
print("impossible", inf_loss[:3].tolist(), zero_loss[:3].tolist())

# padded (N, S) targets, int32 lengths
padded = nn.utils.rnn.pad_sequence(torch.split(targets, tgt_lens.tolist()), batch_first=True)
v2 = F.ctc_loss(lp, padded, in_lens.int(), tgt_lens.int(), reduction="sum")
print("padded targets", padded.shape, round(v2.item(), 3))


def greedy_decode(log_probs, lengths, blank=0):
    best = log_probs.argmax(dim=-1).t()     # N, T
    out = []
    for seq, L in zip(best, lengths):
        seq = torch.unique_consecutive(seq[:L])
        out.append([int(s) for s in seq if s != blank])
    return out


decoded = greedy_decode(lp, in_lens)
truth = [t.tolist() for t in torch.split(targets, tgt_lens.tolist())]
print("decoded", decoded[:3])
print("truth  ", truth[:3])
print("exact matches", sum(d == t for d, t in zip(decoded, truth)))
