"""WGAN-GP on 2-D toy data as in the usual reference implementations: gradient penalty by
torch.autograd.grad(create_graph=True) of the critic w.r.t. random interpolates
(torch.rand(B, 1) / (B, 1, 1, 1) alphas, norm(2, dim=1)), n_critic steps with Adam(betas=(0.5,
0.9)), requires_grad toggling, and the tricks pasted around it: register_hook on parameters to
clip their gradients, a custom Function with mark_non_differentiable, set_materialize_grads
(False) and once_differentiable, and a straight-through estimator."""
import torch
import torch.autograd as autograd
import torch.nn as nn
from torch.autograd.function import once_differentiable

torch.manual_seed(0)


def sample_real(n):
    centers = torch.tensor([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0], [0.0, -2.0]])
    return centers[torch.randint(0, 4, (n,))] + 0.1 * torch.randn(n, 2)


G = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 32), nn.LeakyReLU(0.2),
                  nn.Linear(32, 1))
optimizer_G = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.9))
optimizer_D = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.9))
lambda_gp = 10
n_critic = 3
batch_size = 32


def compute_gradient_penalty(D, real_samples, fake_samples):
    """Calculates the gradient penalty loss for WGAN GP"""
    # Random weight term for interpolation between real and fake samples
    alpha = torch.rand(real_samples.size(0), 1)
    # Get random interpolation between real and fake samples
    interpolates = (alpha * real_samples + ((1 - alpha) * fake_samples)).requires_grad_(True)
    d_interpolates = D(interpolates)
    fake = torch.ones(real_samples.shape[0], 1, requires_grad=False)
    # Get gradient w.r.t. interpolates
    gradients = autograd.grad(
        outputs=d_interpolates,
        inputs=interpolates,
        grad_outputs=fake,
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]
    gradients = gradients.view(gradients.size(0), -1)
    gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
    return gradient_penalty


for it in range(8):
    for p in D.parameters():
        p.requires_grad = True
    for _ in range(n_critic):
        real = sample_real(batch_size)
        z = torch.randn(batch_size, 4)
        fake = G(z).detach()
        optimizer_D.zero_grad()
        gp = compute_gradient_penalty(D, real, fake)
        d_loss = -torch.mean(D(real)) + torch.mean(D(fake)) + lambda_gp * gp
        d_loss.backward()
        optimizer_D.step()
    for p in D.parameters():
        p.requires_grad = False      # the generator step does not accumulate critic grads
    before = [p.grad.clone() for p in D.parameters()]
    optimizer_G.zero_grad()
    g_loss = -torch.mean(D(G(torch.randn(batch_size, 4))))
    g_loss.backward()
    optimizer_G.step()
    same = all(torch.equal(b, p.grad) for b, p in zip(before, D.parameters()))
    print(f"[it {it}] D loss {d_loss.item():.5f} GP {gp.item():.5f} G loss {g_loss.item():.5f}"
          f" critic grads untouched {same}")

# the image-shaped variant: alpha of shape (B, 1, 1, 1) broadcast over C, H, W
conv_D = nn.Sequential(nn.Conv2d(1, 4, 3), nn.LeakyReLU(0.2), nn.Flatten(),
                       nn.Linear(4 * 4 * 4, 1))
real_img, fake_img = torch.randn(5, 1, 6, 6), torch.randn(5, 1, 6, 6)
alpha = torch.rand(5, 1, 1, 1)
inter = (alpha * real_img + (1 - alpha) * fake_img).requires_grad_(True)
grads = autograd.grad(conv_D(inter).sum(), inter, create_graph=True)[0]
gp_img = ((grads.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
gp_img.backward()
print("image gp", round(gp_img.item(), 6),
      "conv grad", round(conv_D[0].weight.grad.norm().item(), 6))

# clipping gradients with hooks on the parameters (the hook's return value replaces the grad)
net = nn.Linear(3, 2)
handles = [p.register_hook(lambda g: g.clamp(-0.1, 0.1)) for p in net.parameters()]
net(torch.randn(8, 3) * 10).pow(2).sum().backward()
print("hook-clipped", net.weight.grad.abs().max().item(), net.bias.grad.tolist())
for h in handles:
    h.remove()
net.zero_grad()
net(torch.ones(1, 3)).sum().backward()
print("after remove", net.weight.grad.tolist())
seen = []
net.weight.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.sum().item()))
net(torch.ones(1, 3)).sum().backward()
print("post accumulate", seen)


class SortWithIndex(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, idx = x.sort(dim=-1)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return values, idx

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_values, grad_idx):
        idx, = ctx.saved_tensors
        return torch.zeros_like(grad_values).scatter(-1, idx, grad_values)


x = torch.tensor([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]], requires_grad=True)
vals, idx = SortWithIndex.apply(x)
print("idx requires grad", idx.requires_grad, "vals", vals.requires_grad)
(vals * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
print("sort grad", x.grad.tolist())
try:
    y = SortWithIndex.apply(x)[0]
    g, = autograd.grad(y.pow(2).sum(), x, create_graph=True)
    g.sum().backward()
except RuntimeError as e:
    print("once_differentiable:", str(e)[:50])


class Scale2(autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.set_materialize_grads(False)
        return a * 2, b * 3

    @staticmethod
    def backward(ctx, ga, gb):
        print("  backward sees", None if ga is None else ga.tolist(),
              None if gb is None else gb.tolist())
        return (None if ga is None else ga * 2), (None if gb is None else gb * 3)


a = torch.ones(2, requires_grad=True)
b = torch.ones(2, requires_grad=True)
oa, ob = Scale2.apply(a, b)
oa.sum().backward()                  # ob unused: its gradient arrives as None
print("materialize off", a.grad.tolist(), b.grad)


class StraightThrough(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, g):
        return g


w = torch.tensor([0.2, 1.7, -0.6], requires_grad=True)
q = StraightThrough.apply(w)
(q * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
print("ste", q.tolist(), w.grad.tolist())
w2 = w.detach().clone().requires_grad_()
(w2 + (w2.round() - w2).detach()).sum().backward()
print("detach trick", w2.grad.tolist())
