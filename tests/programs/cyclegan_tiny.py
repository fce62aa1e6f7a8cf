"""CycleGAN in the shape of the widely copied pytorch-CycleGAN-and-pix2pix code, shrunk: a
ResNet generator (ReflectionPad2d, InstanceNorm2d, ConvTranspose2d with output_padding=1,
residual blocks with Dropout), a PatchGAN discriminator, init_weights via net.apply with a
gain, the LSGAN (MSE) objective against labels expanded to the prediction's shape, cycle and
identity L1 losses, an ImagePool of past fakes, set_requires_grad toggling, and a LambdaLR
linear decay."""

import itertools
import random

import torch
import torch.nn as nn
from torch.nn import init
from torch.optim import lr_scheduler

torch.manual_seed(0)
random.seed(0)
# float64: instance norm over 4x4 maps amplifies float32 rounding (conv kernels summing in
# another order) ~10x per block, and the adversarial game lets it grow to 1e-2 in a few steps
torch.set_default_dtype(torch.float64)


class ResnetBlock(nn.Module):
    def __init__(self, dim, use_dropout):
        super().__init__()
        layers = [nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3, bias=True),
                  nn.InstanceNorm2d(dim), nn.ReLU(True)]
        if use_dropout:
            layers += [nn.Dropout(0.5)]
        layers += [nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3, bias=True),
                   nn.InstanceNorm2d(dim)]
        self.conv_block = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv_block(x)


class ResnetGenerator(nn.Module):
    def __init__(self, input_nc, output_nc, ngf=4, n_blocks=2, use_dropout=True):
        super().__init__()
        model = [nn.ReflectionPad2d(3), nn.Conv2d(input_nc, ngf, 7, padding=0, bias=True),
                 nn.InstanceNorm2d(ngf), nn.ReLU(True)]
        n_down = 2
        for i in range(n_down):
            mult = 2 ** i
            model += [nn.Conv2d(ngf * mult, ngf * mult * 2, 3, stride=2, padding=1, bias=True),
                      nn.InstanceNorm2d(ngf * mult * 2), nn.ReLU(True)]
        mult = 2 ** n_down
        for _ in range(n_blocks):
            model += [ResnetBlock(ngf * mult, use_dropout)]
        for i in range(n_down):
            mult = 2 ** (n_down - i)
            model += [nn.ConvTranspose2d(ngf * mult, int(ngf * mult / 2), 3, stride=2,
                                         padding=1, output_padding=1, bias=True),
                      nn.InstanceNorm2d(int(ngf * mult / 2)), nn.ReLU(True)]
        model += [nn.ReflectionPad2d(3), nn.Conv2d(ngf, output_nc, 7, padding=0), nn.Tanh()]
        self.model = nn.Sequential(*model)

    def forward(self, input):
        return self.model(input)


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc, ndf=4, n_layers=2):
        super().__init__()
        kw, padw = 4, 1
        sequence = [nn.Conv2d(input_nc, ndf, kw, stride=2, padding=padw), nn.LeakyReLU(0.2, True)]
        nf_mult = 1
        for n in range(1, n_layers):
            nf_mult_prev, nf_mult = nf_mult, min(2 ** n, 8)
            sequence += [nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kw, stride=2, padding=padw),
                         nn.InstanceNorm2d(ndf * nf_mult), nn.LeakyReLU(0.2, True)]
        sequence += [nn.Conv2d(ndf * nf_mult, 1, kw, stride=1, padding=padw)]
        self.model = nn.Sequential(*sequence)

    def forward(self, input):
        return self.model(input)


def init_weights(net, init_type='normal', init_gain=0.02):
    def init_func(m):
        classname = m.__class__.__name__
        if hasattr(m, 'weight') and (classname.find('Conv') != -1
                                     or classname.find('Linear') != -1):
            if init_type == 'normal':
                init.normal_(m.weight.data, 0.0, init_gain)
            elif init_type == 'xavier':
                init.xavier_normal_(m.weight.data, gain=init_gain)
            elif init_type == 'kaiming':
                init.kaiming_normal_(m.weight.data, a=0, mode='fan_in')
            if hasattr(m, 'bias') and m.bias is not None:
                init.constant_(m.bias.data, 0.0)
        elif classname.find('BatchNorm2d') != -1:
            init.normal_(m.weight.data, 1.0, init_gain)
            init.constant_(m.bias.data, 0.0)
    net.apply(init_func)
    return net


class GANLoss(nn.Module):
    def __init__(self, target_real_label=1.0, target_fake_label=0.0):
        super().__init__()
        self.register_buffer('real_label', torch.tensor(target_real_label))
        self.register_buffer('fake_label', torch.tensor(target_fake_label))
        self.loss = nn.MSELoss()

    def get_target_tensor(self, prediction, target_is_real):
        target_tensor = self.real_label if target_is_real else self.fake_label
        return target_tensor.expand_as(prediction)

    def __call__(self, prediction, target_is_real):
        return self.loss(prediction, self.get_target_tensor(prediction, target_is_real))


class ImagePool:
    def __init__(self, pool_size):
        self.pool_size = pool_size
        self.num_imgs = 0
        self.images = []

    def query(self, images):
        return_images = []
        for image in images:
            image = torch.unsqueeze(image.data, 0)
            if self.num_imgs < self.pool_size:
                self.num_imgs = self.num_imgs + 1
                self.images.append(image)
                return_images.append(image)
            else:
                p = random.uniform(0, 1)
                if p > 0.5:
                    random_id = random.randint(0, self.pool_size - 1)
                    tmp = self.images[random_id].clone()
                    self.images[random_id] = image
                    return_images.append(tmp)
                else:
                    return_images.append(image)
        return torch.cat(return_images, 0)


def set_requires_grad(nets, requires_grad=False):
    if not isinstance(nets, list):
        nets = [nets]
    for net in nets:
        if net is not None:
            for param in net.parameters():
                param.requires_grad = requires_grad


netG_A = init_weights(ResnetGenerator(3, 3), 'normal')
netG_B = init_weights(ResnetGenerator(3, 3), 'xavier')
netD_A = init_weights(NLayerDiscriminator(3), 'kaiming')
netD_B = init_weights(NLayerDiscriminator(3), 'normal')
print("G params", sum(p.numel() for p in netG_A.parameters()),
      "D params", sum(p.numel() for p in netD_A.parameters()))
criterionGAN, criterionCycle, criterionIdt = GANLoss(), nn.L1Loss(), nn.L1Loss()
optimizer_G = torch.optim.Adam(itertools.chain(netG_A.parameters(), netG_B.parameters()),
                               lr=2e-3, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(itertools.chain(netD_A.parameters(), netD_B.parameters()),
                               lr=2e-3, betas=(0.5, 0.999))
n_epochs, n_epochs_decay, epoch_count = 2, 2, 1


def lambda_rule(epoch):
    return 1.0 - max(0, epoch + epoch_count - n_epochs) / float(n_epochs_decay + 1)


schedulers = [lr_scheduler.LambdaLR(o, lr_lambda=lambda_rule) for o in (optimizer_G, optimizer_D)]
fake_A_pool, fake_B_pool = ImagePool(3), ImagePool(3)
lambda_A, lambda_B, lambda_idt = 10.0, 10.0, 0.5

yy, xx = torch.meshgrid(torch.linspace(-1, 1, 16), torch.linspace(-1, 1, 16), indexing="ij")


def domain_A(n):      # stripes
    f = 2 + 3 * torch.rand(n, 1, 1, 1)
    tint = torch.tensor([1.0, 0.5, -0.5]).view(1, 3, 1, 1)
    return torch.sin(f * 3.14 * xx).expand(n, 3, 16, 16) * tint


def domain_B(n):      # blobs
    c = torch.rand(n, 2, 1, 1) - 0.5
    r = (xx - c[:, :1]) ** 2 + (yy - c[:, 1:]) ** 2
    return (torch.exp(-r * 6) * 2 - 1).expand(n, 3, 16, 16).clone()


for epoch in range(n_epochs + n_epochs_decay):
    for _ in range(2):
        real_A, real_B = domain_A(2), domain_B(2)
        fake_B = netG_A(real_A)
        rec_A = netG_B(fake_B)
        fake_A = netG_B(real_B)
        rec_B = netG_A(fake_A)
        # G_A and G_B
        set_requires_grad([netD_A, netD_B], False)
        optimizer_G.zero_grad()
        idt_A = netG_A(real_B)
        loss_idt_A = criterionIdt(idt_A, real_B) * lambda_B * lambda_idt
        idt_B = netG_B(real_A)
        loss_idt_B = criterionIdt(idt_B, real_A) * lambda_A * lambda_idt
        loss_G_A = criterionGAN(netD_A(fake_B), True)
        loss_G_B = criterionGAN(netD_B(fake_A), True)
        loss_cycle_A = criterionCycle(rec_A, real_A) * lambda_A
        loss_cycle_B = criterionCycle(rec_B, real_B) * lambda_B
        loss_G = loss_G_A + loss_G_B + loss_cycle_A + loss_cycle_B + loss_idt_A + loss_idt_B
        loss_G.backward()
        optimizer_G.step()
        # D_A and D_B
        set_requires_grad([netD_A, netD_B], True)
        optimizer_D.zero_grad()
        losses_D = []
        for netD, real, fake in ((netD_A, real_B, fake_B_pool.query(fake_B)),
                                 (netD_B, real_A, fake_A_pool.query(fake_A))):
            loss_D_real = criterionGAN(netD(real), True)
            loss_D_fake = criterionGAN(netD(fake.detach()), False)
            loss_D = (loss_D_real + loss_D_fake) * 0.5
            loss_D.backward()
            losses_D.append(loss_D.item())
        optimizer_D.step()
    old_lr = optimizer_G.param_groups[0]['lr']
    for scheduler in schedulers:
        scheduler.step()
    lr = optimizer_G.param_groups[0]['lr']
    print(f"epoch {epoch}: G {loss_G.item():.4f} cycA {loss_cycle_A.item():.4f} "
          f"D_A {losses_D[0]:.4f} D_B {losses_D[1]:.4f} lr {old_lr:.7f} -> {lr:.7f}")

print("pool sizes", fake_A_pool.num_imgs, len(fake_B_pool.images), fake_B_pool.images[0].shape)
print("D out", netD_A(real_B).shape, "requires_grad", next(netD_A.parameters()).requires_grad)
netG_A.eval()
with torch.no_grad():
    out = netG_A(domain_A(1))
print("eval G_A", out.shape, round(out.mean().item(), 4), round(out.abs().max().item(), 4))
