"""A BiLSTM-CRF named-entity tagger the way the PyTorch tutorial writes it: per-sentence forward
algorithm with a hand-written log_sum_exp, gold path score, Viterbi decoding with max/argmax and
backtracking through backpointers, SGD with weight decay; then a batched CRF with masks,
torch.logsumexp and a vectorised Viterbi (gather-based backtrace) trained with Adam."""

import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(1)
START_TAG, STOP_TAG = "<START>", "<STOP>"
EMBEDDING_DIM, HIDDEN_DIM = 5, 4


def argmax(vec):
    _, idx = torch.max(vec, 1)
    return idx.item()


def prepare_sequence(seq, to_ix):
    return torch.tensor([to_ix[w] for w in seq], dtype=torch.long)


def log_sum_exp(vec):
    max_score = vec[0, argmax(vec)]
    max_score_broadcast = max_score.view(1, -1).expand(1, vec.size()[1])
    return max_score + torch.log(torch.sum(torch.exp(vec - max_score_broadcast)))


class BiLSTM_CRF(nn.Module):
    def __init__(self, vocab_size, tag_to_ix, embedding_dim, hidden_dim):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.tag_to_ix = tag_to_ix
        self.tagset_size = len(tag_to_ix)
        self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True)
        self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)
        self.transitions = nn.Parameter(torch.randn(self.tagset_size, self.tagset_size))
        self.transitions.data[tag_to_ix[START_TAG], :] = -10000
        self.transitions.data[:, tag_to_ix[STOP_TAG]] = -10000
        self.hidden = self.init_hidden()

    def init_hidden(self):
        return (torch.randn(2, 1, self.hidden_dim // 2), torch.randn(2, 1, self.hidden_dim // 2))

    def _forward_alg(self, feats):
        init_alphas = torch.full((1, self.tagset_size), -10000.)
        init_alphas[0][self.tag_to_ix[START_TAG]] = 0.
        forward_var = init_alphas
        for feat in feats:
            alphas_t = []
            for next_tag in range(self.tagset_size):
                emit_score = feat[next_tag].view(1, -1).expand(1, self.tagset_size)
                trans_score = self.transitions[next_tag].view(1, -1)
                next_tag_var = forward_var + trans_score + emit_score
                alphas_t.append(log_sum_exp(next_tag_var).view(1))
            forward_var = torch.cat(alphas_t).view(1, -1)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        return log_sum_exp(terminal_var)

    def _get_lstm_features(self, sentence):
        self.hidden = self.init_hidden()
        embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
        lstm_out, self.hidden = self.lstm(embeds, self.hidden)
        lstm_out = lstm_out.view(len(sentence), self.hidden_dim)
        return self.hidden2tag(lstm_out)

    def _score_sentence(self, feats, tags):
        score = torch.zeros(1)
        tags = torch.cat([torch.tensor([self.tag_to_ix[START_TAG]], dtype=torch.long), tags])
        for i, feat in enumerate(feats):
            score = score + self.transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
        score = score + self.transitions[self.tag_to_ix[STOP_TAG], tags[-1]]
        return score

    def _viterbi_decode(self, feats):
        backpointers = []
        init_vvars = torch.full((1, self.tagset_size), -10000.)
        init_vvars[0][self.tag_to_ix[START_TAG]] = 0
        forward_var = init_vvars
        for feat in feats:
            bptrs_t, viterbivars_t = [], []
            for next_tag in range(self.tagset_size):
                next_tag_var = forward_var + self.transitions[next_tag]
                best_tag_id = argmax(next_tag_var)
                bptrs_t.append(best_tag_id)
                viterbivars_t.append(next_tag_var[0][best_tag_id].view(1))
            forward_var = (torch.cat(viterbivars_t) + feat).view(1, -1)
            backpointers.append(bptrs_t)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        best_tag_id = argmax(terminal_var)
        path_score = terminal_var[0][best_tag_id]
        best_path = [best_tag_id]
        for bptrs_t in reversed(backpointers):
            best_tag_id = bptrs_t[best_tag_id]
            best_path.append(best_tag_id)
        start = best_path.pop()
        assert start == self.tag_to_ix[START_TAG]
        best_path.reverse()
        return path_score, best_path

    def neg_log_likelihood(self, sentence, tags):
        feats = self._get_lstm_features(sentence)
        forward_score = self._forward_alg(feats)
        gold_score = self._score_sentence(feats, tags)
        return forward_score - gold_score

    def forward(self, sentence):
        lstm_feats = self._get_lstm_features(sentence)
        return self._viterbi_decode(lstm_feats)


training_data = [(
    "the wall street journal reported today that apple corporation made money".split(),
    "B I I I O O O B I O O".split()
), (
    "georgia tech is a university in georgia".split(),
    "B I O O O O B".split()
)]
word_to_ix = {}
for sentence, _tags in training_data:
    for word in sentence:
        if word not in word_to_ix:
            word_to_ix[word] = len(word_to_ix)
tag_to_ix = {"B": 0, "I": 1, "O": 2, START_TAG: 3, STOP_TAG: 4}
model = BiLSTM_CRF(len(word_to_ix), tag_to_ix, EMBEDDING_DIM, HIDDEN_DIM)
optimizer = optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)
with torch.no_grad():
    precheck_sent = prepare_sequence(training_data[0][0], word_to_ix)
    score, path = model(precheck_sent)
    print(f"{score.item():.4f}", path)
for epoch in range(20):
    for sentence, tags in training_data:
        model.zero_grad()
        sentence_in = prepare_sequence(sentence, word_to_ix)
        targets = torch.tensor([tag_to_ix[t] for t in tags], dtype=torch.long)
        loss = model.neg_log_likelihood(sentence_in, targets)
        loss.backward()
        optimizer.step()
    if epoch % 10 == 9:
        print(epoch, f"{loss.item():.4f}")
with torch.no_grad():
    score, path = model(prepare_sequence(training_data[0][0], word_to_ix))
    print(f"{score.item():.4f}", path)


# ---- a batched CRF over padded sentences ----
class CRF(nn.Module):
    def __init__(self, num_tags):
        super().__init__()
        self.start = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.end = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.trans = nn.Parameter(torch.empty(num_tags, num_tags).uniform_(-0.1, 0.1))

    def log_partition(self, emissions, mask):
        score = self.start + emissions[:, 0]                       # (B, T)
        for t in range(1, emissions.size(1)):
            nxt = score.unsqueeze(2) + self.trans + emissions[:, t].unsqueeze(1)
            nxt = torch.logsumexp(nxt, dim=1)
            score = torch.where(mask[:, t].unsqueeze(1), nxt, score)
        return torch.logsumexp(score + self.end, dim=1)

    def gold(self, emissions, tags, mask):
        B, L = tags.shape
        ar = torch.arange(B)
        score = self.start[tags[:, 0]] + emissions[ar, 0, tags[:, 0]]
        for t in range(1, L):
            step = self.trans[tags[:, t - 1], tags[:, t]] + emissions[ar, t, tags[:, t]]
            score = score + step * mask[:, t]
        last = tags.gather(1, (mask.sum(1) - 1).unsqueeze(1)).squeeze(1)
        return score + self.end[last]

    def forward(self, emissions, tags, mask):
        return (self.log_partition(emissions, mask) - self.gold(emissions, tags, mask)).mean()

    def decode(self, emissions, mask):
        B, L, _ = emissions.shape
        score = self.start + emissions[:, 0]
        history = []
        for t in range(1, L):
            nxt = score.unsqueeze(2) + self.trans
            best, idx = nxt.max(dim=1)
            nxt = best + emissions[:, t]
            score = torch.where(mask[:, t].unsqueeze(1), nxt, score)
            history.append(idx)
        score = score + self.end
        best_score, best_last = score.max(dim=1)
        lengths = mask.sum(1)
        paths = []
        for b in range(B):
            tag = best_last[b]
            path = [tag.item()]
            for hist in reversed(history[:lengths[b] - 1]):
                tag = hist[b].gather(0, tag.view(1)).squeeze(0)
                path.append(tag.item())
            paths.append(path[::-1])
        return best_score, paths


class Tagger(nn.Module):
    def __init__(self, vocab, tags):
        super().__init__()
        self.emb = nn.Embedding(vocab, 8, padding_idx=0)
        self.lstm = nn.LSTM(8, 6, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(12, tags)
        self.crf = CRF(tags)

    def emissions(self, words):
        out, _ = self.lstm(self.emb(words))
        return self.proj(out)


def sample(n):
    words = torch.randint(1, 12, (n,))
    tags = (words > 6).long() + (words > 9).long()
    return words, tags


lens = [5, 3, 6, 4, 2, 6]
batch = [sample(n) for n in lens]
L = max(lens)
words = torch.zeros(len(lens), L, dtype=torch.long)
gold = torch.zeros(len(lens), L, dtype=torch.long)
for i, (w, t) in enumerate(batch):
    words[i, :len(w)], gold[i, :len(t)] = w, t
mask = words != 0
tagger = Tagger(12, 3)
opt = optim.Adam(tagger.parameters(), lr=0.05)
for step in range(25):
    opt.zero_grad()
    nll = tagger.crf(tagger.emissions(words), gold, mask)
    nll.backward()
    opt.step()
    if step % 8 == 0:
        print(step, f"{nll.item():.4f}")
with torch.no_grad():
    best, paths = tagger.crf.decode(tagger.emissions(words), mask)
print([round(s, 3) for s in best.tolist()])
print(paths)
print(all(p == gold[i, :lens[i]].tolist() for i, p in enumerate(paths)))
