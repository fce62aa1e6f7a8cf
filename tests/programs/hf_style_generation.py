"""A GPT-2-shaped model written the way Hugging Face style code writes it: Conv1D (addmm) layers,
tanh-approximate GELU, an extended attention mask ((1 - mask) * finfo.min), causal bias buffer
with masked_fill / torch.where, left padding with position_ids from cumsum, tied input/output
embeddings, a KV cache (past_key_values) checked against the full forward, and sampling logits
processors: temperature, repetition penalty (gather / scatter_), top-k and top-p (sort, cumsum,
scatter) with torch.multinomial under a seeded Generator."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class NewGELUActivation(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                               (input + 0.044715 * torch.pow(input, 3.0))))


class Attention(nn.Module):
    def __init__(self, n_embd, n_head, n_positions):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones((n_positions, n_positions),
                                                           dtype=torch.bool))
                             .view(1, 1, n_positions, n_positions), persistent=False)
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)
        self.n_head = n_head
        self.head_dim = n_embd // n_head
        self.c_attn = Conv1D(3 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)

    def _split_heads(self, tensor):
        new_shape = tensor.size()[:-1] + (self.n_head, self.head_dim)
        return tensor.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.n_head * self.head_dim,))

    def _attn(self, query, key, value, attention_mask=None):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5,
                                                 dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_weights, value), attn_weights

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
        query, key, value = self.c_attn(hidden_states).split(self.n_head * self.head_dim, dim=2)
        query = self._split_heads(query)
        key = self._split_heads(key)
        value = self._split_heads(value)
        if layer_past is not None:
            past_key, past_value = layer_past
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)
        present = (key, value) if use_cache else None
        attn_output, attn_weights = self._attn(query, key, value, attention_mask)
        attn_output = self.c_proj(self._merge_heads(attn_output))
        return attn_output, present


class Block(nn.Module):
    def __init__(self, n_embd, n_head, n_positions):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=1e-5)
        self.attn = Attention(n_embd, n_head, n_positions)
        self.ln_2 = nn.LayerNorm(n_embd, eps=1e-5)
        self.mlp = nn.Sequential(Conv1D(4 * n_embd, n_embd), NewGELUActivation(),
                                 Conv1D(n_embd, 4 * n_embd))

    def forward(self, x, layer_past=None, attention_mask=None, use_cache=False):
        a, present = self.attn(self.ln_1(x), layer_past, attention_mask, use_cache)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return x, present


class GPT2ish(nn.Module):
    def __init__(self, vocab=40, n_embd=32, n_head=4, n_layer=2, n_positions=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, n_positions) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.lm_head.weight = self.wte.weight          # tied
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, Conv1D)):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=0.02)
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def forward(self, input_ids, past_key_values=None, attention_mask=None, position_ids=None,
                use_cache=False, labels=None):
        if past_key_values is None:
            past_key_values = tuple([None] * len(self.h))
        if position_ids is None:
            past_length = 0 if past_key_values[0] is None else past_key_values[0][0].size(-2)
            position_ids = torch.arange(past_length, input_ids.size(-1) + past_length,
                                        dtype=torch.long).unsqueeze(0)
        if attention_mask is not None:
            attention_mask = attention_mask[:, None, None, :]
            attention_mask = attention_mask.to(dtype=self.wte.weight.dtype)
            attention_mask = (1.0 - attention_mask) * torch.finfo(self.wte.weight.dtype).min
        hidden = self.wte(input_ids) + self.wpe(position_ids)
        presents = () if use_cache else None
        for block, layer_past in zip(self.h, past_key_values):
            hidden, present = block(hidden, layer_past, attention_mask, use_cache)
            if use_cache:
                presents = presents + (present,)
        logits = self.lm_head(self.ln_f(hidden))
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)),
                                   shift_labels.view(-1), ignore_index=-100)
        return loss, logits, presents


model = GPT2ish()
print("tied", model.lm_head.weight is model.wte.weight,
      "params", sum(p.numel() for p in model.parameters()))
print("non-persistent buffers", len(list(model.buffers())),
      [k for k in model.state_dict() if k.endswith("attn.bias") or "masked_bias" in k],
      "tied weight listed", [k for k in model.state_dict() if k.endswith("wte.weight") or
                             k.endswith("lm_head.weight")])

# a short training run on a copy task with padded labels
data = torch.randint(1, 40, (8, 12))
labels = data.clone()
labels[:, :3] = -100
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
for step in range(5):
    loss, logits, _ = model(data, labels=labels)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
model.eval()

# left padding: positions from the attention mask's cumsum
batch = torch.tensor([[0, 0, 5, 6, 7], [1, 2, 3, 4, 5]])
attention_mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
position_ids = attention_mask.long().cumsum(-1) - 1
position_ids.masked_fill_(attention_mask == 0, 1)
print("position_ids", position_ids.tolist())
with torch.no_grad():
    _, padded_logits, _ = model(batch, attention_mask=attention_mask, position_ids=position_ids)
    _, alone_logits, _ = model(batch[:1, 2:])
print("left padding matches unpadded", torch.allclose(padded_logits[0, 2:], alone_logits[0],
                                                      atol=1e-5))

# KV cache: incremental decoding equals the full forward
with torch.no_grad():
    ids = torch.tensor([[3, 9, 14, 2]])
    _, full_logits, _ = model(ids)
    _, l1, past = model(ids[:, :2], use_cache=True)
    steps = [l1[:, -1]]
    for t in range(2, 4):
        _, lt, past = model(ids[:, t:t + 1], past_key_values=past, use_cache=True)
        steps.append(lt[:, -1])
print("kv cache", len(past), tuple(past[0][0].shape),
      torch.allclose(torch.stack(steps, 1), full_logits[:, 1:], atol=1e-5))


def top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-float("Inf")):
    if top_k > 0:
        indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
        logits[indices_to_remove] = filter_value
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        sorted_indices_to_remove = cumulative_probs > top_p
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices,
                                                             sorted_indices_to_remove)
        logits[indices_to_remove] = filter_value
    return logits


def repetition_penalty(input_ids, scores, penalty):
    score = torch.gather(scores, 1, input_ids)
    score = torch.where(score < 0, score * penalty, score / penalty)
    scores.scatter_(1, input_ids, score)
    return scores


gen = torch.Generator().manual_seed(1234)
with torch.no_grad():
    ids = torch.tensor([[3, 9], [7, 7]])
    past = None
    cur = ids
    for _ in range(6):
        _, logits, past = model(cur, past_key_values=past, use_cache=True)
        scores = logits[:, -1, :] / 0.8
        scores = repetition_penalty(ids, scores, 1.3)
        scores = top_k_top_p_filtering(scores, top_k=10, top_p=0.9)
        probs = F.softmax(scores, dim=-1)
        nxt = torch.multinomial(probs, num_samples=1, generator=gen)
        ids = torch.cat([ids, nxt], dim=-1)
        cur = nxt
print("sampled", ids.tolist())
print("kept per row", (scores > -float("inf")).sum(-1).tolist())
x = torch.tensor([[1.0, 3.0, 2.0, 0.5, 2.5]])
print("filter", top_k_top_p_filtering(x.clone(), top_k=3).tolist(),
      top_k_top_p_filtering(x.clone(), top_p=0.7).tolist())
