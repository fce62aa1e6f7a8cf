"""Signal processing as in audio/physics notebooks: windowed FFT spectra, fftshift/fftfreq,
band-pass filtering in the frequency domain, FIR filtering with conv1d, STFT/ISTFT round trip
with hann/hamming windows, framing with unfold, autocorrelation and a learnable filter."""

import math
import torch
import torch.nn.functional as F

torch.manual_seed(2)
fs, n = 100.0, 256
t = torch.arange(n) / fs
x = torch.sin(2 * math.pi * 7 * t) + 0.6 * torch.sin(2 * math.pi * 23 * t) + 0.2 * torch.randn(n)
win = torch.hann_window(n)
X = torch.fft.rfft(x * win)
freqs = torch.fft.rfftfreq(n, d=1 / fs)
mag = X.abs()
top = torch.topk(mag, 2).indices.sort().values
print("peaks Hz", freqs[top], freqs.shape, round(mag.max().item(), 4))
full = torch.fft.fftshift(torch.fft.fft(x))
fq = torch.fft.fftshift(torch.fft.fftfreq(n, 1 / fs))
print("shifted", fq[:3], fq[n // 2], full.abs()[n // 2].item() - torch.fft.fft(x)[0].abs().item())
print(
    "ifftshift",
    torch.fft.ifftshift(torch.arange(7)),
    torch.fft.fftshift(torch.arange(6).view(2, 3), dim=1),
)
band = ((freqs > 15) & (freqs < 30)).to(X.dtype)
y = torch.fft.irfft(torch.fft.rfft(x) * band, n=n)
print(
    "bandpass",
    y.dtype,
    round(y.pow(2).mean().item(), 6),
    round(torch.fft.rfft(y).abs().argmax().item() * fs / n, 3),
)
print(
    "norms",
    torch.fft.rfft(x, norm="ortho").abs().pow(2).sum().item() / 2 < x.pow(2).sum().item(),
    torch.allclose(
        torch.fft.irfft(torch.fft.rfft(x, norm="forward"), n=n, norm="forward"), x, atol=1e-5
    ),
)
print(
    "hfft",
    torch.fft.hfft(torch.tensor([1.0, 2.0, 3.0]) + 0j).tolist(),
    torch.fft.ihfft(torch.tensor([1.0, 2.0, 3.0, 4.0])),
)
img = torch.randn(8, 8)
print(
    "fft2",
    torch.allclose(torch.fft.ifft2(torch.fft.fft2(img)).real, img, atol=1e-5),
    torch.fft.rfft2(img).shape,
    torch.fft.fftn(img, s=(4, 4)).abs().sum().item() > 0,
    torch.fft.irfftn(torch.fft.rfftn(img), s=img.shape).sub(img).abs().max() < 1e-5,
)

taps = 21
m = torch.arange(taps) - (taps - 1) / 2
h = torch.where(
    m == 0, torch.tensor(2 * 10 / fs), torch.sin(2 * math.pi * 10 / fs * m) / (math.pi * m)
)
h = h * torch.hamming_window(taps, periodic=False)
lp = F.conv1d(x.view(1, 1, -1), h.flip(0).view(1, 1, -1), padding=taps // 2).view(-1)
print("fir", lp.shape, round(h.sum().item(), 5), round(lp[50:60].mean().item(), 6))
print(
    "windows",
    torch.blackman_window(5),
    torch.bartlett_window(5),
    torch.kaiser_window(5, beta=8.0, periodic=False),
)
frames = x.unfold(0, 32, 16)
print(
    "frames",
    frames.shape,
    frames[1, 0] == x[16],
    (frames * torch.hann_window(32)).pow(2).sum(1)[:3],
)

S = torch.stft(x, n_fft=64, hop_length=16, window=torch.hann_window(64), return_complex=True)
print("stft", S.shape, S.dtype, round(S.abs().max().item(), 4))
xr = torch.istft(S, n_fft=64, hop_length=16, window=torch.hann_window(64), length=n)
print("istft", torch.allclose(xr, x, atol=1e-5), xr.shape)
S2 = torch.stft(
    x.view(2, -1),
    n_fft=32,
    hop_length=8,
    win_length=24,
    window=torch.hamming_window(24),
    center=True,
    pad_mode="constant",
    normalized=True,
    onesided=True,
    return_complex=True,
)
print("stft2", S2.shape, round(S2.abs().mean().item(), 5))
spec_db = 20 * torch.log10(S.abs().clamp_min(1e-6))
print("spectrogram", spec_db.shape, round(spec_db.max().item(), 4), spec_db.argmax(0)[:6])

xc = x - x.mean()
ac = torch.fft.irfft(torch.fft.rfft(xc, n=2 * n).abs() ** 2)[:n]
ac = ac / ac[0]
print("autocorr", ac[:4], ac[1:40].argmax().item() + 1)
print(
    "conv via fft",
    torch.allclose(
        torch.fft.irfft(torch.fft.rfft(x[:16], n=31) * torch.fft.rfft(h[:16], n=31), n=31),
        F.conv1d(F.pad(x[:16].view(1, 1, -1), (15, 15)), h[:16].flip(0).view(1, 1, -1)).view(-1),
        atol=1e-5,
    ),
)

# learn an FIR filter that maps the noisy signal to the clean 7 Hz component
clean = torch.sin(2 * math.pi * 7 * t)
w = torch.zeros(1, 1, 15, requires_grad=True)
opt = torch.optim.Adam([w], lr=0.02)
for _ in range(80):
    out = F.conv1d(x.view(1, 1, -1), w, padding=7).view(-1)
    loss = F.mse_loss(out, clean) + 1e-3 * torch.fft.rfft(w.view(-1), n=64).abs().pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("learned", round(loss.item(), 5), w.detach().view(-1)[:4])
z = torch.randn(16, requires_grad=True)
spec = torch.stft(z, 8, hop_length=4, window=torch.hann_window(8), return_complex=True)
spec.abs().pow(2).sum().backward()
print("stft grad", z.grad[:4])
