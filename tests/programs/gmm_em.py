"""Gaussian mixture models as in machine-learning course notebooks: k-means++ seeding with
torch.multinomial, EM with full covariances (log-responsibilities by logsumexp, weighted
covariances by einsum, Cholesky log-determinants), BIC model selection over the number of
components, the same model as a torch.distributions MixtureSameFamily fitted by gradient
ascent with a lower-Cholesky parametrization, and posterior assignments."""

import math
import torch
import torch.distributions as D

torch.manual_seed(12)
torch.set_default_dtype(torch.float64)

means_true = torch.tensor([[0.0, 0.0], [3.0, 3.0], [-3.0, 2.5]])
covs_true = torch.stack([torch.tensor([[1.0, 0.6], [0.6, 1.0]]), 0.5 * torch.eye(2),
                         torch.tensor([[0.8, -0.3], [-0.3, 0.4]])])
counts = torch.tensor([60, 40, 30])
X = torch.cat([D.MultivariateNormal(m, c).sample((int(k),)) for m, c, k in
               zip(means_true, covs_true, counts)])
X = X[torch.randperm(len(X))]
n, d = X.shape
print("data", X.shape, X.mean(0), torch.cov(X.T).diagonal())


def kmeanspp(X, k, g):
    centers = [X[torch.randint(0, len(X), (1,), generator=g)].squeeze(0)]
    for _ in range(1, k):
        d2 = torch.cdist(X, torch.stack(centers)).pow(2).min(1).values
        centers.append(X[torch.multinomial(d2 / d2.sum(), 1, generator=g)].squeeze(0))
    return torch.stack(centers)


def log_gauss(X, mu, cov):
    L = torch.linalg.cholesky(cov)                              # (k, d, d)
    diff = X.unsqueeze(0) - mu.unsqueeze(1)                     # (k, n, d)
    z = torch.linalg.solve_triangular(L, diff.transpose(1, 2), upper=False)
    maha = z.pow(2).sum(1)                                      # (k, n)
    logdet = 2 * torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)
    return -0.5 * (maha + logdet.unsqueeze(1) + d * math.log(2 * math.pi))


def em(X, k, iters=30, seed=0):
    g = torch.Generator().manual_seed(seed)
    mu = kmeanspp(X, k, g)
    cov = torch.eye(d).repeat(k, 1, 1)
    w = torch.full((k,), 1.0 / k)
    prev = -math.inf
    its = 0
    while its < iters:
        its += 1
        lp = log_gauss(X, mu, cov) + w.log().unsqueeze(1)       # (k, n)
        ll = torch.logsumexp(lp, 0)
        resp = torch.exp(lp - ll)                               # E step
        nk = resp.sum(1)
        w = nk / n                                              # M step
        mu = resp @ X / nk.unsqueeze(1)
        diff = X.unsqueeze(0) - mu.unsqueeze(1)
        cov = torch.einsum("kn,kni,knj->kij", resp, diff, diff) / nk.view(-1, 1, 1)
        cov = cov + 1e-6 * torch.eye(d)
        total = ll.sum().item()
        if total - prev < 1e-9:
            break
        prev = total
    return w, mu, cov, total, its, resp


for k in (1, 2, 3, 4):
    w, mu, cov, ll, its, resp = em(X, k)
    params = (k - 1) + k * d + k * d * (d + 1) // 2
    bic = -2 * ll + params * math.log(n)
    print("k", k, its, round(ll, 5), round(bic, 4))
w, mu, cov, ll, its, resp = em(X, 3)
order = torch.argsort(mu[:, 0])
print("weights", w[order], "means", mu[order])
print("covs", cov[order].flatten(1))
labels = resp.argmax(0)
print("sizes", torch.bincount(labels, minlength=3).sort().values, resp.max(0).values.min())

# the same model as a MixtureSameFamily, fitted by Adam on the exact log-likelihood
logits = torch.zeros(3, requires_grad=True)
loc = kmeanspp(X, 3, torch.Generator().manual_seed(5)).clone().requires_grad_(True)
raw = torch.zeros(3, 3, requires_grad=True)          # d*(d+1)/2 entries per component
tril = torch.tril_indices(2, 2)
opt = torch.optim.Adam([logits, loc, raw], lr=0.05)


def scale_tril():
    L = torch.zeros(3, 2, 2)
    L[:, tril[0], tril[1]] = raw
    diag = torch.nn.functional.softplus(torch.diagonal(L, dim1=-2, dim2=-1)) + 1e-3
    return torch.tril(L, -1) + torch.diag_embed(diag)


for step in range(60):
    gmm = D.MixtureSameFamily(D.Categorical(logits=logits),
                              D.MultivariateNormal(loc, scale_tril=scale_tril()))
    nll = -gmm.log_prob(X).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    if step % 20 == 0:
        print("adam", step, round(nll.item(), 6))
print("adam final", round(nll.item() * n, 4), "em", round(-ll, 4))
with torch.no_grad():
    o = torch.argsort(loc[:, 0])
    print("adam means", loc[o], torch.softmax(logits, 0)[o])
    post = gmm.component_distribution.log_prob(X.unsqueeze(1)) + torch.log_softmax(logits, 0)
    print("posterior", post.argmax(1)[:12], gmm.mean, gmm.variance)
    s = gmm.sample((4,))
    print("samples", s.shape, gmm.log_prob(s).shape)
