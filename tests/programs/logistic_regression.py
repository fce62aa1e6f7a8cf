"""Logistic regression with a hand-written training loop (no nn, no optim)."""
import numpy as np
import torch

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

n, d = 200, 5
X = torch.randn(n, d, device=device)
true_w = torch.tensor([1.5, -2.0, 0.5, 0.0, 3.0], device=device)
y = (torch.sigmoid(X @ true_w + 0.3) > torch.rand(n, device=device)).float()

w = torch.zeros(d, requires_grad=True, device=device)
b = torch.zeros(1, requires_grad=True, device=device)
lr = 0.5
for epoch in range(60):
    logits = X @ w + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
        w.grad.zero_()
        b.grad.zero_()
    if epoch % 20 == 0:
        print(f"epoch {epoch}: loss {loss.item():.6f}")

with torch.no_grad():
    probs = torch.sigmoid(X @ w + b)
    acc = ((probs > 0.5).float() == y).float().mean()
print(f"accuracy {acc.item():.4f}")
print("weights", np.round(w.detach().cpu().numpy(), 5).tolist())
print("bias", round(b.item(), 5))

# the same model in float64 with the closed-form gradient checked against autograd
Xd, yd = X.double(), y.double()
wd = w.detach().double().requires_grad_()
loss = torch.nn.functional.binary_cross_entropy_with_logits(Xd @ wd, yd)
(g,) = torch.autograd.grad(loss, wd)
manual = Xd.T @ (torch.sigmoid(Xd @ wd) - yd) / n
print("grad check", torch.allclose(g, manual), f"{(g - manual).abs().max().item():.3e}")

# linear regression by least squares vs gradient descent
A = torch.randn(50, 3, dtype=torch.float64)
coef = torch.tensor([2.0, -1.0, 0.5], dtype=torch.float64)
t = A @ coef + 0.01 * torch.randn(50, dtype=torch.float64)
sol = torch.linalg.lstsq(A, t.unsqueeze(1)).solution.squeeze(1)
print("lstsq", sol.tolist())
theta = torch.zeros(3, dtype=torch.float64, requires_grad=True)
for _ in range(200):
    loss = ((A @ theta - t) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        theta.sub_(0.1 * theta.grad)
        theta.grad = None
print("gd", theta.detach().numpy().tolist(), f"mse {loss.item():.8f}")
