"""Robust statistics as in data-analysis notebooks and StackOverflow answers: medians, MAD and
quantiles with missing values (nanmedian, nanquantile, interpolation modes), trimmed means via
sort/topk/kthvalue, outlier flags, histograms (histc, histogram, bucketize), unique values with
counts, ranks with ties, bootstrap confidence intervals, and Huber and Theil-Sen regression."""

import torch

torch.manual_seed(9)
torch.set_default_dtype(torch.float64)

x = torch.randn(200)
x[:6] = torch.tensor([12.0, -9.0, 15.0, 8.5, -11.0, 30.0])       # gross outliers
x_nan = x.clone()
x_nan[torch.randperm(200)[:10]] = float("nan")
med = x.median()
mad = (x - med).abs().median() * 1.4826
print("center", round(x.mean().item(), 6), round(med.item(), 6), round(mad.item(), 6))
print("nan-aware", x_nan.nanmedian(), x_nan.median().isnan(), torch.nanmean(x_nan),
      torch.nansum(x_nan))
qs = torch.tensor([0.05, 0.25, 0.5, 0.75, 0.95])
for how in ("linear", "lower", "higher", "midpoint", "nearest"):
    print("quantile", how, torch.quantile(x, qs, interpolation=how))
print("nanquantile", torch.nanquantile(x_nan, qs), torch.quantile(x_nan, 0.5).isnan())
X2 = x[:60].view(3, 20)
print("rowwise", torch.quantile(X2, qs[1:4], dim=1, keepdim=True).shape,
      X2.median(dim=1), X2.nanmedian(dim=1).indices)

# trimmed and winsorized means
s, idx = torch.sort(x)
k = int(0.1 * len(x))
trimmed = s[k:-k].mean()
lo, hi = torch.kthvalue(x, k + 1).values, torch.kthvalue(x, len(x) - k).values
winsor = x.clamp(lo, hi).mean()
top = torch.topk(x, 5)
bot = torch.topk(x, 5, largest=False, sorted=True)
print("trimmed", round(trimmed.item(), 6), round(winsor.item(), 6), top.values, bot.indices)
z = (x - med) / mad
flags = z.abs() > 3.5
print("outliers", flags.sum().item(), torch.nonzero(flags).squeeze(1)[:8], x[flags].sort()[0])
q1, q3 = torch.quantile(x, torch.tensor([0.25, 0.75]))
iqr_out = (x < q1 - 1.5 * (q3 - q1)) | (x > q3 + 1.5 * (q3 - q1))
print("iqr", round((q3 - q1).item(), 6), iqr_out.sum().item())

# histograms and bins
print("histc", torch.histc(x, bins=8, min=-4, max=4))
h = torch.histogram(x, bins=6, range=(-3.0, 3.0), density=True)
print("histogram", h.hist, h.bin_edges)
hw = torch.histogram(x, bins=torch.tensor([-10.0, -1.0, 0.0, 1.0, 40.0]), weight=x.abs())
print("weighted", hw.hist)
edges = torch.quantile(x, torch.linspace(0, 1, 5)[1:-1])
bins = torch.bucketize(x, edges)
print("deciles", torch.bincount(bins), torch.bucketize(torch.tensor([0.0, 100.0]), edges,
                                                       right=True))
counts = torch.stack([x[bins == b].mean() for b in range(4)])
print("bin means", counts)

# discrete data: unique values, counts, mode, ranks with ties
d = torch.randint(0, 6, (50,))
vals, inv, cnt = torch.unique(d, return_inverse=True, return_counts=True)
print("unique", vals, cnt, inv[:8], torch.mode(d), d.float().mode().values)
uc, ucnt = torch.unique_consecutive(torch.sort(d).values, return_counts=True)
print("consecutive", uc, torch.equal(ucnt, cnt))
order = torch.argsort(d, stable=True)
ranks = torch.empty_like(order)
ranks[order] = torch.arange(50)
avg_rank = torch.zeros(6).index_add_(0, d, ranks.double()) / torch.bincount(d, minlength=6)
print("ranks", ranks[:8], avg_rank)
print("argsort desc", torch.argsort(d[:10], descending=True, stable=True), d[:10].msort())

# bootstrap CI of the median
g = torch.Generator().manual_seed(0)
boot = x[torch.randint(0, 200, (300, 200), generator=g)].median(dim=1).values
print("bootstrap", torch.quantile(boot, torch.tensor([0.025, 0.975])), boot.std())

# regression with outliers: OLS vs Huber (IRLS via autograd) vs Theil-Sen
n = 60
t = torch.linspace(0, 10, n)
y = 1.5 * t - 2.0 + 0.3 * torch.randn(n)
y[::10] += 15.0
A = torch.stack([t, torch.ones(n)], 1)
ols = torch.linalg.lstsq(A, y.unsqueeze(1)).solution.squeeze(1)
beta = ols.clone().requires_grad_(True)
opt = torch.optim.LBFGS([beta], lr=1, max_iter=100, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    loss = torch.nn.functional.huber_loss(A @ beta, y, delta=1.0)
    loss.backward()
    return loss


opt.step(closure)
i, j = torch.triu_indices(n, n, 1)
slopes = (y[j] - y[i]) / (t[j] - t[i])
ts_slope = slopes.median()
ts_icpt = (y - ts_slope * t).median()
print("ols", ols, "huber", beta.detach(), "theil-sen", ts_slope, ts_icpt)
w = torch.nn.functional.smooth_l1_loss(A @ beta.detach(), y, reduction="none", beta=0.5)
print("residual loss", w.topk(3).indices.sort().values, round(w.sum().item(), 6))
xs = torch.randn(5, 7)
xs[1, 2] = float("nan")
print("sorted nan", xs[1].sort().values, xs[1].argsort(), xs.max(1).values.isnan(),
      torch.nanquantile(xs, 0.5, dim=1))
