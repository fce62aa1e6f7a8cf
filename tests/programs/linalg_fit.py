"""Scientific fitting: least squares, Cholesky, eigen-decomposition and gradients through them."""

import torch

torch.manual_seed(3)
torch.set_default_dtype(torch.float64)
A = torch.randn(20, 4)
b = A @ torch.tensor([1.0, -2.0, 0.5, 3.0]) + 0.01 * torch.randn(20)
sol = torch.linalg.lstsq(A, b.unsqueeze(1)).solution.squeeze(1)
print("lstsq", sol)
M = A.T @ A + torch.eye(4)
L = torch.linalg.cholesky(M)
print("chol", torch.dist(L @ L.T, M) < 1e-10, torch.cholesky_solve(b[:4].unsqueeze(1), L).squeeze())
w, V = torch.linalg.eigh(M)
print("eigh", w)
theta = torch.zeros(4, requires_grad=True)
opt = torch.optim.LBFGS([theta], lr=1, max_iter=50, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    loss = ((A @ theta - b) ** 2).mean() + 1e-3 * theta.norm() ** 2
    loss.backward()
    return loss


for _ in range(3):
    last = opt.step(closure)
print("lbfgs", theta.detach(), float(last))
X = torch.randn(5, 5, requires_grad=True)
S = X @ X.T + 5 * torch.eye(5)
f = (
    torch.logdet(S)
    + torch.linalg.inv(S).trace()
    + torch.linalg.svdvals(X).sum()
    + torch.linalg.det(S[:2, :2])
)
f.backward()
print("grad", X.grad.sum(), X.grad[0])
Q, R = torch.linalg.qr(A)
print(
    "qr",
    Q.shape,
    torch.allclose(Q @ R, A),
    torch.linalg.matrix_rank(A),
    torch.linalg.norm(A, "fro"),
    torch.linalg.cond(M),
)
x = torch.linalg.solve(M, b[:4])
print("solve", x, torch.linalg.matrix_exp(0.1 * M[:2, :2]))
t = torch.linspace(0, 1, 64)
sig = torch.sin(2 * torch.pi * 5 * t) + 0.5 * torch.cos(2 * torch.pi * 12 * t)
F = torch.fft.rfft(sig)
print("fft", F.abs().argmax(), torch.fft.irfft(F, n=64).sub(sig).abs().max() < 1e-12)
jac = torch.autograd.functional.jacobian(lambda v: torch.tanh(M @ v), b[:4])
print("jac", jac.shape, jac[0])
