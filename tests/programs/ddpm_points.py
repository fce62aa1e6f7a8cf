"""DDPM on 2-D points (a two-moons-like toy set), written the way the diffusion tutorials and
diffusers-style code do: linear and cosine beta schedules (linspace, cumprod, clip), a
sinusoidal timestep embedding, extracting schedule values by t with gather, the epsilon
prediction loss, an EMA copy of the weights (deepcopy + lerp_ / mul_.add_), and ancestral
sampling under torch.inference_mode plus a DDIM sampler under torch.no_grad."""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def linear_beta_schedule(timesteps, beta_start=1e-4, beta_end=0.02):
    scale = 1000 / timesteps
    return torch.linspace(beta_start * scale, beta_end * scale, timesteps, dtype=torch.float64)


def cosine_beta_schedule(timesteps, s=0.008):
    steps = timesteps + 1
    t = torch.linspace(0, timesteps, steps, dtype=torch.float64) / timesteps
    alphas_cumprod = torch.cos((t + s) / (1 + s) * math.pi * 0.5) ** 2
    alphas_cumprod = alphas_cumprod / alphas_cumprod[0]
    betas = 1 - (alphas_cumprod[1:] / alphas_cumprod[:-1])
    return torch.clip(betas, 0, 0.999)


def extract(a, t, x_shape):
    b, *_ = t.shape
    out = a.gather(-1, t)
    return out.reshape(b, *((1,) * (len(x_shape) - 1)))


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim, theta=10000):
        super().__init__()
        self.dim = dim
        self.theta = theta

    def forward(self, x):
        half_dim = self.dim // 2
        emb = math.log(self.theta) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, device=x.device) * -emb)
        emb = x[:, None] * emb[None, :]
        return torch.cat((emb.sin(), emb.cos()), dim=-1)


class Denoiser(nn.Module):
    def __init__(self, dim=64, tdim=16):
        super().__init__()
        self.time_mlp = nn.Sequential(SinusoidalPosEmb(tdim), nn.Linear(tdim, dim), nn.GELU(),
                                      nn.Linear(dim, dim))
        self.inp = nn.Linear(2, dim)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim),
                                                   nn.SiLU()) for _ in range(2)])
        self.out = nn.Linear(dim, 2)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, x, t):
        h = self.inp(x) + self.time_mlp(t.float())
        for blk in self.blocks:
            h = h + blk(h)
        return self.out(h)


T = 100
for name, betas in [("linear", linear_beta_schedule(T)), ("cosine", cosine_beta_schedule(T))]:
    ac = torch.cumprod(1.0 - betas, dim=0)
    print(f"{name}: beta[0]={betas[0].item():.6f} beta[-1]={betas[-1].item():.6f} "
          f"alpha_bar[-1]={ac[-1].item():.6e} snr[50]={(ac[50] / (1 - ac[50])).item():.5f}")

betas = cosine_beta_schedule(T)
alphas = 1.0 - betas
alphas_cumprod = torch.cumprod(alphas, dim=0)
alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.0)
to32 = lambda v: v.to(torch.float32)  # noqa: E731
sqrt_alphas_cumprod = to32(torch.sqrt(alphas_cumprod))
sqrt_one_minus_alphas_cumprod = to32(torch.sqrt(1.0 - alphas_cumprod))
sqrt_recip_alphas = to32(torch.sqrt(1.0 / alphas))
posterior_variance = to32(betas * (1.0 - alphas_cumprod_prev) / (1.0 - alphas_cumprod))
posterior_log_variance_clipped = torch.log(posterior_variance.clamp(min=1e-20))
betas32, alphas_cumprod32 = to32(betas), to32(alphas_cumprod)
print("posterior var", f"{posterior_variance[1].item():.6e}",
      f"{posterior_variance[-1].item():.6f}")


def make_data(n):
    th = torch.rand(n) * math.pi
    top = torch.stack([torch.cos(th), torch.sin(th)], dim=1)
    bot = torch.stack([1 - torch.cos(th), 0.5 - torch.sin(th)], dim=1)
    pts = torch.where((torch.arange(n) % 2 == 0)[:, None], top, bot)
    return (pts + 0.05 * torch.randn(n, 2) - torch.tensor([0.5, 0.25])) / 0.7


def q_sample(x_start, t, noise=None):
    if noise is None:
        noise = torch.randn_like(x_start)
    return (extract(sqrt_alphas_cumprod, t, x_start.shape) * x_start
            + extract(sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise)


data = make_data(512)
print("data mean", [round(v, 4) for v in data.mean(0).tolist()],
      "std", [round(v, 4) for v in data.std(0).tolist()])
model = Denoiser()
ema = copy.deepcopy(model).eval().requires_grad_(False)
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
ema_decay = 0.95

for step in range(120):
    idx = torch.randint(0, data.shape[0], (128,))
    x0 = data[idx]
    t = torch.randint(0, T, (x0.shape[0],), device=x0.device).long()
    noise = torch.randn_like(x0)
    x_noisy = q_sample(x0, t, noise)
    loss = F.mse_loss(model(x_noisy, t), noise)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for p_ema, p in zip(ema.parameters(), model.parameters()):
            p_ema.lerp_(p, 1 - ema_decay) if step % 2 else p_ema.mul_(ema_decay).add_(
                p.detach(), alpha=1 - ema_decay)
    if step % 30 == 0 or step == 119:
        print(f"step {step:3d} loss {loss.item():.5f}")

diff = sum((a - b).abs().sum() for a, b in zip(ema.parameters(), model.parameters()))
print("ema distance", f"{diff.item():.5f}", all(not p.requires_grad for p in ema.parameters()))


@torch.inference_mode()
def p_sample_loop(net, n):
    x = torch.randn(n, 2)
    for i in reversed(range(0, T)):
        t = torch.full((n,), i, dtype=torch.long)
        betas_t = extract(betas32, t, x.shape)
        sqrt_one_minus_t = extract(sqrt_one_minus_alphas_cumprod, t, x.shape)
        model_mean = extract(sqrt_recip_alphas, t, x.shape) * (
            x - betas_t * net(x, t) / sqrt_one_minus_t)
        if i == 0:
            x = model_mean
        else:
            noise = torch.randn_like(x)
            log_var = extract(posterior_log_variance_clipped, t, x.shape)
            x = model_mean + (0.5 * log_var).exp() * noise
    return x


@torch.no_grad()
def ddim_sample(net, n, steps=20, eta=0.0):
    times = torch.linspace(-1, T - 1, steps=steps + 1).int().tolist()[::-1]
    x = torch.randn(n, 2)
    for time, time_next in zip(times[:-1], times[1:]):
        t = torch.full((n,), time, dtype=torch.long)
        eps = net(x, t)
        a = alphas_cumprod32[time]
        x0 = (x - (1 - a).sqrt() * eps) / a.sqrt()
        x0 = x0.clamp(-3.0, 3.0)
        if time_next < 0:
            x = x0
            continue
        a_next = alphas_cumprod32[time_next]
        sigma = eta * ((1 - a / a_next) * (1 - a_next) / (1 - a)).sqrt()
        c = (1 - a_next - sigma ** 2).sqrt()
        x = x0 * a_next.sqrt() + c * eps + sigma * torch.randn_like(x)
    return x


torch.manual_seed(3)
samples = p_sample_loop(ema, 256)
print("inference tensor:", samples.is_inference(), samples.requires_grad)
print("ddpm samples mean", [round(v, 3) for v in samples.mean(0).tolist()],
      "std", [round(v, 3) for v in samples.std(0).tolist()])
samples2 = ddim_sample(ema, 256)
print("ddim samples mean", [round(v, 3) for v in samples2.mean(0).tolist()],
      "std", [round(v, 3) for v in samples2.std(0).tolist()])
print("inside box:", ((samples2.abs() < 3).all(dim=1)).float().mean().item())
