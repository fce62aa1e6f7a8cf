"""The losses people reach for: label-smoothed cross entropy with class weights and
ignore_index, KL-divergence distillation, a hand-written focal loss, triplet and cosine
embedding losses, CTC, BCEWithLogits with pos_weight, and a few regression/ranking losses."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def show(name, v):
    print(f"{name:24s}", [round(x, 5) for x in v.detach().reshape(-1).tolist()][:6])


logits = torch.randn(8, 5, requires_grad=True)
target = torch.tensor([0, 1, 2, 3, 4, -100, 1, 2])
w = torch.tensor([1.0, 2.0, 0.5, 1.0, 1.5])
ce = nn.CrossEntropyLoss(weight=w, ignore_index=-100, label_smoothing=0.1)
loss = ce(logits, target)
loss.backward()
show("ce smooth weighted", loss)
show("  grad", logits.grad[5:7])
show("ce none", F.cross_entropy(logits, target, reduction="none", label_smoothing=0.2))
soft = torch.softmax(torch.randn(8, 5), dim=1)
show("ce soft targets", F.cross_entropy(logits, soft, label_smoothing=0.1))
show("ce 3d", F.cross_entropy(torch.randn(2, 5, 3), torch.randint(0, 5, (2, 3)), weight=w))
show("nll sum", F.nll_loss(F.log_softmax(logits, 1), target, reduction="sum"))

# knowledge distillation
T = 4.0
student, teacher = torch.randn(6, 10, requires_grad=True), torch.randn(6, 10)
kd = nn.KLDivLoss(reduction="batchmean")(F.log_softmax(student / T, dim=1),
                                         F.softmax(teacher / T, dim=1)) * T * T
kd.backward()
show("kd batchmean", kd)
show("  grad", student.grad[0])
show("kl log_target", F.kl_div(F.log_softmax(student, 1), F.log_softmax(teacher, 1),
                               reduction="sum", log_target=True))


class FocalLoss(nn.Module):
    def __init__(self, alpha=None, gamma=2.0, reduction="mean"):
        super().__init__()
        self.alpha, self.gamma, self.reduction = alpha, gamma, reduction

    def forward(self, inputs, targets):
        ce_loss = F.cross_entropy(inputs, targets, reduction="none", weight=self.alpha)
        pt = torch.exp(-ce_loss)
        focal = (1 - pt) ** self.gamma * ce_loss
        return focal.mean() if self.reduction == "mean" else focal.sum()


def sigmoid_focal(inputs, targets, alpha=0.25, gamma=2):
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    return (alpha_t * loss).mean()


x = torch.randn(8, 5, requires_grad=True)
y = torch.randint(0, 5, (8,))
fl = FocalLoss(alpha=w)(x, y)
fl.backward()
show("focal", fl)
show("  grad", x.grad[0])
show("sigmoid focal", sigmoid_focal(torch.randn(4, 3), torch.randint(0, 2, (4, 3)).float()))

anchor, pos, neg = (torch.randn(6, 8, requires_grad=True) for _ in range(3))
tl = nn.TripletMarginLoss(margin=1.0, p=2)(anchor, pos, neg)
tl.backward()
show("triplet", tl)
show("  grad", anchor.grad[0])
show("triplet swap", F.triplet_margin_loss(anchor, pos, neg, margin=0.5, swap=True,
                                           reduction="none"))
show("triplet distance fn", nn.TripletMarginWithDistanceLoss(
    distance_function=lambda a, b: 1 - F.cosine_similarity(a, b))(anchor, pos, neg))
e1, e2 = torch.randn(6, 8), torch.randn(6, 8)
lab = torch.tensor([1, -1, 1, -1, 1, 1])
show("cosine embedding", nn.CosineEmbeddingLoss(margin=0.2)(e1, e2, lab))
show("margin ranking", nn.MarginRankingLoss(margin=0.1)(e1[:, 0], e2[:, 0], lab.float()))
show("hinge embedding", F.hinge_embedding_loss(e1.abs(), lab.unsqueeze(1).expand(6, 8).float()))

# CTC
T_, N, C, S = 12, 3, 6, 4
log_probs = torch.randn(T_, N, C).log_softmax(2).detach().requires_grad_()
targets = torch.randint(1, C, (N, S), dtype=torch.long)
input_lengths = torch.full((N,), T_, dtype=torch.long)
target_lengths = torch.tensor([4, 2, 3])
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
cl = ctc(log_probs, targets, input_lengths, target_lengths)
cl.backward()
show("ctc", cl)
show("  grad", log_probs.grad[0, 0])
show("ctc none", F.ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction="none"))
flat = torch.cat([targets[i, :target_lengths[i]] for i in range(N)])
show("ctc concat targets", F.ctc_loss(log_probs, flat, input_lengths, target_lengths))

# imbalanced multi-label
z = torch.randn(6, 3, requires_grad=True)
t = torch.randint(0, 2, (6, 3)).float()
pw = (t.shape[0] - t.sum(0)) / t.sum(0).clamp(min=1)
bl = nn.BCEWithLogitsLoss(pos_weight=pw)(z, t)
bl.backward()
show("bce pos_weight", bl)
show("  grad", z.grad[0])
show("bce weight+pw", F.binary_cross_entropy_with_logits(z, t, weight=torch.tensor([1.0, 0.5, 2.0]),
                                                       pos_weight=torch.tensor([2.0, 1.0, 3.0])))
show("multilabel soft margin", nn.MultiLabelSoftMarginLoss()(z, t))
show("multi margin", nn.MultiMarginLoss(p=1, margin=1.0)(x, y))
show("multilabel margin", F.multilabel_margin_loss(z, torch.tensor([[0, 2, -1]] * 6)))

a, b = torch.randn(10), torch.randn(10)
show("huber", nn.HuberLoss(delta=0.5)(a, b))
show("smooth l1", nn.SmoothL1Loss(beta=0.5)(a, b))
show("l1 none", F.l1_loss(a, b, reduction="none"))
var = torch.rand(10) + 0.1
show("gaussian nll", nn.GaussianNLLLoss()(a, b, var))
show("poisson nll", nn.PoissonNLLLoss(log_input=True, full=True)(a, b.abs() * 3))
show("soft margin", nn.SoftMarginLoss()(a, torch.sign(b)))
