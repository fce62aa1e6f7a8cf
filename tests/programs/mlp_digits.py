"""An MLP on scikit-learn's digits with TensorDataset, DataLoader and random_split."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset, random_split

torch.manual_seed(42)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

digits = load_digits()
X = torch.tensor(digits.data[:600], dtype=torch.float32) / 16.0
y = torch.tensor(digits.target[:600], dtype=torch.long)
dataset = TensorDataset(X, y)
train_set, test_set = random_split(dataset, [500, 100])
train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
test_loader = DataLoader(test_set, batch_size=50)


class MLP(nn.Module):
    def __init__(self, d_in=64, hidden=32, n_classes=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, n_classes)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.out(x)


model = MLP().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()


@torch.no_grad()
def evaluate(loader):
    model.eval()
    correct, total = 0, 0
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        pred = model(xb).argmax(dim=1)
        correct += (pred == yb).sum().item()
        total += yb.size(0)
    return correct / total


for epoch in range(4):
    model.train()
    running = 0.0
    for xb, yb in train_loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        running += loss.item() * xb.size(0)
    print(f"epoch {epoch} loss {running / len(train_set):.5f} test acc {evaluate(test_loader):.3f}")

xb, yb = next(iter(test_loader))
logits = model(xb)
print("batch acc", (logits.argmax(dim=1) == yb).float().mean().item())
print("probs", F.softmax(logits[:2], dim=1).detach().cpu().numpy().tolist())
print("params", sum(p.numel() for p in model.parameters() if p.requires_grad))
