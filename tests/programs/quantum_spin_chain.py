"""Quantum mechanics homework in PyTorch: the 1-D Schrodinger equation by finite differences
(linalg.eigh of a tridiagonal Hamiltonian, normalization with trapezoid), Crank-Nicolson and
matrix_exp time evolution of a complex wave packet, a transverse-field Ising chain built with
kron (ground state, magnetization, entanglement entropy from the singular values of the
reshaped state), and a variational ansatz optimized through eigh-free expectation values."""

import math
import torch

torch.manual_seed(4)
torch.set_default_dtype(torch.float64)

# ------------------------------------------------------------- harmonic oscillator, FD
N, L = 200, 10.0
x = torch.linspace(-L / 2, L / 2, N)
dx = (x[1] - x[0]).item()
main = torch.full((N,), 1.0 / dx ** 2) + 0.5 * x ** 2
off = torch.full((N - 1,), -0.5 / dx ** 2)
H = torch.diag(main) + torch.diag(off, 1) + torch.diag(off, -1)
E, psi = torch.linalg.eigh(H)
print("lowest energies", E[:4])
psi0 = psi[:, 0] / torch.sqrt(torch.trapezoid(psi[:, 0] ** 2, x))
psi0 = psi0 * torch.sign(psi0[N // 2])
print("norm", torch.trapezoid(psi0 ** 2, x).item(),
      "<x^2>", torch.trapezoid(x ** 2 * psi0 ** 2, x).item())

# ------------------------------------------------------------- time evolution of a packet
k0, sigma = 2.0, 0.5
packet = torch.exp(-(x + 2) ** 2 / (4 * sigma ** 2)) * torch.exp(1j * k0 * x)
packet = packet / torch.sqrt(torch.trapezoid(packet.abs() ** 2, x))
Hc = H.to(torch.complex128)
dt = 0.05
eye = torch.eye(N, dtype=torch.complex128)
U_cn = torch.linalg.solve(eye + 0.5j * dt * Hc, eye - 0.5j * dt * Hc)
U_ex = torch.linalg.matrix_exp(-1j * dt * Hc)
a, b = packet.clone(), packet.clone()
for _ in range(40):
    a = U_cn @ a
    b = U_ex @ b
mean_x = lambda p: torch.trapezoid(x * p.abs() ** 2, x).item()
print("cn vs exact", (a - b).abs().max().item() < 1e-2, "norms",
      torch.trapezoid(a.abs() ** 2, x).item(), torch.trapezoid(b.abs() ** 2, x).item())
classical = -2 * math.cos(2.0) + k0 * math.sin(2.0)
print("<x>(t=2)", round(mean_x(b), 6), "classical", round(classical, 6))
print("energy conserved", torch.vdot(b, Hc @ b).real.item() * dx,
      torch.vdot(packet, Hc @ packet).real.item() * dx)

# ------------------------------------------------------------- transverse-field Ising chain
sx = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
sz = torch.tensor([[1.0, 0.0], [0.0, -1.0]])
id2 = torch.eye(2)


def op_at(op, site, n):
    out = torch.ones(1, 1)
    for s in range(n):
        out = torch.kron(out, op if s == site else id2)
    return out


def tfim(n, g):
    Hs = torch.zeros(2 ** n, 2 ** n)
    for i in range(n - 1):
        Hs -= op_at(sz, i, n) @ op_at(sz, i + 1, n)
    for i in range(n):
        Hs -= g * op_at(sx, i, n)
    return Hs


n = 6
for g in (0.5, 1.0, 2.0):
    Hs = tfim(n, g)
    w, v = torch.linalg.eigh(Hs)
    gs = v[:, 0]
    mx = sum(gs @ op_at(sx, i, n) @ gs for i in range(n)) / n
    M = gs.reshape(2 ** (n // 2), 2 ** (n // 2))
    s = torch.linalg.svdvals(M)
    p = s ** 2
    p = p[p > 1e-14]
    ent = -(p * p.log()).sum()
    print(f"g={g} E0/n {w[0].item() / n:.8f} gap {(w[1] - w[0]).item():.6f} "
          f"<sx> {mx.item():.6f} S {ent.item():.6f}")

# ------------------------------------------------------------- variational product state
theta = torch.full((n,), 0.3, requires_grad=True)
Hs = tfim(n, 1.0)
opt = torch.optim.Adam([theta], lr=0.1)
for _ in range(60):
    states = torch.stack([torch.cos(theta / 2), torch.sin(theta / 2)], 1)
    psi_v = states[0]
    for i in range(1, n):
        psi_v = torch.outer(psi_v, states[i]).reshape(-1)
    energy = psi_v @ Hs @ psi_v
    opt.zero_grad()
    energy.backward()
    opt.step()
print("product-state energy", energy.item(), "exact", torch.linalg.eigvalsh(Hs)[0].item())
print("angles", theta.detach())
