"""Bayesian deep learning as papers' reference code writes it: Bayes by Backprop (Blundell et
al. 2015) with a scale-mixture prior and softplus-parameterized Gaussian posteriors (the local
reparameterization trick), MC dropout predictive uncertainty, a heteroscedastic regression head
with GaussianNLLLoss, a mixture density network, and a last-layer Laplace approximation with
torch.func.hessian. Regression on a 1-D toy problem with a gap in the data, in float64 (in
float32, Adam amplifies last-place rounding differences of the scale-mixture KL within a few
dozen steps, and the Laplace covariance is ill-conditioned)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributions as D
from torch.func import functional_call, hessian

torch.manual_seed(19)
torch.set_default_dtype(torch.float64)
x = torch.cat([torch.linspace(-4, -1, 40), torch.linspace(1, 4, 40)]).unsqueeze(1)
y = x.pow(3) / 20 + 0.3 * torch.randn_like(x) * (1 + x.abs() / 4)
xt = torch.linspace(-5, 5, 7).unsqueeze(1)


class BayesLinear(nn.Module):
    def __init__(self, i, o, pi=0.5, s1=1.0, s2=math.exp(-6)):
        super().__init__()
        self.w_mu = nn.Parameter(torch.empty(o, i).uniform_(-0.2, 0.2))
        self.w_rho = nn.Parameter(torch.full((o, i), -5.0))
        self.b_mu = nn.Parameter(torch.zeros(o))
        self.b_rho = nn.Parameter(torch.full((o,), -5.0))
        self.prior = D.MixtureSameFamily(D.Categorical(torch.tensor([pi, 1 - pi])),
                                         D.Normal(torch.zeros(2), torch.tensor([s1, s2])))

    def forward(self, x):
        w_sigma, b_sigma = F.softplus(self.w_rho), F.softplus(self.b_rho)
        # local reparameterization: sample pre-activations
        act_mu = F.linear(x, self.w_mu, self.b_mu)
        act_var = F.linear(x ** 2, w_sigma ** 2, b_sigma ** 2)
        out = act_mu + act_var.sqrt() * torch.randn_like(act_mu)
        w = self.w_mu + w_sigma * torch.randn_like(w_sigma)
        q = D.Normal(self.w_mu, w_sigma)
        self.kl = (q.log_prob(w) - self.prior.log_prob(w)).sum()
        self.kl = self.kl + D.kl_divergence(D.Normal(self.b_mu, b_sigma),
                                            D.Normal(0.0, 1.0)).sum()
        return out


class BNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = BayesLinear(1, 32), BayesLinear(32, 1)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))

    def kl(self):
        return self.l1.kl + self.l2.kl


bnn = BNN()
opt = torch.optim.Adam(bnn.parameters(), lr=1e-2)
for step in range(150):
    nll = -D.Normal(bnn(x), 0.4).log_prob(y).sum()
    loss = nll + bnn.kl() / 1.0 * 0.1
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == 149:
        print(f"bbb {step} nll {nll.item():.4f} kl {bnn.kl().item():.4f}")
with torch.no_grad():
    samples = torch.stack([bnn(xt) for _ in range(50)])
print("bbb mean", samples.mean(0).squeeze(1), "std", samples.std(0).squeeze(1))

# MC dropout
mcd = nn.Sequential(nn.Linear(1, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 64), nn.ReLU(),
                    nn.Dropout(0.1), nn.Linear(64, 2))
opt = torch.optim.Adam(mcd.parameters(), lr=5e-3, weight_decay=1e-4)
gnll = nn.GaussianNLLLoss()
for _ in range(150):
    out = mcd(x)
    loss = gnll(out[:, :1], y, F.softplus(out[:, 1:]) + 1e-4)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("hetero gnll", round(loss.item(), 5))
mcd.train()  # keep dropout on at test time
with torch.no_grad():
    outs = torch.stack([mcd(xt) for _ in range(40)])
mean = outs[..., 0].mean(0)
epi = outs[..., 0].var(0)
alea = (F.softplus(outs[..., 1]) + 1e-4).mean(0)
print("mcd mean", mean, "epistemic", epi, "aleatoric", alea)


# mixture density network
class MDN(nn.Module):
    def __init__(self, k=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, 32), nn.Tanh())
        self.pi, self.mu, self.sig = nn.Linear(32, k), nn.Linear(32, k), nn.Linear(32, k)

    def forward(self, x):
        h = self.body(x)
        mix = D.Categorical(logits=self.pi(h))
        comp = D.Normal(self.mu(h), F.elu(self.sig(h)) + 1 + 1e-3)
        return D.MixtureSameFamily(mix, comp)


mdn = MDN()
opt = torch.optim.Adam(mdn.parameters(), lr=1e-2)
for _ in range(100):
    loss = -mdn(x).log_prob(y.squeeze(1)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
dist = mdn(xt)
print("mdn nll", round(loss.item(), 5), "mean", dist.mean.detach(), "std", dist.stddev.detach())
print("mdn cdf", dist.cdf(torch.zeros(7)).detach())

# last-layer Laplace for a deterministic net (MAP then Hessian of the negative log posterior)
net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for _ in range(200):
    loss = F.mse_loss(net(x), y, reduction="sum") / (2 * 0.3 ** 2) + \
        0.5 * sum((p ** 2).sum() for p in net.parameters())
    opt.zero_grad()
    loss.backward()
    opt.step()
feats = net[:2](x).detach()
last = {k: v.detach() for k, v in net[2].named_parameters()}


def neg_log_post(params):
    pred = functional_call(net[2], params, (feats,))
    return ((pred - y) ** 2).sum() / (2 * 0.3 ** 2) + 0.5 * sum((p ** 2).sum()
                                                                 for p in params.values())


Hd = hessian(neg_log_post)(last)
Hw = Hd["weight"]["weight"].reshape(16, 16)
Hwb = Hd["weight"]["bias"].reshape(16, 1)
Hb = Hd["bias"]["bias"].reshape(1, 1)
Hfull = torch.cat([torch.cat([Hw, Hwb], 1), torch.cat([Hwb.T, Hb], 1)], 0)
Sigma = torch.linalg.inv(Hfull)
phi = torch.cat([net[:2](xt).detach(), torch.ones(7, 1)], 1)
pred_var = (phi @ Sigma * phi).sum(1) + 0.3 ** 2
print("laplace map loss", round(loss.item(), 4), "pred std", pred_var.sqrt())
print("posterior eig range", torch.linalg.eigvalsh(Sigma)[[0, -1]])
