"""Conjugate Bayesian computations as in statistics tutorials: a Gibbs sampler for a normal
model with a Gamma prior on the precision, Thompson sampling of a Beta-Bernoulli bandit, a
Dirichlet-multinomial posterior, a Poisson-Gamma count model with negative-binomial predictive
draws, Student-t and von Mises samples, and reparameterized gradients of a Gamma ELBO."""

import torch
import torch.distributions as dist

torch.manual_seed(11)
torch.set_default_dtype(torch.float64)

# Gibbs sampling: y ~ N(mu, 1/tau), mu ~ N(0, 10^2), tau ~ Gamma(2, 1)
y = 3.0 + 0.5 * torch.randn(40)
n, ybar = len(y), y.mean()
mu, tau = torch.tensor(0.0), torch.tensor(1.0)
trace = []
for it in range(300):
    prec = 1 / 100 + n * tau
    mu = dist.Normal(n * tau * ybar / prec, prec.rsqrt()).sample()
    tau = dist.Gamma(2 + n / 2, 1 + 0.5 * ((y - mu) ** 2).sum()).sample()
    if it >= 100:
        trace.append(torch.stack([mu, tau]))
T = torch.stack(trace)
print("gibbs mean", T.mean(0), "sd", T.std(0))
print("interval", torch.quantile(T[:, 0], torch.tensor([0.05, 0.95])))

# Thompson sampling for a 3-armed Bernoulli bandit
true_p = torch.tensor([0.3, 0.5, 0.6])
wins, losses = torch.ones(3), torch.ones(3)
pulls = torch.zeros(3, dtype=torch.long)
for _ in range(200):
    theta = dist.Beta(wins, losses).sample()
    arm = theta.argmax()
    reward = torch.bernoulli(true_p[arm])
    wins[arm] += reward
    losses[arm] += 1 - reward
    pulls[arm] += 1
print("bandit pulls", pulls.tolist(), "posterior means", wins / (wins + losses))

# Dirichlet-multinomial: category counts with a symmetric prior
counts = dist.Multinomial(100, probs=torch.tensor([0.2, 0.5, 0.3])).sample()
post = dist.Dirichlet(1.0 + counts)
draws = post.sample((500,))
print("counts", counts.tolist(), "post mean", draws.mean(0), post.mean)
print("dirichlet logp", post.log_prob(torch.tensor([0.2, 0.5, 0.3])).item(), post.entropy().item())

# Poisson-Gamma: rate posterior and negative-binomial posterior predictive
events = dist.Poisson(torch.tensor(4.0)).sample((25,))
a_post, b_post = 1 + events.sum(), 0.5 + len(events)
rates = dist.Gamma(a_post, b_post).sample((1000,))
pred = dist.NegativeBinomial(a_post, probs=1 / (1 + b_post)).sample((1000,))
print("events", events[:10].tolist(), "rate", rates.mean().item(), rates.var().item())
print("predictive", pred.mean().item(), pred.var().item(), torch.bincount(pred.long())[:8].tolist())
print("chi2", dist.Chi2(torch.tensor([2.0, 5.0])).sample((3,)))
print(
    "student-t",
    dist.StudentT(3.0, 1.0, 2.0).sample((4,)),
    dist.FisherSnedecor(4.0, 6.0).sample((2,)),
)
print("von mises", dist.VonMises(torch.tensor([0.0, 2.0]), torch.tensor([4.0, 0.5])).sample((3,)))
print(
    "cauchy",
    dist.Cauchy(0.0, 1.0).sample((3,)),
    torch.empty(3).geometric_(0.3),
    torch.empty(2).log_normal_(),
)
print("binomial", dist.Binomial(20, probs=torch.tensor([0.1, 0.7])).sample((3,)).tolist())

# variational fit of a Gamma posterior by reparameterized gradients of the ELBO
log_a = torch.tensor(0.0, requires_grad=True)
log_b = torch.tensor(0.0, requires_grad=True)
opt = torch.optim.Adam([log_a, log_b], lr=0.1)
prior = dist.Gamma(1.0, 0.5)
for _ in range(60):
    q = dist.Gamma(log_a.exp(), log_b.exp())
    lam = q.rsample((16,))
    elbo = (
        dist.Poisson(lam.unsqueeze(1)).log_prob(events).sum(1)
        + prior.log_prob(lam)
        - q.log_prob(lam)
    ).mean()
    opt.zero_grad()
    (-elbo).backward()
    opt.step()
print(
    "vi", round(log_a.exp().item(), 3), round(log_b.exp().item(), 3), "exact", a_post.item(), b_post
)
