"""The nn kernels torch exposes at its top level with their own signatures
(ndgrad/nn/toplevel_compat.py): values, gradients and tuples against torch."""

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.nn import toplevel_compat

from _compare import outcome

RNG = np.random.default_rng(0)


def _arr(*shape, positive=False):
    a = RNG.standard_normal(shape)
    return np.abs(a) + 0.1 if positive else a


A3 = _arr(3, 4)
B3 = _arr(3, 4)
T01 = (RNG.random((3, 4)) > 0.5).astype(np.float64)
SIGN = np.where(RNG.random(3) > 0.5, 1.0, -1.0)
SIGN34 = np.where(RNG.random((3, 4)) > 0.5, 1.0, -1.0)
IMG = _arr(2, 3, 5, 5)
W2 = _arr(4, 3, 3, 3)
B4 = _arr(4)
SEQ = _arr(6, 2, 3)
WTBC = _arr(3, 3, 4)
X1 = _arr(2, 3, 8)
THETA = _arr(2, 2, 3)
GRID = np.clip(_arr(2, 4, 4, 2), -1, 1)
LN = _arr(2, 3, 4)
CELL_X, CELL_H = _arr(2, 3), _arr(2, 5)
WIH3, WHH3 = _arr(15, 3), _arr(15, 5)
WIH4, WHH4 = _arr(20, 3), _arr(20, 5)
WIH1, WHH1 = _arr(5, 3), _arr(5, 5)
BIH1, BHH1 = _arr(5), _arr(5)
BIH3, BHH3 = _arr(15), _arr(15)
LN_W, LN_B = _arr(3, 4), _arr(3, 4)


def _t(m, a, rg=True):
    return m.tensor(a, dtype=m.float64, requires_grad=rg)


def _run(fn, m):
    """Output values (flattened list of arrays) and the gradients of the float outputs' sum."""
    leaves = []

    def leaf(a, rg=True):
        t = _t(m, a, rg)
        if rg:
            leaves.append(t)
        return t
    out = fn(m, leaf)
    outs = out if isinstance(out, tuple) else (out,)
    vals = [o.detach().numpy().copy() for o in outs]
    diff = [o for o in outs if o.requires_grad]
    if diff:
        total = sum((o * o).sum() for o in diff)
        total.backward()
    grads = [leaf_.grad.numpy() if leaf_.grad is not None else None for leaf_ in leaves]
    return vals, grads


CASES = {
    "bce_logits": lambda m, L: m.binary_cross_entropy_with_logits(L(A3), L(T01, False)),
    "bce_logits_weights": lambda m, L: m.binary_cross_entropy_with_logits(
        L(A3), L(T01, False), L(np.abs(B3), False), L(np.abs(B3[0]), False), 1),
    "cosine_embedding": lambda m, L: m.cosine_embedding_loss(L(A3), L(B3), L(SIGN, False),
                                                             0.1, 2),
    "hinge_embedding": lambda m, L: m.hinge_embedding_loss(L(A3), L(SIGN34, False)),
    "hinge_embedding_mean": lambda m, L: m.hinge_embedding_loss(L(A3), L(SIGN34, False), 0.5,
                                                                1),
    "kl_div": lambda m, L: m.kl_div(L(A3), L(np.abs(B3), False)),
    "kl_div_mean_log_target": lambda m, L: m.kl_div(L(A3), L(B3), 1, log_target=True),
    "margin_ranking": lambda m, L: m.margin_ranking_loss(L(A3[:, 0]), L(B3[:, 0]),
                                                         L(SIGN, False), 0.2, 1),
    "poisson_nll": lambda m, L: m.poisson_nll_loss(L(A3), L(np.abs(B3), False), True, True,
                                                   1e-8, 2),
    "triplet_margin": lambda m, L: m.triplet_margin_loss(L(A3), L(B3), L(A3 * 0.5), 1.0, 2.0,
                                                         1e-6, True, 1),
    "constant_pad_nd": lambda m, L: m.constant_pad_nd(L(A3), [1, 2, 0, 1], 0.5),
    "convolution": lambda m, L: m.convolution(L(IMG), L(W2), L(B4), [1, 1], [1, 1], [1, 1],
                                              False, [0, 0], 1),
    "convolution_transposed": lambda m, L: m.convolution(
        L(IMG), L(W2.transpose(1, 0, 2, 3)), None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
    "conv_tbc": lambda m, L: m.conv_tbc(L(SEQ), L(WTBC), L(B4), 1),
    "grid_sampler": lambda m, L: m.grid_sampler(L(IMG[:, :, :4, :4]), L(GRID), 0, 1, False),
    "grid_sampler_nearest": lambda m, L: m.grid_sampler(L(IMG[:, :, :4, :4]), L(GRID, False),
                                                        1, 0, True),
    "affine_grid_generator": lambda m, L: m.affine_grid_generator(L(THETA), [2, 3, 4, 5],
                                                                  False),
    "adaptive_max_pool1d": lambda m, L: m.adaptive_max_pool1d(L(X1), [3]),
    "max_pool1d_with_indices": lambda m, L: m.max_pool1d_with_indices(L(X1), [3], [], [1]),
    "max_pool1d_with_indices_stride": lambda m, L: m.max_pool1d_with_indices(
        L(X1), 2, 2, 0, 1, True),
    "rms_norm": lambda m, L: m.rms_norm(L(LN), [4], L(B4), 1e-5),
    "native_layer_norm": lambda m, L: m.native_layer_norm(L(LN), [3, 4], L(LN_W),
                                                          L(LN_B), 1e-5),
    "native_batch_norm_eval": lambda m, L: m.native_batch_norm(
        L(IMG), L(B4[:3]), L(B4[1:]), L(B4[:3], False), L(np.abs(B4[1:]), False), False,
        0.1, 1e-5),
    "native_batch_norm_train": lambda m, L: m.native_batch_norm(
        L(IMG), L(B4[:3]), None, L(B4[:3], False), L(np.abs(B4[1:]), False), True, 0.1, 1e-5),
    "frobenius_norm": lambda m, L: m.frobenius_norm(L(LN), [1, 2]),
    "frobenius_norm_keepdim": lambda m, L: m.frobenius_norm(L(LN), [0], True),
    "nuclear_norm": lambda m, L: m.nuclear_norm(L(A3)),
    "nuclear_norm_dim": lambda m, L: m.nuclear_norm(L(LN), [0, 2], True),
    "norm_except_dim": lambda m, L: m.norm_except_dim(L(LN), 2, 1),
    "norm_except_dim_all": lambda m, L: m.norm_except_dim(L(LN), 3, -1),
    "lstm_cell": lambda m, L: m.lstm_cell(L(CELL_X), [L(CELL_H), L(CELL_H * 0.5)], L(WIH4),
                                          L(WHH4)),
    "gru_cell": lambda m, L: m.gru_cell(L(CELL_X), L(CELL_H), L(WIH3), L(WHH3), L(BIH3),
                                        L(BHH3)),
    "rnn_tanh_cell": lambda m, L: m.rnn_tanh_cell(L(CELL_X), L(CELL_H), L(WIH1), L(WHH1),
                                                  L(BIH1), L(BHH1)),
    "rnn_relu_cell": lambda m, L: m.rnn_relu_cell(L(CELL_X), L(CELL_H), L(WIH1), L(WHH1)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch_values_and_gradients(case):
    tv, tg = _run(CASES[case], torch)
    nv, ng = _run(CASES[case], ndgrad)
    assert len(tv) == len(nv)
    for a, b in zip(tv, nv):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
    for a, b in zip(tg, ng):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_ctc_loss_int_and_tensor_lengths():
    lp = np.log(np.random.default_rng(1).dirichlet(np.ones(4), size=(5, 2)))
    targets = [[1, 2], [1, 1]]
    for lengths in (([5, 5], [2, 2]), "tensor"):
        res = []
        for m in (torch, ndgrad):
            x = _t(m, lp)
            il, tl = ((m.tensor([5, 5]), m.tensor([2, 2])) if lengths == "tensor"
                      else lengths)
            loss = m.ctc_loss(x, m.tensor(targets), il, tl)
            mean = m.ctc_loss(x, m.tensor(targets), il, tl, 0, 1)
            (loss.sum() + mean).backward()
            res.append((loss.detach().numpy(), mean.item(), x.grad.numpy()))
        for a, b in zip(*res):
            np.testing.assert_allclose(a, b, rtol=1e-9)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_embedding_bag_tuple(mode, dtype):
    w = _arr(6, 3)
    res = []
    for m in (torch, ndgrad):
        weight = m.tensor(w, dtype=getattr(m, dtype), requires_grad=True)
        out = m.embedding_bag(weight, m.tensor([0, 2, 4, 5, 1]), m.tensor([0, 2, 2]), False,
                              mode)
        out[0].sum().backward()
        res.append([o.detach().numpy() for o in out] + [weight.grad.numpy()])
    for a, b in zip(*res):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b)


def test_dropout_variants_follow_torch_streams():
    for name, args in (("native_dropout", (0.4, True)), ("native_dropout", (0.4, None)),
                       ("native_dropout", (0.4, False)), ("feature_dropout", (0.5, True)),
                       ("feature_dropout_", (0.5, True)), ("alpha_dropout_", (0.5, True)),
                       ("feature_alpha_dropout_", (0.5, True)), ("feature_dropout", (0.5, False))):
        res = []
        for m in (torch, ndgrad):
            m.manual_seed(3)
            x = m.arange(24.0).reshape(2, 3, 4)
            out = getattr(m, name)(x, *args)
            outs = out if isinstance(out, tuple) else (out,)
            res.append([o.tolist() for o in outs] + [x.tolist()])
        assert res[0] == res[1], name


def test_native_dropout_gradient():
    for m in (torch, ndgrad):
        m.manual_seed(0)
        x = m.ones(10, dtype=m.float64, requires_grad=True)
        out, mask = m.native_dropout(x, 0.5, True)
        out.sum().backward()
        assert x.grad.tolist() == (mask.double() * 2).tolist()


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("kind", ["lengths", "offsets", "initial", "axis-2"])
def test_segment_reduce_matches_torch(reduce, kind):
    data = _arr(6, 2)
    lengths = [2, 0, 3, 1]

    def run(m):
        x = _t(m, data)
        kw = {}
        if kind == "offsets":
            kw["offsets"] = m.tensor(np.concatenate([[0], np.cumsum(lengths)]))
        else:
            kw["lengths"] = m.tensor(lengths)
        if kind == "initial":
            kw["initial"] = 0.5
        if kind == "axis-2":
            kw["axis"] = -2
        out = m.segment_reduce(x, reduce, **kw)
        finite = out.detach().isfinite()
        (out * finite).nan_to_num().sum().backward()
        return out.detach().numpy(), x.grad.numpy()
    for a, b in zip(run(torch), run(ndgrad)):
        np.testing.assert_allclose(a, b, rtol=1e-9, equal_nan=True)


@pytest.mark.parametrize("fn", [
    lambda m: m.segment_reduce(m.ones(3), "sum", lengths=m.tensor([1, 1])),
    lambda m: m.segment_reduce(m.ones(3), "avg", lengths=m.tensor([3])),
    lambda m: m.segment_reduce(m.ones(3), "sum"),
    lambda m: m.segment_reduce(m.ones(3, 2), "sum", lengths=m.tensor([3]), axis=1),
    lambda m: m.segment_reduce(m.ones(3), "sum", lengths=m.tensor([-1, 4])),
    lambda m: m.segment_reduce(m.ones(3, dtype=m.int64), "sum", lengths=m.tensor([3])),
    lambda m: m.segment_reduce(m.ones(3), "sum", lengths=m.tensor([3]), indices=m.tensor([0])),
    lambda m: m.kl_div("a", m.ones(1)),
    lambda m: m.conv_tbc(m.ones(2, 2), m.ones(1, 2, 2), m.ones(2)),
    lambda m: m.norm_except_dim("v"),
    lambda m: m.norm_except_dim(m.ones(3, 4), 2, 2),
    lambda m: m.norm_except_dim(m.ones(3, 4), 2, -3),
    lambda m: m.nuclear_norm(m.ones(3)),
])
def test_errors_match_torch(fn):
    t, n = outcome(lambda: fn(torch)), outcome(lambda: fn(ndgrad))
    assert t[0] == n[0], (t, n)
    assert t[1].split(" ")[0] == n[1].split(" ")[0], (t, n)


def test_conv_tbc_functional_and_list():
    assert ndgrad._NN_TOPLEVEL_COMPAT == toplevel_compat.NAMES
    for name in toplevel_compat.NAMES:
        assert hasattr(torch, name) and callable(getattr(ndgrad, name)), name
    assert ndgrad.nn.functional.conv_tbc is not None
    x = _arr(5, 2, 3)
    w, b = _arr(2, 3, 4), _arr(4)
    ref = torch.nn.functional.conv_tbc(torch.tensor(x), torch.tensor(w), torch.tensor(b), 0)
    got = ndgrad.nn.functional.conv_tbc(ndgrad.tensor(x), ndgrad.tensor(w), ndgrad.tensor(b))
    np.testing.assert_allclose(ref.numpy(), got.numpy(), rtol=1e-12)
