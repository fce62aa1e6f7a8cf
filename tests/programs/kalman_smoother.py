"""Linear-Gaussian state-space models as in time-series lecture notes: a Kalman filter written
with linalg.solve / cholesky / cholesky_solve / solve_triangular, the exact log-likelihood
through slogdet and the prediction-error decomposition, a Rauch-Tung-Striebel smoother,
maximum-likelihood noise parameters by gradient through the filter (LBFGS), and a check against
the dense joint Gaussian (MultivariateNormal over the whole series)."""

import math
import torch
import torch.distributions as D

torch.manual_seed(3)
torch.set_default_dtype(torch.float64)

dt = 0.1
F = torch.tensor([[1.0, dt], [0.0, 1.0]])          # constant velocity
H = torch.tensor([[1.0, 0.0]])
q_true, r_true = 0.5, 0.2
Q = q_true * torch.tensor([[dt ** 3 / 3, dt ** 2 / 2], [dt ** 2 / 2, dt]])
T = 30
xs = [torch.zeros(2)]
for _ in range(T - 1):
    xs.append(F @ xs[-1] + torch.linalg.cholesky(Q) @ torch.randn(2))
xs = torch.stack(xs)
ys = xs @ H.T + math.sqrt(r_true) * torch.randn(T, 1)
print("data", ys[:4].squeeze(-1), xs[-1])


def kalman(ys, q, r, m0=torch.zeros(2), P0=torch.eye(2)):
    Qm = q * torch.tensor([[dt ** 3 / 3, dt ** 2 / 2], [dt ** 2 / 2, dt]])
    R = r * torch.eye(1)
    m, P = m0, P0
    ll = torch.zeros(())
    ms, Ps, mps, Pps = [], [], [], []
    for t in range(len(ys)):
        if t > 0:
            m = F @ m
            P = F @ P @ F.T + Qm
        mps.append(m)
        Pps.append(P)
        S = H @ P @ H.T + R
        v = ys[t] - H @ m
        Ls = torch.linalg.cholesky(S)
        K = torch.cholesky_solve(H @ P, Ls).T          # P H^T S^-1
        alpha = torch.linalg.solve_triangular(Ls, v.unsqueeze(-1), upper=False)
        ll = ll - 0.5 * (alpha.pow(2).sum() + 2 * Ls.diagonal().log().sum() + math.log(2 * math.pi))
        m = m + K @ v
        P = (torch.eye(2) - K @ H) @ P
        P = 0.5 * (P + P.T)
        ms.append(m)
        Ps.append(P)
    return ll, torch.stack(ms), torch.stack(Ps), torch.stack(mps), torch.stack(Pps)


ll, ms, Ps, mps, Pps = kalman(ys, q_true, r_true)
print("filter", round(ll.item(), 8), ms[-1], Ps[-1].diagonal())

# RTS smoother
msm, Psm = [ms[-1]], [Ps[-1]]
for t in range(T - 2, -1, -1):
    G = torch.linalg.solve(Pps[t + 1], F @ Ps[t]).T     # P_t F^T Pp^-1 (Pp symmetric)
    msm.insert(0, ms[t] + G @ (msm[0] - mps[t + 1]))
    Psm.insert(0, Ps[t] + G @ (Psm[0] - Pps[t + 1]) @ G.T)
msm, Psm = torch.stack(msm), torch.stack(Psm)
print("smoother", msm[0], Psm[0].diagonal(), round((msm - xs).pow(2).mean().item(), 8))
print("smoothed <= filtered var", bool((Psm[:, 0, 0] <= Ps[:, 0, 0] + 1e-12).all()))

# the same likelihood from the joint Gaussian of y_1..y_T
A = torch.zeros(T, 2)
cov_x = []
P = torch.eye(2)
for t in range(T):
    if t > 0:
        P = F @ P @ F.T + Q
    cov_x.append(P)
Phi = torch.stack([torch.linalg.matrix_power(F, t) for t in range(T)])     # x_t = F^t x_0 + ...
Kxx = torch.zeros(T, T)
for s in range(T):
    for t in range(s, T):
        c = (H @ torch.linalg.matrix_power(F, t - s) @ cov_x[s] @ H.T).squeeze()
        Kxx[s, t] = c
        Kxx[t, s] = c
Kyy = Kxx + r_true * torch.eye(T)
joint = D.MultivariateNormal(torch.zeros(T), covariance_matrix=Kyy)
sign, logabsdet = torch.linalg.slogdet(Kyy)
quad = ys.squeeze(-1) @ torch.linalg.solve(Kyy, ys.squeeze(-1))
print("joint", round(joint.log_prob(ys.squeeze(-1)).item(), 8),
      round((-0.5 * (quad + logabsdet + T * math.log(2 * math.pi))).item(), 8), sign.item())
print("Phi", Phi.shape, Phi[3], torch.linalg.cond(Kyy).item() > 1)

# maximum likelihood for the noise levels through the filter
log_q = torch.tensor(0.0, requires_grad=True)
log_r = torch.tensor(0.0, requires_grad=True)
opt = torch.optim.LBFGS([log_q, log_r], lr=0.5, max_iter=15, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    nll = -kalman(ys, log_q.exp(), log_r.exp())[0]
    nll.backward()
    return nll


for _ in range(2):
    nll = opt.step(closure)
print("mle", round(nll.item(), 6), round(log_q.exp().item(), 4), round(log_r.exp().item(), 4))
g = torch.autograd.grad(kalman(ys, log_q.exp(), log_r.exp())[0], [log_q, log_r])
print("grad at optimum", max(abs(v.item()) for v in g) < 1e-3)
