"""Variational inference by reparameterization, as in the "VI from scratch" blog posts: a
Beta posterior for a coin's bias from flips (softplus-parameterized concentrations, ELBO with
rsample and log_prob, Adam), compared with the conjugate answer; a Dirichlet posterior over
a die's face probabilities (Dirichlet.rsample gradients, kl_divergence to the prior), and a
Beta policy's reparameterized objective."""

import torch
import torch.nn.functional as F
from torch.distributions import Bernoulli, Beta, Categorical, Dirichlet, kl_divergence

torch.manual_seed(13)
torch.set_default_dtype(torch.float64)
flips = (torch.rand(40) < 0.7).float()
heads, tails = flips.sum().item(), (1 - flips).sum().item()
prior = Beta(torch.tensor(2.0), torch.tensor(2.0))
print(int(heads), int(tails))

raw = torch.zeros(2, requires_grad=True)
opt = torch.optim.Adam([raw], lr=0.05)
for step in range(150):
    a, b = F.softplus(raw) + 0.1
    q = Beta(a, b)
    theta = q.rsample((16,))
    log_lik = Bernoulli(probs=theta.unsqueeze(1)).log_prob(flips).sum(1)
    elbo = (log_lik + prior.log_prob(theta) - q.log_prob(theta)).mean()
    opt.zero_grad()
    (-elbo).backward()
    opt.step()
    if step % 50 == 49:
        print(step, f"{elbo.item():.4f}", [round(v, 4) for v in (F.softplus(raw) + 0.1).tolist()])
a, b = (F.softplus(raw) + 0.1).tolist()
print("posterior mean", round(a / (a + b), 3), "exact", round((2 + heads) / (4 + heads + tails), 3))

counts = torch.bincount(torch.multinomial(torch.tensor([0.1, 0.2, 0.3, 0.4]), 60,
                                          replacement=True), minlength=4).double()
print(counts.tolist())
dprior = Dirichlet(torch.ones(4))
log_conc = torch.zeros(4, requires_grad=True)
opt = torch.optim.Adam([log_conc], lr=0.1)
for step in range(100):
    q = Dirichlet(log_conc.exp())
    p = q.rsample((8,))
    log_lik = (counts * p.log()).sum(-1)
    loss = -(log_lik.mean() - kl_divergence(q, dprior))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 49:
        print(step, f"{loss.item():.3f}", [round(v, 4) for v in q.mean.tolist()])
print("exact", [round(v, 3) for v in ((counts + 1) / (counts.sum() + 4)).tolist()])

# a Beta policy on [0, 1] actions, optimised through rsample (pathwise gradient)
alpha_beta = torch.tensor([1.0, 1.0], requires_grad=True)
opt = torch.optim.SGD([alpha_beta], lr=0.05)
for _ in range(30):
    pi = Beta(F.softplus(alpha_beta[0]) + 1, F.softplus(alpha_beta[1]) + 1)
    action = pi.rsample((32,))
    reward = -(action - 0.8) ** 2
    loss = -reward.mean() - 0.01 * pi.entropy()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"{loss.item():.5f}", [round(v, 4) for v in alpha_beta.tolist()],
      round(pi.mean.item(), 4))
cat = Categorical(probs=Dirichlet(torch.full((3,), 0.5)).sample())
print(cat.probs.sum().item(), cat.sample((5,)).tolist())
