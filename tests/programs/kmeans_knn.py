"""k-means and a k-nearest-neighbour classifier with cdist/topk, mixing NumPy and tensors."""
import numpy as np
import torch

torch.manual_seed(4)
np.random.seed(4)
centers = torch.tensor([[0.0, 0.0], [3.0, 3.0], [0.0, 4.0]])
labels = torch.randint(0, 3, (90,))
points = centers[labels] + 0.6 * torch.randn(90, 2)

# k-means (k-means++ style init with multinomial)
k = 3
init = [torch.randint(0, 90, (1,)).item()]
for _ in range(k - 1):
    d2 = torch.cdist(points, points[init]).min(dim=1).values ** 2
    init.append(torch.multinomial(d2 / d2.sum(), 1).item())
cent = points[init].clone()
for step in range(10):
    iterations = step + 1
    dist = torch.cdist(points, cent)
    _, assign = torch.min(dist, 1)
    new = torch.stack([points[assign == j].mean(axis=0) for j in range(k)])
    shift = (new - cent).norm(dim=1).max()
    cent = new
    if shift < 1e-6:
        break
print("iterations", iterations, "inertia", f"{(dist.min(1).values ** 2).sum():.4f}")
order = cent[:, 0].argsort()
print("centroids", np.round(cent[order].numpy(), 4).tolist())

# kNN on a train/test split
perm = torch.randperm(90)
train, test = perm[:70], perm[70:]
d = torch.cdist(points[test], points[train])
vals, idx = torch.topk(d, k=5, dim=1, largest=False)
votes = labels[train][idx]
pred, _ = torch.mode(votes, dim=1)
acc = (pred == labels[test]).float().mean()
print(f"knn accuracy {acc:.3f}")
res = d.sort(dim=1)
print(type(res).__name__, res.values[0, :3].tolist(), res.indices[0, :3].tolist())
print("nearest", vals[:2].numpy().round(4).tolist())

# NumPy on tensors: ufuncs return tensors, np.asarray shares memory
scores = -d[:, :4]
probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
print(type(probs).__name__, probs[0].tolist())
arr = np.asarray(points)
print("shares memory", np.shares_memory(arr, points.numpy()), arr.dtype)
print("np.mean of floats", np.mean([float(x) for x in vals[:, 0]]))
outputs = torch.randn(4, 3, requires_grad=True)
_, predicted = torch.max(outputs.data, 1)
print("predicted", predicted.tolist(), outputs.detach().numpy().argmax(1).tolist())
print("sum axis", points.sum(axis=0).tolist(), points.mean(axis=1, keepdims=True).shape)
