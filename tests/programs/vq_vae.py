"""VQ-VAE the way the widely shared notebook writes it (after the DeepMind Sonnet example): a conv
encoder with residual stacks, a VectorQuantizer (distances by the expanded square, argmin,
one-hot encodings by scatter_, straight-through estimator, commitment loss, perplexity) and its
EMA variant (cluster sizes and embedding sums decayed in place, Laplace smoothing, nn.Parameter
updated under no_grad), a ConvTranspose2d decoder, reconstruction MSE normalised by the data
variance, Adam with amsgrad=False, and codebook usage statistics."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(42)


class VectorQuantizer(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost):
        super().__init__()
        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings
        self._embedding = nn.Embedding(self._num_embeddings, self._embedding_dim)
        self._embedding.weight.data.uniform_(-1 / self._num_embeddings, 1 / self._num_embeddings)
        self._commitment_cost = commitment_cost

    def forward(self, inputs):
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape
        flat_input = inputs.view(-1, self._embedding_dim)
        distances = (torch.sum(flat_input ** 2, dim=1, keepdim=True)
                     + torch.sum(self._embedding.weight ** 2, dim=1)
                     - 2 * torch.matmul(flat_input, self._embedding.weight.t()))
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings)
        encodings.scatter_(1, encoding_indices, 1)
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)
        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        q_latent_loss = F.mse_loss(quantized, inputs.detach())
        loss = q_latent_loss + self._commitment_cost * e_latent_loss
        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class VectorQuantizerEMA(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost, decay, epsilon=1e-5):
        super().__init__()
        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings
        self._embedding = nn.Embedding(self._num_embeddings, self._embedding_dim)
        self._embedding.weight.data.normal_()
        self._commitment_cost = commitment_cost
        self.register_buffer('_ema_cluster_size', torch.zeros(num_embeddings))
        self._ema_w = nn.Parameter(torch.Tensor(num_embeddings, self._embedding_dim))
        self._ema_w.data.normal_()
        self._decay = decay
        self._epsilon = epsilon

    def forward(self, inputs):
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape
        flat_input = inputs.view(-1, self._embedding_dim)
        distances = torch.cdist(flat_input, self._embedding.weight) ** 2
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = F.one_hot(encoding_indices.squeeze(1), self._num_embeddings).float()
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)
        if self.training:
            self._ema_cluster_size = (self._ema_cluster_size * self._decay
                                      + (1 - self._decay) * torch.sum(encodings, 0))
            n = torch.sum(self._ema_cluster_size.data)
            self._ema_cluster_size = ((self._ema_cluster_size + self._epsilon)
                                      / (n + self._num_embeddings * self._epsilon) * n)
            dw = torch.matmul(encodings.t(), flat_input)
            self._ema_w = nn.Parameter(self._ema_w * self._decay + (1 - self._decay) * dw)
            self._embedding.weight = nn.Parameter(self._ema_w / self._ema_cluster_size.unsqueeze(1))
        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        loss = self._commitment_cost * e_latent_loss
        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class Residual(nn.Module):
    def __init__(self, in_channels, num_residual_hiddens):
        super().__init__()
        self._block = nn.Sequential(
            nn.ReLU(True),
            nn.Conv2d(in_channels, num_residual_hiddens, 3, 1, 1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(num_residual_hiddens, in_channels, 1, 1, bias=False))

    def forward(self, x):
        return x + self._block(x)


class Model(nn.Module):
    def __init__(self, num_hiddens=16, num_embeddings=12, embedding_dim=4, commitment_cost=0.25,
                 decay=0.0):
        super().__init__()
        self._encoder = nn.Sequential(
            nn.Conv2d(1, num_hiddens // 2, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(num_hiddens // 2, num_hiddens, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(num_hiddens, num_hiddens, 3, 1, 1), Residual(num_hiddens, 8), nn.ReLU())
        self._pre_vq_conv = nn.Conv2d(num_hiddens, embedding_dim, 1, 1)
        if decay > 0.0:
            self._vq_vae = VectorQuantizerEMA(num_embeddings, embedding_dim, commitment_cost,
                                              decay)
        else:
            self._vq_vae = VectorQuantizer(num_embeddings, embedding_dim, commitment_cost)
        self._decoder = nn.Sequential(
            nn.Conv2d(embedding_dim, num_hiddens, 3, 1, 1), Residual(num_hiddens, 8), nn.ReLU(),
            nn.ConvTranspose2d(num_hiddens, num_hiddens // 2, 4, 2, 1), nn.ReLU(),
            nn.ConvTranspose2d(num_hiddens // 2, 1, 4, 2, 1))

    def forward(self, x):
        z = self._pre_vq_conv(self._encoder(x))
        loss, quantized, perplexity, encodings = self._vq_vae(z)
        return loss, self._decoder(quantized), perplexity, encodings


yy, xx = torch.meshgrid(torch.linspace(-1, 1, 16), torch.linspace(-1, 1, 16), indexing="ij")


def batch(n):
    c = torch.rand(n, 2, 1, 1) - 0.5
    r = 0.2 + 0.3 * torch.rand(n, 1, 1)
    return ((((xx - c[:, 0]) ** 2 + (yy - c[:, 1]) ** 2) < r ** 2).float()).unsqueeze(1)


data = batch(32)
data_variance = torch.var(data)
print("data", data.shape, round(data_variance.item(), 5))
for decay in (0.0, 0.9):
    torch.manual_seed(0)
    model = Model(decay=decay)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, amsgrad=False)
    model.train()
    for i in range(12):
        x = data[(i * 8) % 32:(i * 8) % 32 + 8]
        optimizer.zero_grad()
        vq_loss, data_recon, perplexity, _ = model(x)
        recon_error = F.mse_loss(data_recon, x) / data_variance
        loss = recon_error + vq_loss
        loss.backward()
        optimizer.step()
        if i % 4 == 3:
            print(f"decay {decay} it {i}: recon {recon_error.item():.5f} vq {vq_loss.item():.5f} "
                  f"perplexity {perplexity.item():.4f}")
    model.eval()
    with torch.no_grad():
        _, recon, perplexity, enc = model(data[:8])
    used = (enc.sum(0) > 0).sum().item()
    print(f"decay {decay} eval recon {F.mse_loss(recon, data[:8]).item():.5f} "
          f"codes used {used} perplexity {perplexity.item():.4f}",
          enc.argmax(1)[:10].tolist())
    if decay > 0:
        vq = model._vq_vae
        print("ema cluster size", round(vq._ema_cluster_size.sum().item(), 4),
              vq._embedding.weight.shape, vq._embedding.weight.requires_grad)
