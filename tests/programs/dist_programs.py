"""torch.distributions in the programs that use it: a VAE's reparameterised Normal and
kl_divergence, REINFORCE with Categorical, a Gaussian mixture fitted by maximum likelihood with
MixtureSameFamily, a 1-d normalizing flow with TransformedDistribution, Bernoulli/Beta/Dirichlet
log-likelihoods, and sampling after manual_seed."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import (
    Bernoulli,
    Beta,
    Categorical,
    Dirichlet,
    Independent,
    MixtureSameFamily,
    MultivariateNormal,
    Normal,
    TransformedDistribution,
    Uniform,
    kl_divergence,
)
from torch.distributions.transforms import AffineTransform, SigmoidTransform

torch.manual_seed(0)
# VAE-style
enc = nn.Linear(6, 4)
dec = nn.Linear(2, 6)
x = torch.rand(5, 6)
opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-2)
for step in range(4):
    h = enc(x)
    q = Normal(h[:, :2], F.softplus(h[:, 2:]) + 1e-3)
    z = q.rsample()
    recon = Bernoulli(logits=dec(z))
    kl = kl_divergence(q, Normal(torch.zeros(2), torch.ones(2))).sum(-1)
    elbo = recon.log_prob(x.round()).sum(-1) - kl
    loss = -elbo.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 4), q.batch_shape, q.event_shape)
# REINFORCE
policy = nn.Linear(3, 4)
s = torch.randn(7, 3)
dist = Categorical(logits=policy(s))
a = dist.sample()
ret = torch.randn(7)
pg = -(dist.log_prob(a) * ret).mean() - 0.01 * dist.entropy().mean()
pg.backward()
print(a.tolist(), round(pg.item(), 5), policy.weight.grad.abs().sum().item() > 0)
print(dist.probs.sum(-1)[:2], Categorical(probs=torch.tensor([0.2, 0.8])).entropy())
# mixture
data = torch.cat([torch.randn(40) * 0.5 - 2, torch.randn(60) * 0.7 + 1.5])
logits = torch.zeros(2, requires_grad=True)
mu = torch.tensor([-1.0, 1.0], requires_grad=True)
log_sd = torch.zeros(2, requires_grad=True)
opt = torch.optim.Adam([logits, mu, log_sd], lr=0.1)
for _ in range(25):
    mix = MixtureSameFamily(Categorical(logits=logits), Normal(mu, log_sd.exp()))
    nll = -mix.log_prob(data).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
print(round(nll.item(), 4), mu.detach().tolist(), mix.mean.item() == mix.mean.item())
# flow
base = Normal(torch.tensor(0.0), torch.tensor(1.0))
flow = TransformedDistribution(base, [AffineTransform(0.5, 2.0), SigmoidTransform()])
y = flow.sample((4,))
print(y.shape, flow.log_prob(torch.tensor([0.3, 0.7])), ((y > 0) & (y < 1)).all().item())
# assorted
print(
    Beta(torch.tensor([2.0]), torch.tensor([3.0])).log_prob(torch.tensor([0.4])),
    Dirichlet(torch.tensor([1.0, 2.0, 3.0])).log_prob(torch.tensor([0.2, 0.3, 0.5])),
)
mvn = MultivariateNormal(torch.zeros(2), covariance_matrix=torch.tensor([[2.0, 0.3], [0.3, 1.0]]))
print(mvn.log_prob(torch.tensor([0.5, -0.5])), mvn.entropy(), mvn.sample((3,)).shape)
ind = Independent(Normal(torch.zeros(3), torch.ones(3)), 1)
print(ind.batch_shape, ind.event_shape, ind.log_prob(torch.zeros(3)))
print(Uniform(0.0, 2.0).sample((3,)), Normal(0.0, 1.0).sample((2, 2)))
print(
    kl_divergence(
        Categorical(probs=torch.tensor([0.3, 0.7])), Categorical(probs=torch.tensor([0.5, 0.5]))
    )
)
