"""A class-conditional diffusion model on 8x8 images in the style of diffusers training
scripts: a small UNet (GroupNorm, SiLU, timestep embedding added per ResNet block, a spatial
self-attention block through scaled_dot_product_attention, Downsample by strided conv and
Upsample by F.interpolate), label dropout for classifier-free guidance with a null class, an EMA
kept with torch._foreach ops and one with torch.optim.swa_utils.AveragedModel
(get_ema_multi_avg_fn), a DDIM scheduler whose timesteps come from NumPy (set_timesteps), CFG
sampling with torch.cat([x] * 2) / chunk(2) and a seeded torch.Generator, and the images
post-processed to uint8 NumPy arrays."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

torch.manual_seed(0)
NUM_CLASSES, SIZE = 3, 8


def get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=True, downscale_freq_shift=0,
                           max_period=10000):
    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(start=0, end=half_dim, dtype=torch.float32,
                                                    device=timesteps.device)
    exponent = exponent / (half_dim - downscale_freq_shift)
    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
    return emb


class ResnetBlock2D(nn.Module):
    def __init__(self, in_channels, out_channels, temb_channels, groups=4):
        super().__init__()
        self.norm1 = nn.GroupNorm(num_groups=groups, num_channels=in_channels, eps=1e-6,
                                  affine=True)
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = nn.GroupNorm(num_groups=groups, num_channels=out_channels, eps=1e-6)
        self.dropout = nn.Dropout(0.0)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.nonlinearity = nn.SiLU()
        self.conv_shortcut = (nn.Conv2d(in_channels, out_channels, kernel_size=1)
                              if in_channels != out_channels else None)

    def forward(self, input_tensor, temb):
        hidden_states = self.nonlinearity(self.norm1(input_tensor))
        hidden_states = self.conv1(hidden_states)
        temb = self.time_emb_proj(self.nonlinearity(temb))[:, :, None, None]
        hidden_states = self.nonlinearity(self.norm2(hidden_states + temb))
        hidden_states = self.conv2(self.dropout(hidden_states))
        if self.conv_shortcut is not None:
            input_tensor = self.conv_shortcut(input_tensor)
        return input_tensor + hidden_states


class AttnBlock(nn.Module):
    def __init__(self, channels, heads=2, groups=4):
        super().__init__()
        self.heads = heads
        self.group_norm = nn.GroupNorm(groups, channels, eps=1e-6)
        self.to_q = nn.Linear(channels, channels)
        self.to_k = nn.Linear(channels, channels)
        self.to_v = nn.Linear(channels, channels)
        self.to_out = nn.ModuleList([nn.Linear(channels, channels), nn.Dropout(0.0)])

    def forward(self, hidden_states):
        residual = hidden_states
        batch, channel, height, width = hidden_states.shape
        hidden_states = self.group_norm(hidden_states)
        hidden_states = hidden_states.view(batch, channel, height * width).transpose(1, 2)
        q, k, v = self.to_q(hidden_states), self.to_k(hidden_states), self.to_v(hidden_states)
        head_dim = channel // self.heads
        q = q.view(batch, -1, self.heads, head_dim).transpose(1, 2)
        k = k.view(batch, -1, self.heads, head_dim).transpose(1, 2)
        v = v.view(batch, -1, self.heads, head_dim).transpose(1, 2)
        hidden_states = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=False)
        hidden_states = hidden_states.transpose(1, 2).reshape(batch, -1, self.heads * head_dim)
        hidden_states = self.to_out[1](self.to_out[0](hidden_states))
        hidden_states = hidden_states.transpose(-1, -2).reshape(batch, channel, height, width)
        return hidden_states + residual


class TinyUNet(nn.Module):
    def __init__(self, ch=8, temb=32):
        super().__init__()
        self.ch = ch
        self.time_embedding = nn.Sequential(nn.Linear(ch, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.class_embedding = nn.Embedding(NUM_CLASSES + 1, temb)     # last row: null class
        self.conv_in = nn.Conv2d(1, ch, 3, padding=1)
        self.down1 = ResnetBlock2D(ch, ch, temb)
        self.downsample = nn.Conv2d(ch, ch, 3, stride=2, padding=1)
        self.mid = ResnetBlock2D(ch, 2 * ch, temb)
        self.mid_attn = AttnBlock(2 * ch)
        self.up1 = ResnetBlock2D(2 * ch + ch, ch, temb)
        self.upsample_conv = nn.Conv2d(ch, ch, 3, padding=1)
        self.conv_norm_out = nn.GroupNorm(4, ch)
        self.conv_out = nn.Conv2d(ch, 1, 3, padding=1)

    def forward(self, sample, timestep, class_labels):
        if not torch.is_tensor(timestep):
            timestep = torch.tensor([timestep], dtype=torch.long, device=sample.device)
        elif timestep.dim() == 0:
            timestep = timestep[None].to(sample.device)
        timesteps = timestep.expand(sample.shape[0])
        emb = self.time_embedding(get_timestep_embedding(timesteps, self.ch).to(sample.dtype))
        emb = emb + self.class_embedding(class_labels)
        h0 = self.conv_in(sample)
        h1 = self.down1(h0, emb)
        h = self.mid_attn(self.mid(self.downsample(h1), emb))
        h = F.interpolate(h, scale_factor=2.0, mode="nearest")
        h = self.up1(torch.cat([h, h1], dim=1), emb)
        h = self.upsample_conv(h)
        return self.conv_out(F.silu(self.conv_norm_out(h)))


class DDIMScheduler:
    def __init__(self, num_train_timesteps=100, beta_start=1e-4, beta_end=0.02,
                 beta_schedule="scaled_linear"):
        self.num_train_timesteps = num_train_timesteps
        if beta_schedule == "scaled_linear":
            self.betas = torch.linspace(beta_start ** 0.5, beta_end ** 0.5, num_train_timesteps,
                                        dtype=torch.float32) ** 2
        else:
            self.betas = torch.linspace(beta_start, beta_end, num_train_timesteps,
                                        dtype=torch.float32)
        self.betas = self.betas * (1000 / num_train_timesteps)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)
        self.final_alpha_cumprod = torch.tensor(1.0)
        self.timesteps = torch.from_numpy(np.arange(0, num_train_timesteps)[::-1].copy()
                                          .astype(np.int64))

    def add_noise(self, original_samples, noise, timesteps):
        alphas_cumprod = self.alphas_cumprod.to(device=original_samples.device,
                                                dtype=original_samples.dtype)
        sqrt_alpha_prod = alphas_cumprod[timesteps] ** 0.5
        sqrt_alpha_prod = sqrt_alpha_prod.flatten()
        while len(sqrt_alpha_prod.shape) < len(original_samples.shape):
            sqrt_alpha_prod = sqrt_alpha_prod.unsqueeze(-1)
        sqrt_one_minus_alpha_prod = (1 - alphas_cumprod[timesteps]) ** 0.5
        sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.flatten()
        while len(sqrt_one_minus_alpha_prod.shape) < len(original_samples.shape):
            sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.unsqueeze(-1)
        return sqrt_alpha_prod * original_samples + sqrt_one_minus_alpha_prod * noise

    def set_timesteps(self, num_inference_steps):
        self.num_inference_steps = num_inference_steps
        step_ratio = self.num_train_timesteps // num_inference_steps
        timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()[::-1].copy()
        self.timesteps = torch.from_numpy(timesteps.astype(np.int64))

    def step(self, model_output, timestep, sample, eta=0.0, generator=None):
        prev_timestep = timestep - self.num_train_timesteps // self.num_inference_steps
        alpha_prod_t = self.alphas_cumprod[timestep]
        alpha_prod_t_prev = (self.alphas_cumprod[prev_timestep] if prev_timestep >= 0
                             else self.final_alpha_cumprod)
        beta_prod_t = 1 - alpha_prod_t
        pred_original_sample = (sample - beta_prod_t ** 0.5 * model_output) / alpha_prod_t ** 0.5
        pred_original_sample = pred_original_sample.clamp(-1.0, 1.0)
        pred_epsilon = (sample - alpha_prod_t ** 0.5 * pred_original_sample) / beta_prod_t ** 0.5
        variance = (1 - alpha_prod_t_prev) / (1 - alpha_prod_t) * (
            1 - alpha_prod_t / alpha_prod_t_prev)
        std_dev_t = eta * variance ** 0.5
        pred_sample_direction = (1 - alpha_prod_t_prev - std_dev_t ** 2) ** 0.5 * pred_epsilon
        prev_sample = alpha_prod_t_prev ** 0.5 * pred_original_sample + pred_sample_direction
        if eta > 0:
            noise = torch.randn(model_output.shape, generator=generator, dtype=model_output.dtype)
            prev_sample = prev_sample + std_dev_t * noise
        return prev_sample, pred_original_sample


def make_images(labels):
    """Class 0: a horizontal bar, 1: a vertical bar, 2: a box; in [-1, 1]."""
    imgs = -torch.ones(labels.shape[0], 1, SIZE, SIZE)
    pos = torch.randint(2, 6, (labels.shape[0],))
    for i, (c, p) in enumerate(zip(labels.tolist(), pos.tolist())):
        if c == 0:
            imgs[i, 0, p - 1:p + 1, 1:-1] = 1.0
        elif c == 1:
            imgs[i, 0, 1:-1, p - 1:p + 1] = 1.0
        else:
            imgs[i, 0, 2:6, 2:6] = 1.0
            imgs[i, 0, 3:5, 3:5] = -1.0
    return imgs


model = TinyUNet()
print("unet params", sum(p.numel() for p in model.parameters() if p.requires_grad))
scheduler = DDIMScheduler()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
    optimizer, lambda step: min(1.0, (step + 1) / 5) * 0.5 * (1 + math.cos(math.pi * step / 40)))
ema_params = [p.clone().detach() for p in model.parameters()]
swa_ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
cond_drop_prob = 0.2

for step in range(40):
    labels = torch.randint(0, NUM_CLASSES, (16,))
    clean_images = make_images(labels)
    noise = torch.randn(clean_images.shape, device=clean_images.device)
    bsz = clean_images.shape[0]
    timesteps = torch.randint(0, scheduler.num_train_timesteps, (bsz,),
                              device=clean_images.device).long()
    noisy_images = scheduler.add_noise(clean_images, noise, timesteps)
    drop = torch.rand(bsz) < cond_drop_prob
    cond = torch.where(drop, torch.full_like(labels, NUM_CLASSES), labels)
    noise_pred = model(noisy_images, timesteps, cond)
    loss = F.mse_loss(noise_pred.float(), noise.float(), reduction="mean")
    loss.backward()
    grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    lr_scheduler.step()
    optimizer.zero_grad()
    with torch.no_grad():
        params = list(model.parameters())
        one_minus_decay = 1 - min(0.9, (1 + step) / (10 + step))
        torch._foreach_sub_(ema_params, torch._foreach_sub(ema_params, params),
                            alpha=one_minus_decay)
    swa_ema.update_parameters(model)
    if step % 10 == 0 or step == 39:
        print(f"step {step:2d} loss {loss.item():.5f} grad_norm {grad_norm.item():.4f} "
              f"lr {lr_scheduler.get_last_lr()[0]:.6f} dropped {int(drop.sum())}")

print("swa n_averaged", int(swa_ema.n_averaged), "ema gap",
      f"{sum((a - b).abs().sum() for a, b in zip(ema_params, model.parameters())).item():.4f}")
with torch.no_grad():
    for p, e in zip(model.parameters(), ema_params):
        p.copy_(e)
model.eval()


@torch.no_grad()
def sample(net, class_labels, guidance_scale=3.0, steps=10, eta=0.0, seed=0):
    generator = torch.Generator().manual_seed(seed)
    latents = torch.randn((class_labels.shape[0], 1, SIZE, SIZE), generator=generator)
    scheduler.set_timesteps(steps)
    null = torch.full_like(class_labels, NUM_CLASSES)
    for t in scheduler.timesteps:
        latent_model_input = torch.cat([latents] * 2)
        noise_pred = net(latent_model_input, t, torch.cat([null, class_labels]))
        noise_pred_uncond, noise_pred_cond = noise_pred.chunk(2)
        noise_pred = noise_pred_uncond + guidance_scale * (noise_pred_cond - noise_pred_uncond)
        latents, x0 = scheduler.step(noise_pred, t, latents, eta=eta, generator=generator)
    return latents


print("inference timesteps", scheduler.set_timesteps(10) or scheduler.timesteps.tolist())
labels = torch.tensor([0, 1, 2])
for scale, eta in ((1.0, 0.0), (3.0, 0.0), (3.0, 1.0)):
    image = sample(model, labels, guidance_scale=scale, eta=eta)
    image = (image / 2 + 0.5).clamp(0, 1)
    image = image.cpu().permute(0, 2, 3, 1).float().numpy()
    images = (image * 255).round().astype("uint8")
    print(f"cfg {scale} eta {eta}: shape {images.shape} dtype {images.dtype} "
          f"mean {images.mean():.2f} per class {[int(v) for v in images.reshape(3, -1).sum(1)]}")
with torch.no_grad():
    out = swa_ema.module(torch.zeros(2, 1, SIZE, SIZE), torch.tensor(5), torch.tensor([0, 3]))
print("averaged model output", tuple(out.shape), f"{out.abs().mean().item():.5f}")
