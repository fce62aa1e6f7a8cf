"""The "language modeling with nn.Transformer" tutorial, shrunk: a synthetic corpus, batchify /
get_batch over a long token stream, PositionalEncoding with register_buffer (seq-first layout),
nn.TransformerEncoder with a causal mask, clip_grad_norm_, SGD with StepLR, evaluation by
perplexity (math.exp of the mean loss), and greedy generation with is_causal=True."""
import copy
import math
import time

import torch
from torch import Tensor, nn
from torch.nn import TransformerEncoder, TransformerEncoderLayer

torch.manual_seed(0)
device = torch.device("cpu")


class TransformerModel(nn.Module):

    def __init__(self, ntoken: int, d_model: int, nhead: int, d_hid: int,
                 nlayers: int, dropout: float = 0.5):
        super().__init__()
        self.model_type = "Transformer"
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers,
                                                      enable_nested_tensor=False)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)

        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src: Tensor, src_mask: Tensor = None) -> Tensor:
        """
        Arguments:
            src: Tensor, shape ``[seq_len, batch_size]``
            src_mask: Tensor, shape ``[seq_len, seq_len]``

        Returns:
            output Tensor of shape ``[seq_len, batch_size, ntoken]``
        """
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            """Generate a square causal mask for the sequence. The masked positions are filled
            with float('-inf'). Unmasked positions are filled with float(0.0).
            """
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(device)
        output = self.transformer_encoder(src, src_mask)
        output = self.linear(output)
        return output


class PositionalEncoding(nn.Module):

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x: Tensor) -> Tensor:
        """
        Arguments:
            x: Tensor, shape ``[seq_len, batch_size, embedding_dim]``
        """
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


# a synthetic "corpus": a noisy repeating pattern over a small vocabulary
ntokens = 20
pattern = torch.tensor([1, 5, 7, 2, 9, 4, 11, 3, 8, 6, 12, 15])
stream = pattern.repeat(40)
noise = torch.rand(stream.shape) < 0.1
stream = torch.where(noise, torch.randint(0, ntokens, stream.shape), stream)
n = stream.numel()
train_data_raw, val_data_raw, test_data_raw = (stream[: int(0.8 * n)],
                                               stream[int(0.8 * n): int(0.9 * n)],
                                               stream[int(0.9 * n):])


def batchify(data: Tensor, bsz: int) -> Tensor:
    """Divides the data into ``bsz`` separate sequences, removing extra elements
    that wouldn't cleanly fit.

    Arguments:
        data: Tensor, shape ``[N]``
        bsz: int, batch size

    Returns:
        Tensor of shape ``[N // bsz, bsz]``
    """
    seq_len = data.size(0) // bsz
    data = data[:seq_len * bsz]
    data = data.view(bsz, seq_len).t().contiguous()
    return data.to(device)


batch_size = 8
eval_batch_size = 4
train_data = batchify(train_data_raw, batch_size)  # shape ``[seq_len, batch_size]``
val_data = batchify(val_data_raw, eval_batch_size)
test_data = batchify(test_data_raw, eval_batch_size)
print("batchified", tuple(train_data.shape), tuple(val_data.shape), tuple(test_data.shape))

bptt = 12


def get_batch(source: Tensor, i: int) -> tuple[Tensor, Tensor]:
    """
    Arguments:
        source: Tensor, shape ``[full_seq_len, batch_size]``
        i: int

    Returns:
        tuple (data, target), where data has shape ``[seq_len, batch_size]`` and
        target has shape ``[seq_len * batch_size]``
    """
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].reshape(-1)
    return data, target


data, targets = get_batch(train_data, 0)
print("get_batch", tuple(data.shape), tuple(targets.shape), data[:3, 0].tolist(),
      targets[:3].tolist())

emsize = 32  # embedding dimension
d_hid = 64  # dimension of the feedforward network model in ``nn.TransformerEncoder``
nlayers = 2  # number of ``nn.TransformerEncoderLayer`` in ``nn.TransformerEncoder``
nhead = 2  # number of heads in ``nn.MultiheadAttention``
dropout = 0.2  # dropout probability
model = TransformerModel(ntokens, emsize, nhead, d_hid, nlayers, dropout).to(device)
print("parameters", sum(p.numel() for p in model.parameters()))

criterion = nn.CrossEntropyLoss()
lr = 5.0  # learning rate
optimizer = torch.optim.SGD(model.parameters(), lr=lr)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)


def train(model: nn.Module) -> None:
    model.train()  # turn on train mode
    total_loss = 0.
    log_interval = 2
    start_time = time.time()

    num_batches = len(train_data) // bptt
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        output = model(data)
        output_flat = output.view(-1, ntokens)
        loss = criterion(output_flat, targets)

        optimizer.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()

        total_loss += loss.item()
        if batch % log_interval == 0 and batch > 0:
            lr = scheduler.get_last_lr()[0]
            ms_per_batch = (time.time() - start_time) * 1000 / log_interval
            cur_loss = total_loss / log_interval
            ppl = math.exp(cur_loss)
            assert ms_per_batch >= 0
            print(f"| epoch {epoch:3d} | {batch:5d}/{num_batches:5d} batches | "
                  f"lr {lr:02.2f} | loss {cur_loss:5.2f} | ppl {ppl:8.2f} | "
                  f"grad norm {norm.item():.4f}")
            total_loss = 0
            start_time = time.time()


def evaluate(model: nn.Module, eval_data: Tensor) -> float:
    model.eval()  # turn on evaluation mode
    total_loss = 0.
    with torch.no_grad():
        for i in range(0, eval_data.size(0) - 1, bptt):
            data, targets = get_batch(eval_data, i)
            seq_len = data.size(0)
            output = model(data)
            output_flat = output.view(-1, ntokens)
            total_loss += seq_len * criterion(output_flat, targets).item()
    return total_loss / (len(eval_data) - 1)


best_val_loss = float("inf")
epochs = 3
best_model = None
for epoch in range(1, epochs + 1):
    train(model)
    val_loss = evaluate(model, val_data)
    val_ppl = math.exp(val_loss)
    print("-" * 89)
    print(f"| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | valid ppl {val_ppl:8.2f}")
    print("-" * 89)

    if val_loss < best_val_loss:
        best_val_loss = val_loss
        best_model = copy.deepcopy(model.state_dict())

    scheduler.step()

model.load_state_dict(best_model)  # load best model states
test_loss = evaluate(model, test_data)
test_ppl = math.exp(test_loss)
print("=" * 89)
print(f"| End of training | test loss {test_loss:5.2f} | test ppl {test_ppl:8.2f}")
print("=" * 89)

# greedy continuation of a prompt: the same causal mask, given as is_causal=True to the encoder
model.eval()
prompt = pattern[:4].view(-1, 1)
with torch.no_grad():
    seq = prompt
    for _ in range(8):
        src = model.pos_encoder(model.embedding(seq) * math.sqrt(model.d_model))
        mask = nn.Transformer.generate_square_subsequent_mask(len(seq))
        h = model.transformer_encoder(src, mask=mask, is_causal=True)
        nxt = model.linear(h[-1]).argmax(-1, keepdim=True)
        seq = torch.cat([seq, nxt], 0)
print("generated", seq.view(-1).tolist())
print("mask", nn.Transformer.generate_square_subsequent_mask(3).tolist())
