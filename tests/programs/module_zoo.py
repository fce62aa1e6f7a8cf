"""A model built from many stock layers, printed with print(model) and run forward/backward:
lazy modules, pooling with indices and unpooling, padding layers, channel shuffle, Bilinear,
the activation zoo, dropout variants in eval, Upsample modes, Fold/Unfold."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class Zoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.ReflectionPad2d(1), nn.LazyConv2d(8, 3), nn.LazyBatchNorm2d(), nn.PReLU(8),
            nn.ChannelShuffle(2), nn.ZeroPad2d((1, 0, 1, 0)), nn.Conv2d(8, 8, 2, groups=4),
            nn.ReplicationPad2d(1), nn.Conv2d(8, 8, 3, bias=False), nn.Hardswish(),
            nn.LocalResponseNorm(3), nn.Dropout2d(0.2))
        self.pool = nn.MaxPool2d(2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.acts = nn.ModuleList([nn.ELU(0.5), nn.CELU(), nn.SELU(), nn.GELU(), nn.Softplus(2.0),
                                   nn.Softsign(), nn.Tanhshrink(), nn.Hardtanh(-0.5, 0.5),
                                   nn.LogSigmoid(), nn.Hardsigmoid(), nn.Threshold(0.1, -1.0),
                                   nn.LeakyReLU(0.2), nn.ReLU6(), nn.SiLU(), nn.Mish(),
                                   nn.Softshrink(0.3), nn.Hardshrink(0.3), nn.RReLU()])
        self.glu = nn.GLU(dim=1)
        self.head = nn.Sequential(nn.AdaptiveMaxPool2d((2, 2)), nn.Flatten(), nn.LazyLinear(6),
                                  nn.AlphaDropout(0.1))
        self.bil = nn.Bilinear(6, 6, 3)
        self.fold = nn.Fold(output_size=(4, 4), kernel_size=2, stride=2)
        self.unfold = nn.Unfold(kernel_size=2, stride=2)

    def forward(self, x):
        h = self.stem(x)
        p, idx = self.pool(h)
        h = self.unpool(p, idx, output_size=h.shape[-2:]) + self.up(p)
        h = sum(a(h) for a in self.acts) / len(self.acts)
        h = self.glu(torch.cat([h, h], 1))
        cols = self.unfold(h)
        h = self.fold(cols)
        z = self.head(h)
        return self.bil(z, z.flip(0)), cols


model = Zoo()
print(model.stem[1])
x = torch.randn(4, 3, 4, 4)
out, cols = model(x)
print(model)
print(out.shape, cols.shape, model.stem[1].weight.shape, model.head[2].weight.shape)
print(model.stem[1].__class__.__name__, model.head[2].__class__.__name__)
loss = out.pow(2).mean()
loss.backward()
print(round(loss.item(), 6))
for n, p in model.named_parameters():
    if p.grad is not None and p.ndim > 0:
        print(f"{n:24s}", tuple(p.shape), round(p.grad.abs().sum().item(), 6))
model.eval()
with torch.no_grad():
    e1, _ = model(x)
    e2, _ = model(x)
print(torch.equal(e1, e2), [round(v, 5) for v in e1[0].tolist()])
print(sum(p.numel() for p in model.parameters()), len(list(model.buffers())))
print(nn.Upsample(size=(3, 5), mode="nearest")(torch.arange(4.0).view(1, 1, 2, 2)).tolist())
print(nn.Upsample(scale_factor=1.5, mode="bicubic")(torch.arange(4.0).view(1, 1, 2, 2)).shape)
print(nn.CircularPad1d(2)(torch.arange(4.0).view(1, 1, 4)).tolist())
print(nn.ConstantPad3d((1, 0, 0, 1, 1, 0), 3.5)(torch.ones(1, 1, 1, 1, 1)).flatten().tolist())
print(nn.PixelUnshuffle(2)(torch.arange(16.0).view(1, 1, 4, 4))[0, :, 0, 0].tolist())
print(nn.Softmax2d()(torch.randn(1, 3, 2, 2)).sum(1).tolist())
print(nn.CosineSimilarity(dim=0)(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0])).item())
pd = nn.PairwiseDistance(p=1, keepdim=True)(torch.ones(2, 3), torch.zeros(2, 3))
print(round(pd[0, 0].item(), 4))
