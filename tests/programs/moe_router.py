"""Mixture-of-experts layers as in Mixtral / Switch Transformer code people copy: a top-k
router (topk, softmax, renormalisation), expert dispatch through one_hot(...).permute and
torch.where on the mask, index_add_ back into the output, a Switch-style capacity-limited top-1
router (cumsum positions, bincount counts, scatter into dispatch tensors), the load-balancing
auxiliary loss and router z-loss, and a batched "dense" einsum formulation for comparison."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoeBlock(nn.Module):
    def __init__(self, dim=16, hidden=32, num_experts=4, top_k=2):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(num_experts)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype, device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits

    def dense_forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        probs = F.softmax(self.gate(flat), dim=-1)
        w, sel = probs.topk(self.top_k, dim=-1)
        w = w / w.sum(-1, keepdim=True)
        combine = torch.zeros_like(probs).scatter(1, sel, w)
        outs = torch.stack([e(flat) for e in self.experts], dim=1)
        return torch.einsum("te,ted->td", combine, outs).reshape(x.shape)


def load_balancing_loss_func(gate_logits, num_experts, top_k):
    concatenated = torch.cat([g for g in gate_logits], dim=0)
    routing_weights = torch.nn.functional.softmax(concatenated, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = torch.nn.functional.one_hot(selected_experts, num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
    return overall_loss * num_experts


def router_z_loss(logits):
    return torch.logsumexp(logits, dim=-1).square().mean()


class SwitchRouter(nn.Module):
    """Top-1 routing with an expert capacity; overflowing tokens are dropped (pass through)."""

    def __init__(self, dim, num_experts, capacity_factor=1.0):
        super().__init__()
        self.classifier = nn.Linear(dim, num_experts, bias=False)
        self.num_experts, self.capacity_factor = num_experts, capacity_factor

    def forward(self, x):
        tokens = x.shape[0]
        capacity = int(self.capacity_factor * tokens / self.num_experts)
        logits = self.classifier(x)
        probs = logits.softmax(-1)
        expert_index = torch.argmax(probs, dim=-1)
        mask = F.one_hot(expert_index, self.num_experts)
        position_in_expert = torch.cumsum(mask, dim=0) * mask
        keep = (position_in_expert <= capacity) & (mask > 0)
        kept_tokens = keep.any(-1)
        counts = torch.bincount(expert_index[kept_tokens], minlength=self.num_experts)
        slot = (position_in_expert.sum(-1) - 1).clamp(min=0)
        dispatch = torch.zeros(self.num_experts, capacity, tokens)
        dispatch[expert_index[kept_tokens], slot[kept_tokens],
                 torch.arange(tokens)[kept_tokens]] = 1.0
        gate = probs.max(dim=-1).values
        return dispatch, gate, kept_tokens, counts, logits


torch.manual_seed(0)
moe = SparseMoeBlock()
x = torch.randn(2, 6, 16)
y, logits = moe(x)
print("out", tuple(y.shape), f"{y.abs().sum().item():.5f}")
print("dense formulation agrees:", torch.allclose(y, moe.dense_forward(x), atol=1e-6))
sel = logits.softmax(-1).topk(2).indices
print("tokens per expert", torch.bincount(sel.flatten(), minlength=4).tolist())
print("histc", torch.histc(sel.flatten().float(), bins=4, min=0, max=3).tolist())

# train the sparse block to imitate a fixed random map with aux losses
target_net = nn.Sequential(nn.Linear(16, 16), nn.Tanh())
for p in target_net.parameters():
    p.requires_grad_(False)
opt = torch.optim.AdamW(moe.parameters(), lr=5e-3, weight_decay=0.01)
for step in range(40):
    xb = torch.randn(4, 8, 16)
    out, router_logits = moe(xb)
    mse = F.mse_loss(out, target_net(xb))
    aux = load_balancing_loss_func((router_logits,), moe.num_experts, moe.top_k)
    z = router_z_loss(router_logits)
    loss = mse + 0.01 * aux + 0.001 * z
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0 or step == 39:
        gnorm = moe.gate.weight.grad.norm().item()
        print(f"step {step:2d} mse {mse.item():.5f} aux {aux.item():.4f} z {z.item():.4f} "
              f"gate grad {gnorm:.5f}")
unused = [i for i, e in enumerate(moe.experts) if e.w1.weight.grad is None]
print("experts without grads:", unused)

# Switch router with capacity
router = SwitchRouter(16, 4, capacity_factor=1.25)
tok = torch.randn(12, 16)
dispatch, gate, kept, counts, rl = router(tok)
print("capacity", dispatch.shape[1], "kept", int(kept.sum()), "counts", counts.tolist())
print("dispatch slots filled", dispatch.sum(dim=(1, 2)).tolist())
expert_inputs = torch.einsum("ect,td->ecd", dispatch, tok)
expert_w = torch.randn(4, 16, 16, requires_grad=True)
expert_outputs = torch.einsum("ecd,edf->ecf", expert_inputs, expert_w)
combined = torch.einsum("ect,ecf->tf", dispatch, expert_outputs) * gate[:, None]
combined = torch.where(kept[:, None], combined, tok)
combined.pow(2).mean().backward()
print(f"switch out {combined.sum().item():.5f} grad {expert_w.grad.abs().sum().item():.5f}",
      "classifier grad", router.classifier.weight.grad is not None)
nz = torch.nonzero(dispatch.sum(1)).tolist()
print("nonzero (expert, token) pairs", len(nz), nz[:4])
