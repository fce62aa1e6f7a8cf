"""REINFORCE on a toy bandit-like environment with a softmax policy (no distributions)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(9)
policy = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 3))
opt = torch.optim.Adam(policy.parameters(), lr=0.02)
true_w = torch.randn(4, 3)
baseline = 0.0
for ep in range(30):
    states = torch.randn(16, 4)
    logits = policy(states)
    probs = F.softmax(logits, -1)
    actions = torch.multinomial(probs, 1).squeeze(1)
    rewards = (states @ true_w).gather(1, actions.unsqueeze(1)).squeeze(1)
    logp = F.log_softmax(logits, -1).gather(1, actions.unsqueeze(1)).squeeze(1)
    adv = rewards - baseline
    baseline = 0.9 * baseline + 0.1 * rewards.mean().item()
    entropy = -(probs * probs.clamp_min(1e-8).log()).sum(-1).mean()
    loss = -(logp * adv.detach()).mean() - 0.01 * entropy
    opt.zero_grad()
    loss.backward()
    opt.step()
    if ep % 10 == 0:
        print(ep, round(rewards.mean().item(), 4), actions[:6].tolist(), round(entropy.item(), 5))
with torch.no_grad():
    s = torch.randn(8, 4)
    print((policy(s).argmax(1) == (s @ true_w).argmax(1)).float().mean().item())
print(torch.bernoulli(torch.full((5,), 0.3)).tolist(), torch.normal(torch.zeros(3), 1.0).shape)
print(
    torch.randint_like(torch.zeros(4), 0, 10).tolist(),
    torch.rand(2, generator=torch.Generator().manual_seed(1)),
)
