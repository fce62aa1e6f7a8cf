"""Normalizing flows and variational inference as in probabilistic-ML tutorials: a learnable
affine-coupling flow built from torch.distributions transforms (TransformedDistribution,
AffineTransform, ComposeTransform, SigmoidTransform, ExpTransform, log_abs_det_jacobian),
fitted to a two-moons-like sample by maximum likelihood, and a mean-field Gaussian posterior
for Bayesian logistic regression fitted with rsample and an analytic kl_divergence."""

import math
import torch
import torch.distributions as D
import torch.nn as nn

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)

# change of variables by hand against TransformedDistribution
base = D.Normal(torch.zeros(2), torch.ones(2))
aff = D.AffineTransform(loc=torch.tensor([1.0, -1.0]), scale=torch.tensor([2.0, 0.5]))
lognorm = D.TransformedDistribution(base, [aff, D.ExpTransform()])
x = lognorm.sample((3,))
print("sample", x)
y = torch.log(x)
manual = base.log_prob(aff.inv(y)) - aff.log_abs_det_jacobian(aff.inv(y), y) - y
print("log_prob", lognorm.log_prob(x), (lognorm.log_prob(x) - manual).abs().max() < 1e-12)
print("event", lognorm.batch_shape, lognorm.event_shape, lognorm.support)
ln = D.LogNormal(torch.tensor(0.3), torch.tensor(0.7))
print("lognormal", ln.log_prob(torch.tensor(1.5)), ln.mean, ln.variance)
logit_normal = D.TransformedDistribution(D.Normal(0.0, 1.0), D.SigmoidTransform())
u = logit_normal.rsample((4,))
print("logit-normal", u, logit_normal.log_prob(u))
comp = D.ComposeTransform([D.AffineTransform(0.0, 3.0), D.TanhTransform()])
z = torch.linspace(-2, 2, 5)
print("compose", comp(z), comp.inv(comp(z)), comp.log_abs_det_jacobian(z, comp(z)))
print("domains", comp.domain, comp.codomain, comp.bijective, D.ExpTransform().sign)


class Coupling(nn.Module):
    """RealNVP affine coupling: half the coordinates scale and shift the other half."""

    def __init__(self, flip):
        super().__init__()
        self.flip = flip
        self.net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 2))

    def forward(self, x):
        a, b = (x[:, 1:], x[:, :1]) if self.flip else (x[:, :1], x[:, 1:])
        s, t = self.net(a).chunk(2, dim=1)
        s = torch.tanh(s)
        b = b * torch.exp(s) + t
        out = torch.cat([b, a], 1) if self.flip else torch.cat([a, b], 1)
        return out, s.sum(1)

    def inverse(self, y):
        a, b = (y[:, 1:], y[:, :1]) if self.flip else (y[:, :1], y[:, 1:])
        s, t = self.net(a).chunk(2, dim=1)
        b = (b - t) * torch.exp(-torch.tanh(s))
        return torch.cat([b, a], 1) if self.flip else torch.cat([a, b], 1)


def moons(n):
    th = torch.rand(n) * math.pi
    upper = torch.rand(n) < 0.5
    xs = torch.where(upper, torch.cos(th), 1 - torch.cos(th))
    ys = torch.where(upper, torch.sin(th), 0.5 - torch.sin(th))
    return torch.stack([xs, ys], 1) + 0.05 * torch.randn(n, 2)


flows = nn.ModuleList([Coupling(i % 2 == 1) for i in range(4)])
prior = D.MultivariateNormal(torch.zeros(2), torch.eye(2))
opt = torch.optim.Adam(flows.parameters(), lr=1e-2)
data = moons(256)
for step in range(60):
    z, logdet = data, torch.zeros(len(data))
    for f in reversed(flows):
        z, ld = f(z)
        logdet = logdet + ld
    loss = -(prior.log_prob(z) + logdet).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print("flow", step, round(loss.item(), 6))
with torch.no_grad():
    s = prior.sample((5,))
    for f in flows:
        s = f.inverse(s)
    print("flow samples", s)
    back, _ = flows[-1](flows[-1].inverse(s))
    print("invertible", torch.allclose(back, s))

# mean-field VI for Bayesian logistic regression
n, d = 80, 3
X = torch.randn(n, d)
w_true = torch.tensor([1.5, -2.0, 0.5])
yb = D.Bernoulli(logits=X @ w_true).sample()
mu = torch.zeros(d, requires_grad=True)
rho = torch.full((d,), -1.0, requires_grad=True)
pw = D.Normal(torch.zeros(d), 2.0 * torch.ones(d))
opt = torch.optim.Adam([mu, rho], lr=0.05)
for step in range(150):
    q = D.Normal(mu, nn.functional.softplus(rho))
    w = q.rsample((8,))
    ll = D.Bernoulli(logits=w @ X.T).log_prob(yb).sum(-1).mean()
    kl = D.kl_divergence(q, pw).sum()
    elbo = ll - kl
    opt.zero_grad()
    (-elbo).backward()
    opt.step()
    if step % 50 == 0:
        print("vi", step, round(elbo.item(), 5), round(kl.item(), 5))
print("posterior", mu.detach(), nn.functional.softplus(rho).detach())
qi = D.Independent(D.Normal(mu.detach(), nn.functional.softplus(rho).detach()), 1)
pi = D.Independent(pw, 1)
print("kl independent", D.kl_divergence(qi, pi), qi.entropy(), qi.log_prob(w_true))
mvn = D.MultivariateNormal(mu.detach(), scale_tril=torch.diag(nn.functional.softplus(rho).detach()))
print("kl mvn", D.kl_divergence(mvn, D.MultivariateNormal(torch.zeros(d), 4 * torch.eye(d))))
