"""A variational autoencoder with the reparameterization trick on synthetic data."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(7)
data = torch.sigmoid(torch.randn(128, 2) @ torch.randn(2, 16))   # values in (0, 1)


class VAE(nn.Module):
    def __init__(self, d=16, h=12, z=2):
        super().__init__()
        self.enc = nn.Linear(d, h)
        self.mu = nn.Linear(h, z)
        self.logvar = nn.Linear(h, z)
        self.dec1 = nn.Linear(z, h)
        self.dec2 = nn.Linear(h, d)

    def encode(self, x):
        h = F.relu(self.enc(x))
        return self.mu(h), self.logvar(h)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.dec2(F.relu(self.dec1(z))))

    def forward(self, x):
        mu, logvar = self.encode(x)
        return self.decode(self.reparameterize(mu, logvar)), mu, logvar


def loss_function(recon, x, mu, logvar):
    bce = F.binary_cross_entropy(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld, bce, kld


model = VAE()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(5):
    model.train()
    total = 0.0
    for i in range(0, 128, 32):
        batch = data[i:i + 32]
        optimizer.zero_grad()
        recon, mu, logvar = model(batch)
        loss, bce, kld = loss_function(recon, batch, mu, logvar)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total / 128:.5f} (bce {bce.item():.4f}, kld {kld.item():.4f})")

model.eval()
with torch.no_grad():
    z = torch.randn(3, 2)
    samples = model.decode(z)
    mu, logvar = model.encode(data[:4])
print("samples", samples[:, :4].numpy().round(4).tolist())
print("mu", mu.numpy().round(4).tolist())
print("sigma", torch.exp(0.5 * logvar).mean().item())
