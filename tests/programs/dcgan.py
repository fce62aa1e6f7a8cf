"""DCGAN in the shape of the official tutorial, shrunk: a ConvTranspose2d generator (stride,
padding, output_padding), a strided-conv discriminator with BatchNorm2d and LeakyReLU,
weights_init through ``model.apply`` keyed on the class name, BCELoss against labels made with
``torch.full``, Adam with betas=(0.5, 0.999) and a fixed noise vector for progress images."""

import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(999)

nz, ngf, ndf, nc = 8, 8, 8, 1
batch_size = 16
real_label, fake_label = 1.0, 0.0


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            # nz x 1 x 1 -> (ngf*2) x 4 x 4
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # -> ngf x 7 x 7 (output_padding picks the odd size)
            nn.ConvTranspose2d(ngf * 2, ngf, 3, 2, 1, output_padding=0, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            # -> nc x 14 x 14
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 3, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input)


netG = Generator()
netG.apply(weights_init)
netD = Discriminator()
netD.apply(weights_init)
print(netG.main[0].weight.shape, netD.main[3].weight.data[:3])

# the odd sizes output_padding produces
up = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1)
print(up(torch.randn(1, 2, 5, 5)).shape,
      up(torch.randn(1, 2, 5, 5), output_size=[9, 9]).shape)
up2 = nn.ConvTranspose2d(2, 2, (3, 5), stride=(2, 3), padding=(0, 2), output_padding=(1, 2),
                         dilation=(1, 1), groups=2)
print(up2(torch.randn(2, 2, 4, 3)).shape)

# "real" data: 14x14 blobs in [-1, 1]
yy, xx = torch.meshgrid(torch.arange(14.0), torch.arange(14.0), indexing="ij")


def real_batch(n):
    cy = 4 + 6 * torch.rand(n, 1, 1)
    cx = 4 + 6 * torch.rand(n, 1, 1)
    img = torch.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 8.0)
    return (img * 2 - 1).unsqueeze(1)


criterion = nn.BCELoss()
fixed_noise = torch.randn(4, nz, 1, 1)
optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
G_losses, D_losses = [], []

for i in range(12):
    # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
    netD.zero_grad()
    real_cpu = real_batch(batch_size)
    b_size = real_cpu.size(0)
    label = torch.full((b_size,), real_label, dtype=torch.float)
    output = netD(real_cpu).view(-1)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()

    noise = torch.randn(b_size, nz, 1, 1)
    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach()).view(-1)
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()

    # (2) Update G network: maximize log(D(G(z)))
    netG.zero_grad()
    label.fill_(real_label)
    output = netD(fake).view(-1)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()

    G_losses.append(errG.item())
    D_losses.append(errD.item())
    if i % 3 == 0:
        print(f'[{i}/12]\tLoss_D: {errD.item():.4f}\tLoss_G: {errG.item():.4f}\t'
              f'D(x): {D_x:.4f}\tD(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}')

with torch.no_grad():
    fake = netG(fixed_noise).detach().cpu()
print(fake.shape, round(fake.mean().item(), 4), round(fake.std().item(), 4))
print("running stats", netG.main[1].running_var[:3], netD.main[3].num_batches_tracked)
netG.eval()
with torch.no_grad():
    print("eval", round(netG(fixed_noise).abs().mean().item(), 4))
print(f"mean losses {sum(G_losses) / len(G_losses):.4f} {sum(D_losses) / len(D_losses):.4f}")
