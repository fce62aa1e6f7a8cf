"""PPO on a toy environment written in torch (a 1-d point chasing a target): a shared
actor-critic with a Categorical head and a Normal (tanh-squashed) head, GAE, clipped surrogate,
value clipping, entropy bonus, minibatch epochs, and advantage normalisation."""
import torch
import torch.nn as nn
from torch.distributions import Categorical, Normal

torch.manual_seed(0)
N_ENVS, T, GAMMA, LAM, CLIP = 4, 16, 0.99, 0.95, 0.2


class Env:
    def __init__(self, n):
        self.n = n
        self.reset()

    def reset(self):
        self.pos = torch.zeros(self.n)
        self.target = torch.rand(self.n) * 4 - 2
        self.t = torch.zeros(self.n, dtype=torch.long)
        return self.obs()

    def obs(self):
        return torch.stack([self.pos, self.target, self.target - self.pos], 1)

    def step(self, move, push):
        self.pos = self.pos + (move.float() - 1) * 0.2 + 0.1 * push
        self.t += 1
        dist = (self.target - self.pos).abs()
        reward = -dist + (dist < 0.2).float()
        done = (self.t >= 10) | (dist < 0.1)
        if done.any():
            self.pos[done] = 0.0
            self.target[done] = torch.rand(int(done.sum())) * 4 - 2
            self.t[done] = 0
        return self.obs(), reward, done


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh())
        self.logits = nn.Linear(32, 3)
        self.mu = nn.Linear(32, 1)
        self.log_std = nn.Parameter(torch.full((1,), -0.5))
        self.v = nn.Linear(32, 1)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.orthogonal_(m.weight, gain=2 ** 0.5)
                nn.init.constant_(m.bias, 0.0)
        nn.init.orthogonal_(self.logits.weight, gain=0.01)

    def forward(self, obs):
        h = self.body(obs)
        return (Categorical(logits=self.logits(h)), Normal(self.mu(h).squeeze(-1),
                                                           self.log_std.exp()),
                self.v(h).squeeze(-1))


env = Env(N_ENVS)
net = ActorCritic()
opt = torch.optim.Adam(net.parameters(), lr=3e-3, eps=1e-5)
obs = env.reset()
for update in range(3):
    buf = {k: [] for k in ["obs", "move", "raw", "logp", "val", "rew", "done"]}
    with torch.no_grad():
        for _ in range(T):
            cat, nrm, v = net(obs)
            move = cat.sample()
            raw = nrm.sample()
            logp = cat.log_prob(move) + nrm.log_prob(raw) - torch.log(1 - raw.tanh() ** 2 + 1e-6)
            nobs, r, d = env.step(move, raw.tanh())
            for k, val in zip(buf, [obs, move, raw, logp, v, r, d]):
                buf[k].append(val)
            obs = nobs
        _, _, last_v = net(obs)
    B = {k: torch.stack(v) for k, v in buf.items()}
    adv = torch.zeros(T, N_ENVS)
    gae = torch.zeros(N_ENVS)
    for t in reversed(range(T)):
        nv = last_v if t == T - 1 else B["val"][t + 1]
        nonterm = 1.0 - B["done"][t].float()
        delta = B["rew"][t] + GAMMA * nv * nonterm - B["val"][t]
        gae = delta + GAMMA * LAM * nonterm * gae
        adv[t] = gae
    ret = adv + B["val"]
    flat = {k: v.reshape(T * N_ENVS, *v.shape[2:]) for k, v in B.items()}
    adv_f, ret_f = adv.reshape(-1), ret.reshape(-1)
    stats = []
    for _ in range(2):
        for mb in torch.randperm(T * N_ENVS).split(16):
            cat, nrm, v = net(flat["obs"][mb])
            raw = flat["raw"][mb]
            logp = (cat.log_prob(flat["move"][mb]) + nrm.log_prob(raw)
                    - torch.log(1 - raw.tanh() ** 2 + 1e-6))
            a = adv_f[mb]
            a = (a - a.mean()) / (a.std() + 1e-8)
            ratio = (logp - flat["logp"][mb]).exp()
            pg = torch.max(-a * ratio, -a * ratio.clamp(1 - CLIP, 1 + CLIP)).mean()
            v_clip = flat["val"][mb] + (v - flat["val"][mb]).clamp(-CLIP, CLIP)
            vl = 0.5 * torch.max((v - ret_f[mb]) ** 2, (v_clip - ret_f[mb]) ** 2).mean()
            ent = (cat.entropy() + nrm.entropy()).mean()
            loss = pg + 0.5 * vl - 0.01 * ent
            opt.zero_grad()
            loss.backward()
            gn = nn.utils.clip_grad_norm_(net.parameters(), 0.5)
            opt.step()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - ratio.log()).mean()
                clipfrac = ((ratio - 1).abs() > CLIP).float().mean()
            stats.append([pg.item(), vl.item(), ent.item(), approx_kl.item(), clipfrac.item(),
                          gn.item()])
    s = torch.tensor(stats).mean(0)
    print(update, f"reward {B['rew'].mean().item():.4f}", "episodes", int(B["done"].sum()),
          [round(x, 4) for x in s.tolist()])
print("log_std", round(net.log_std.item(), 5), "probs",
      [round(p, 4) for p in net(obs[:1])[0].probs[0].tolist()])
