"""Utilities from real training scripts: pruning, schedulers (cyclic, warm restarts,
polynomial, chained), SWA with SWALR and update_bn, new-style autograd.Function with
setup_context and vmap, func.stack_module_state ensembles, packed sequences, spectral tools."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune
from torch.func import functional_call, stack_module_state, vmap
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence

torch.manual_seed(5)
lin = nn.Linear(6, 4)
prune.l1_unstructured(lin, name="weight", amount=0.5)
print(sorted(n for n, _ in lin.named_buffers()), (lin.weight == 0).sum().item())
prune.remove(lin, "weight")
print(sorted(n for n, _ in lin.named_parameters()), hasattr(lin, "weight_mask"))
conv = nn.Conv2d(2, 4, 3)
prune.ln_structured(conv, name="weight", amount=0.25, n=2, dim=0)
print((conv.weight.flatten(1).abs().sum(1) == 0).sum().item())
prune.global_unstructured(
    [(lin, "weight"), (conv, "weight")], pruning_method=prune.L1Unstructured, amount=0.3
)
print(round(float((lin.weight == 0).float().mean()), 4))

net = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
scheds = [
    torch.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=3),
]
lrs = []
for _ in range(7):
    opt.step()
    scheds[0].step()
    lrs.append(round(scheds[0].get_last_lr()[0], 5))
print(lrs)
opt2 = torch.optim.AdamW(net.parameters(), lr=0.1)
warm = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt2, T_0=3, T_mult=2, eta_min=0.01)
poly = torch.optim.lr_scheduler.PolynomialLR(torch.optim.SGD(net.parameters(), lr=1.0), 4, 2.0)
chain_opt = torch.optim.SGD(net.parameters(), lr=1.0)
chained = torch.optim.lr_scheduler.ChainedScheduler(
    [
        torch.optim.lr_scheduler.ConstantLR(chain_opt, factor=0.5, total_iters=2),
        torch.optim.lr_scheduler.ExponentialLR(chain_opt, gamma=0.9),
    ]
)
out = []
for _ in range(6):
    opt2.step()
    warm.step()
    poly.optimizer.step()
    poly.step()
    chain_opt.step()
    chained.step()
    out.append(
        (
            round(warm.get_last_lr()[0], 5),
            round(poly.get_last_lr()[0], 5),
            round(chained.get_last_lr()[0], 5),
        )
    )
print(out)

x = torch.randn(32, 3)
y = x.sum(1, keepdim=True)
swa = torch.optim.swa_utils.AveragedModel(net)
swa_sched = torch.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=2)
for _ in range(4):
    opt.zero_grad()
    F.mse_loss(net(x), y).backward()
    opt.step()
    swa.update_parameters(net)
    swa_sched.step()
loader = [(x[i : i + 8],) for i in range(0, 32, 8)]
torch.optim.swa_utils.update_bn(loader, swa)
print(
    swa.n_averaged.item(),
    round(swa.module[1].running_mean.sum().item(), 5),
    round(swa_sched.get_last_lr()[0], 5),
)


class Cube(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x**3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * g


v = torch.randn(4, requires_grad=True)
Cube.apply(v).sum().backward()
print(torch.allclose(v.grad, 3 * v.detach() ** 2), vmap(Cube.apply)(torch.ones(2, 3)).shape)
print(torch.func.grad(lambda t: Cube.apply(t).sum())(torch.tensor([1.0, 2.0])))

models = [nn.Linear(3, 2) for _ in range(4)]
params, buffers = stack_module_state(models)
base = copy.deepcopy(models[0])


def call(p, b, inp):
    return functional_call(base, (p, b), (inp,))


ens = vmap(call, in_dims=(0, 0, None))(params, buffers, x[:5])
print(ens.shape, torch.allclose(ens[2], models[2](x[:5]), atol=1e-6))
seqs = [torch.randn(n, 2) for n in (4, 2, 3)]
packed = pack_sequence(seqs, enforce_sorted=False)
gru = nn.GRU(2, 3, batch_first=True)
o, h = gru(packed)
padded, lens = pad_packed_sequence(o, batch_first=True)
print(padded.shape, lens.tolist(), h.shape, packed.batch_sizes.tolist())
