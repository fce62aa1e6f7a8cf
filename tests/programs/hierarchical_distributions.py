"""Probabilistic modelling with torch.distributions the way Pyro-less tutorials do it: a
hierarchical model with an LKJ prior on a correlation Cholesky factor (constraint transforms
via biject_to, log-det-Jacobians), a Wishart posterior update, a StudentT robust regression,
von Mises angles, a Gumbel-softmax relaxed categorical, stick-breaking weights, and
mean-field VI whose guide is built from TransformedDistribution and Independent."""

import torch
import torch.distributions as D
from torch.distributions import biject_to, constraints, transforms as T

torch.manual_seed(77)
torch.set_default_dtype(torch.float64)

# ------------------------------------------------------------ LKJ + biject_to
# (LKJCholesky.sample is not used: torch 2.13's draws are too dispersed below the second row)
lkj = D.LKJCholesky(3, concentration=2.0)
tr = biject_to(constraints.corr_cholesky)
Lc = tr(torch.randn(4, 3))
print("lkj cholesky", Lc.shape, (Lc @ Lc.mT).diagonal(dim1=-2, dim2=-1))
print("lkj log_prob", lkj.log_prob(Lc))
u = torch.randn(3, requires_grad=True)
Lu = tr(u)
ldj = tr.log_abs_det_jacobian(u, Lu)
lp = lkj.log_prob(Lu) + ldj
lp.backward()
print("unconstrained lp", lp.item(), "grad", u.grad)
print("round trip", torch.allclose(tr.inv(Lu), u))

# ------------------------------------------------------------ Wishart conjugate update
true_cov = torch.tensor([[1.0, 0.6, 0.2], [0.6, 2.0, -0.3], [0.2, -0.3, 0.5]])
data = D.MultivariateNormal(torch.zeros(3), covariance_matrix=true_cov).sample((200,))
prior = D.Wishart(df=torch.tensor(5.0), covariance_matrix=torch.eye(3))
post_df = prior.df + data.shape[0]
post_scale = torch.linalg.inv(torch.eye(3) + data.T @ data)
post = D.Wishart(df=post_df, covariance_matrix=post_scale)
prec_mean = post.mean
print("posterior cov estimate", torch.linalg.inv(prec_mean))
print("wishart entropy", post.entropy().item(), "log_prob at mean", post.log_prob(prec_mean).item())
Ws = post.rsample((3,))
print("wishart samples pd", bool((torch.linalg.eigvalsh(Ws) > 0).all()), Ws.shape)

# ------------------------------------------------------------ robust regression, StudentT
x = torch.linspace(-2, 2, 60)
y = 1.5 * x - 0.5 + 0.3 * torch.randn(60)
y[::10] += 6.0          # outliers
params = torch.zeros(3, requires_grad=True)
opt = torch.optim.LBFGS([params], max_iter=50, line_search_fn="strong_wolfe")


def nll():
    opt.zero_grad()
    a, b, log_s = params
    loss = -D.StudentT(3.0, a * x + b, log_s.exp()).log_prob(y).sum()
    loss.backward()
    return loss


opt.step(nll)
ols = torch.linalg.lstsq(torch.stack([x, torch.ones(60)], 1), y[:, None]).solution.squeeze()
print("studentT fit", params.detach(), "ols", ols)

# ------------------------------------------------------------ von Mises
mu_true = torch.tensor(1.0)
angles = D.VonMises(mu_true, torch.tensor(4.0)).sample((300,))
C, Sn = angles.cos().mean(), angles.sin().mean()
print("circular mean", torch.atan2(Sn, C).item(), "R", torch.sqrt(C ** 2 + Sn ** 2).item())
vm = D.VonMises(torch.tensor(0.9, requires_grad=True), torch.tensor(3.0, requires_grad=True))
ll = vm.log_prob(angles).mean()
ll.backward()
print("von mises ll", ll.item(), "grads", vm.loc.grad.item(), vm.concentration.grad.item())

# ------------------------------------------------------------ relaxed categorical / stick breaking
logits = torch.tensor([1.0, 0.0, -1.0], requires_grad=True)
relaxed = D.RelaxedOneHotCategorical(torch.tensor(0.5), logits=logits)
s = relaxed.rsample((5,))
print("relaxed sample rows", s.sum(-1), "log_prob", relaxed.log_prob(s))
(s[:, 0].sum()).backward()
print("relaxed grad", logits.grad)
sb = T.StickBreakingTransform()
z = torch.tensor([0.3, -0.2, 1.0])
w = sb(z)
print("stick weights", w, w.sum().item(), "ldj", sb.log_abs_det_jacobian(z, w).item())
print("dirichlet lp of weights", D.Dirichlet(torch.ones(4) * 2).log_prob(w).item())

# ------------------------------------------------------------ mean-field VI with transformed guide
# model: rate ~ Gamma(2, 1); counts ~ Poisson(rate)
counts = D.Poisson(torch.tensor(3.5)).sample((40,))
loc = torch.tensor(0.0, requires_grad=True)
log_scale = torch.tensor(-1.0, requires_grad=True)
opt = torch.optim.Adam([loc, log_scale], lr=0.05)
for step in range(150):
    guide = D.TransformedDistribution(D.Normal(loc, log_scale.exp()), [T.ExpTransform()])
    r = guide.rsample((16,))
    elbo = (D.Gamma(2.0, 1.0).log_prob(r) + D.Poisson(r[:, None]).log_prob(counts).sum(1)
            - guide.log_prob(r)).mean()
    opt.zero_grad()
    (-elbo).backward()
    opt.step()
    if step % 50 == 0 or step == 149:
        print(f"vi {step} elbo {elbo.item():.5f}")
exact = D.Gamma(2.0 + counts.sum(), 1.0 + len(counts))
vi_mean = (loc + 0.5 * log_scale.exp() ** 2).exp().item()
print("posterior mean vi", vi_mean, "exact", exact.mean.item())
guide_iid = D.Independent(D.Normal(torch.zeros(2, 3), torch.ones(2, 3)), 1)
print("independent shapes", guide_iid.batch_shape, guide_iid.event_shape,
      guide_iid.log_prob(torch.zeros(2, 3)))
print("kl gamma", D.kl_divergence(D.Gamma(3.0, 2.0), exact).item())
