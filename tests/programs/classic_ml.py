"""Classic machine learning from a course's homework, in PyTorch: a linear SVM (hinge loss,
one-vs-rest, squared hinge via MultiMarginLoss), a kernel SVM dual by projected gradient, PCA
three ways (linalg.svd, pca_lowrank, svd_lowrank), t-SNE with a per-point binary search on the
perplexity, and NMF with Lee-Seung multiplicative updates."""

import torch
import torch.nn as nn

torch.manual_seed(8)
torch.set_default_dtype(torch.float64)

# three Gaussian blobs in 6-D
means = torch.randn(3, 6) * 3
y = torch.arange(3).repeat_interleave(30)
X = means[y] + torch.randn(90, 6)
X = (X - X.mean(0)) / X.std(0)

# ------------------------------------------------------------ linear SVM, one-vs-rest
W = torch.zeros(6, 3, requires_grad=True)
b = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([W, b], lr=0.05)
Y = torch.where(torch.nn.functional.one_hot(y, 3) > 0, 1.0, -1.0)
C = 1.0
for _ in range(50):
    margins = Y * (X @ W + b)
    loss = 0.5 * (W ** 2).sum() + C * torch.clamp(1 - margins, min=0).mean(0).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
acc = ((X @ W + b).argmax(1) == y).double().mean().item()
print("ovr svm loss", round(loss.item(), 6), "acc", acc)
print("support vectors", ((Y * (X @ W + b)) < 1).sum(0).tolist())

lin = nn.Linear(6, 3)
crit = nn.MultiMarginLoss(p=2, margin=1.0)
opt = torch.optim.SGD(lin.parameters(), lr=0.1, weight_decay=1e-3)
for _ in range(30):
    loss = crit(lin(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("crammer-singer-ish loss", round(loss.item(), 6))

# ------------------------------------------------------------ kernel SVM (dual), class 0 vs rest
yb = Y[:, 0]
Kx = torch.exp(-torch.cdist(X, X) ** 2 / 4.0)
Q = (yb[:, None] * yb[None, :]) * Kx
alpha = torch.zeros(90, requires_grad=True)
opt = torch.optim.Adam([alpha], lr=0.05)
for _ in range(100):
    dual = 0.5 * alpha @ Q @ alpha - alpha.sum() + 10.0 * (alpha @ yb) ** 2
    opt.zero_grad()
    dual.backward()
    opt.step()
    with torch.no_grad():
        alpha.clamp_(0.0, C)
sv = alpha.detach() > 1e-4
bias = (yb[sv] - (alpha.detach() * yb) @ Kx[:, sv]).mean()
pred = torch.sign((alpha.detach() * yb) @ Kx + bias)
acc = (pred == yb).double().mean().item()
print("kernel svm dual", round(dual.item(), 5), "n_sv", int(sv.sum()), "acc", acc)

# ------------------------------------------------------------ PCA
U, S, Vh = torch.linalg.svd(X - X.mean(0), full_matrices=False)
explained = S ** 2 / (S ** 2).sum()
print("explained variance", explained[:3])
U2, S2, V2 = torch.pca_lowrank(X, q=3, center=True, niter=4)
print("pca_lowrank S", S2, "agree", torch.allclose(S2, S[:3], rtol=1e-6))
U3, S3, V3 = torch.svd_lowrank(X - X.mean(0), q=4, niter=2)
print("svd_lowrank S", S3[:3])
proj = (X - X.mean(0)) @ V2[:, :2]
same = (proj.abs() - (U[:, :2] * S[:2]).abs()).abs().max() < 1e-8
print("projection abs mean", proj.abs().mean(0), same)


# ------------------------------------------------------------ t-SNE
def binary_search_perplexity(D, perplexity=10.0, tol=1e-5, steps=50):
    n = D.shape[0]
    P = torch.zeros(n, n)
    target = torch.log(torch.tensor(perplexity))
    for i in range(n):
        lo, hi, beta = torch.tensor(0.0), torch.tensor(float("inf")), torch.tensor(1.0)
        Di = torch.cat([D[i, :i], D[i, i + 1:]])
        for _ in range(steps):
            p = torch.exp(-Di * beta)
            sp = p.sum()
            H = torch.log(sp) + beta * (Di * p).sum() / sp
            if torch.abs(H - target) < tol:
                break
            if H > target:
                lo = beta
                beta = beta * 2 if torch.isinf(hi) else (beta + hi) / 2
            else:
                hi = beta
                beta = beta / 2 if lo == 0 else (beta + lo) / 2
        row = p / sp
        P[i, :i], P[i, i + 1:] = row[:i], row[i:]
    return P


Xs = X[::3]
D = torch.cdist(Xs, Xs) ** 2
P = binary_search_perplexity(D)
P = (P + P.T) / (2 * P.shape[0])
P = torch.clamp(P, min=1e-12)
print("P row entropy", -(P * P.log()).sum().item())
Yemb = (1e-2 * torch.randn(Xs.shape[0], 2)).requires_grad_()
opt = torch.optim.SGD([Yemb], lr=50.0, momentum=0.5)
for it in range(100):
    exag = 4.0 if it < 30 else 1.0
    num = 1.0 / (1.0 + torch.cdist(Yemb, Yemb) ** 2)
    num = num * (1 - torch.eye(num.shape[0]))
    Qm = torch.clamp(num / num.sum(), min=1e-12)
    kl = (exag * P * torch.log(exag * P / Qm)).sum()
    opt.zero_grad()
    kl.backward()
    opt.step()
    if it % 25 == 0 or it == 99:
        print(f"tsne {it} kl {kl.item():.6f}")
emb = Yemb.detach()
cent = torch.stack([emb[y[::3] == k].mean(0) for k in range(3)])
spread = torch.stack([emb[y[::3] == k].std(0).norm() for k in range(3)])
print("cluster separation", (torch.cdist(cent, cent).sum() / 6 / spread.mean()).item() > 2)

# ------------------------------------------------------------ NMF
V = torch.rand(20, 4) @ torch.rand(4, 15)
r = 4
Wn, Hn = torch.rand(20, r), torch.rand(r, 15)
eps = 1e-10
for it in range(200):
    Hn *= (Wn.T @ V) / (Wn.T @ Wn @ Hn + eps)
    Wn *= (V @ Hn.T) / (Wn @ Hn @ Hn.T + eps)
    if it in (0, 50, 199):
        print(f"nmf {it} frob {torch.linalg.matrix_norm(V - Wn @ Hn).item():.8f}")
print("nonneg", bool((Wn >= 0).all() and (Hn >= 0).all()), "kl-div",
      (V * torch.log(V / (Wn @ Hn)) - V + Wn @ Hn).sum().item() < 1e-2)
