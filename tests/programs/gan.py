"""A tiny GAN learning a 1-d Gaussian mixture."""
import torch
import torch.nn as nn

torch.manual_seed(3)


def real_batch(n):
    comp = torch.randint(0, 2, (n, 1)).float()
    return comp * (2.0 + 0.3 * torch.randn(n, 1)) + (1 - comp) * (-2.0 + 0.3 * torch.randn(n, 1))


G = nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
D = nn.Sequential(nn.Linear(1, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
for m in list(G) + list(D):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, 0.0, 0.3)
        nn.init.constant_(m.bias, 0.0)
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
bce = nn.BCELoss()
batch = 32
ones, zeros = torch.ones(batch, 1), torch.zeros(batch, 1)

for step in range(40):
    # discriminator
    real = real_batch(batch)
    fake = G(torch.randn(batch, 4))
    d_loss = bce(D(torch.cat([real, fake.detach()])), torch.cat([ones, zeros])) * 2
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    # generator
    g_loss = bce(D(fake), ones)
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    if step % 10 == 9:
        print(f"step {step}: d_loss {d_loss.item():.5f} g_loss {g_loss.item():.5f}")

with torch.no_grad():
    samples = G(torch.randn(200, 4))
print(f"fake mean {samples.mean().item():.4f} std {samples.std().item():.4f}")
print("D(real)", D(torch.tensor([[2.0], [-2.0], [0.0]])).view(-1).tolist())
