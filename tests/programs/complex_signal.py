"""Complex tensors and FFTs with gradients: fitting a signal's spectrum, complex parameters,
Wirtinger gradients, stft/istft round trip, polar/angle, view_as_real, complex matmul."""

import math
import torch

torch.manual_seed(9)
t = torch.linspace(0, 1, 64, dtype=torch.float64)
signal = torch.sin(2 * math.pi * 5 * t) + 0.5 * torch.cos(2 * math.pi * 12 * t)
spec = torch.fft.rfft(signal)
print(spec.dtype, spec.shape, spec.abs().argmax().item(), round(spec.abs().max().item(), 6))
z = torch.randn(4, dtype=torch.complex128, requires_grad=True)
loss = (z * z.conj()).real.sum() + (z.abs() ** 3).sum()
loss.backward()
print(z.grad)
w = torch.zeros(33, dtype=torch.complex128, requires_grad=True)
opt = torch.optim.Adam([w], lr=0.05)
for _ in range(30):
    opt.zero_grad()
    rec = torch.fft.irfft(w, n=64)
    err = ((rec - signal) ** 2).mean()
    err.backward()
    opt.step()
print(round(err.item(), 8), w.grad.dtype)
a = torch.randn(3, 3, dtype=torch.complex64)
b = torch.randn(3, 2, dtype=torch.complex64)
print(
    torch.allclose(
        a @ b,
        torch.complex(a.real @ b.real - a.imag @ b.imag, a.real @ b.imag + a.imag @ b.real),
        atol=1e-5,
    )
)
r = torch.view_as_real(a)
print(r.shape, torch.view_as_complex(r).equal(a))
p = torch.polar(torch.tensor([2.0, 1.0]), torch.tensor([math.pi / 4, -math.pi / 2]))
print(p, p.angle(), torch.sgn(p), p.conj().imag)
win = torch.signal.windows.hann(16, sym=False, dtype=torch.float64)
S = torch.stft(signal, 16, hop_length=4, window=win, return_complex=True)
back = torch.istft(S, 16, hop_length=4, window=win, length=64)
print(S.shape, torch.allclose(back, signal, atol=1e-10))
x = torch.randn(8, 8, dtype=torch.float64, requires_grad=True)
F2 = torch.fft.fft2(x)
e = (F2.abs() ** 2).sum() / 64
e.backward()
print(round(e.item(), 8), torch.allclose(x.grad, 2 * x))
h = torch.fft.fftshift(torch.fft.fftfreq(8, d=0.5))
print(h, torch.fft.ifftshift(h))
u = torch.randn(5, dtype=torch.complex128, requires_grad=True)
torch.linalg.vector_norm(torch.fft.fft(u)).backward()
print(u.grad.abs().sum().item() > 0, u.is_complex())
