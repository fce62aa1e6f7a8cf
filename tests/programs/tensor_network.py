"""Tensor networks as in quantum many-body tutorials: a random matrix product state built by
successive SVDs with truncation, norms and overlaps by einsum contractions, the transverse-field
Ising Hamiltonian as a dense operator (kron) and as an MPO, energy by tensordot contractions,
a variational ground state by gradient descent on MPS tensors, entanglement entropy from the
Schmidt spectrum, and a tree tensor contraction with einsum path forms."""

import torch

torch.manual_seed(4)
torch.set_default_dtype(torch.float64)

L, d, chi = 6, 2, 4
psi = torch.randn([d] * L)
psi = psi / psi.norm()


def to_mps(state, chi):
    tensors = []
    rest = state.reshape(1, -1)
    for _ in range(L - 1):
        left = rest.shape[0]
        rest = rest.reshape(left * d, -1)
        U, S, Vh = torch.linalg.svd(rest, full_matrices=False)
        keep = min(chi, S.numel())
        tensors.append(U[:, :keep].reshape(left, d, keep))
        rest = torch.diag(S[:keep]) @ Vh[:keep]
    tensors.append(rest.reshape(rest.shape[0], d, 1))
    return tensors


def contract(mps):
    out = mps[0]
    for A in mps[1:]:
        out = torch.tensordot(out, A, dims=([out.dim() - 1], [0]))
    return out.squeeze(0).squeeze(-1)


def overlap(a, b):
    E = torch.ones(1, 1)
    for A, B in zip(a, b):
        E = torch.einsum("ab,asc,bsd->cd", E, A.conj(), B)
    return E.squeeze()


exact = to_mps(psi, chi=16)
trunc = to_mps(psi, chi=chi)
print("bond dims", [tuple(A.shape) for A in trunc])
print("exact recon", torch.allclose(contract(exact), psi), round(overlap(exact, exact).item(), 10))
fid = overlap(trunc, exact) ** 2 / overlap(trunc, trunc)
print("truncated fidelity", round(fid.item(), 8), round((contract(trunc) - psi).norm().item(), 8))

# transverse-field Ising H = -J sum Z_i Z_{i+1} - h sum X_i
X = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
Z = torch.tensor([[1.0, 0.0], [0.0, -1.0]])
I2 = torch.eye(2)
J, h = 1.0, 0.8


def site_op(op, i):
    out = torch.ones(1, 1)
    for j in range(L):
        out = torch.kron(out, op if j == i else I2)
    return out


H = sum(-J * site_op(Z, i) @ site_op(Z, i + 1) for i in range(L - 1)) + sum(
    -h * site_op(X, i) for i in range(L))
evals, evecs = torch.linalg.eigh(H)
print("exact", evals[:3], torch.allclose(H, H.T))
gs = evecs[:, 0].reshape([d] * L)

# MPO: W = [[I, 0, 0], [Z, 0, 0], [-hX, -JZ, I]] (lower triangular convention)
W = torch.zeros(3, 3, d, d)
W[0, 0] = I2
W[1, 0] = Z
W[2, 0] = -h * X
W[2, 1] = -J * Z
W[2, 2] = I2
lvec = torch.tensor([0.0, 0.0, 1.0])
rvec = torch.tensor([1.0, 0.0, 0.0])


def energy(mps):
    E = torch.einsum("w,ab->wab", lvec, torch.ones(1, 1))
    for A in mps:
        E = torch.einsum("wab,asc,wvst,btd->vcd", E, A, W, A)
    return torch.einsum("wcd,w->", E, rvec) / overlap(mps, mps)


print("mpo energy of exact gs", round(energy(to_mps(gs, 16)).item(), 10), round(
    evals[0].item(), 10))
print("tensordot energy", round(torch.tensordot(psi.reshape(-1), H @ psi.reshape(-1),
                                                dims=1).item(), 10),
      round(energy(exact).item(), 10))

# variational MPS ground state
params = [torch.nn.Parameter(A.clone()) for A in to_mps(torch.randn([d] * L), chi=3)]
opt = torch.optim.Adam(params, lr=0.05)
for step in range(60):
    e = energy(params)
    opt.zero_grad()
    e.backward()
    opt.step()
    if step % 20 == 0:
        print("vmps", step, round(e.item(), 6))
print("vmps final", round(e.item(), 5), "gap to exact", round(e.item() - evals[0].item(), 5))

# entanglement entropy across the middle cut
for name, state in (("random", psi), ("ground", gs)):
    S = torch.linalg.svdvals(state.reshape(d ** (L // 2), -1))
    p = S ** 2
    p = p[p > 1e-14]
    print("entropy", name, round(-(p * p.log()).sum().item(), 8), S[:3])

# miscellaneous contraction forms scientists use
a, b, c = torch.randn(3, 4, 5), torch.randn(5, 6), torch.randn(4, 6)
t1 = torch.einsum("ijk,kl,jl->i", a, b, c)
t2 = torch.einsum(a, [0, 1, 2], b, [2, 3], c, [1, 3], [0])
t3 = torch.tensordot(torch.tensordot(a, b, dims=([2], [0])), c, dims=([1, 2], [0, 1]))
print("forms", torch.allclose(t1, t2), torch.allclose(t1, t3), t1)
print("traces", torch.einsum("ii", H[:4, :4]), torch.einsum("ii->i", H[:3, :3]),
      torch.einsum("...ij,...jk->...ik", a[:, :2, :2], a[:, :2, :2]).shape)
print("batched outer", torch.einsum("bi,bj->bij", a[:, 0], a[:, 1]).shape,
      torch.einsum("i,i", b[0], b[1]), torch.einsum("ij->", b))
