"""Normalization and embedding (ndgrad.nn.functional and ndgrad.nn) against PyTorch."""

# ruff: noqa: B023  (closures over loop variables are called within the same iteration)

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ndgrad
import ndgrad.nn as nn
import ndgrad.nn.functional as F
from tests.nn_compare import assert_close, check_module, copy_state, to_ndgrad

RNG = np.random.default_rng(0)


def _randn(*shape):
    return torch.from_numpy(RNG.standard_normal(shape))


def _pair(tcls, ncls, *args, **kwargs):
    t = tcls(*args, **kwargs).double()
    n = ncls(*args, **kwargs).double()
    return t, n


# ---------------------------------------------------------------------------- functional
def _grads(tf, nf, arrays, order2=True):
    """Outputs, first and second derivatives of tf (torch) and nf (ndgrad) agree."""
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    n_in = [ndgrad.tensor(a, requires_grad=True) for a in arrays]
    yt, yn = tf(*t_in), nf(*n_in)
    assert_close(yn, yt, what="output")
    g = RNG.standard_normal(tuple(yt.shape))
    gt = torch.autograd.grad(yt, t_in, torch.tensor(g), create_graph=True)
    gn = ndgrad.autograd.grad(yn, n_in, ndgrad.tensor(g), create_graph=True)
    for a, b in zip(gn, gt):
        assert_close(a, b, what="gradient")
    if order2:
        vs = [RNG.standard_normal(tuple(a.shape)) for a in gt]
        st = sum((a * torch.tensor(v)).sum() for a, v in zip(gt, vs))
        sn = sum((a * ndgrad.tensor(v)).sum() for a, v in zip(gn, vs))
        for a, b in zip(ndgrad.autograd.grad(sn, n_in, allow_unused=True),
                        torch.autograd.grad(st, t_in, allow_unused=True)):
            assert (a is None) == (b is None)
            if a is not None:
                assert_close(a, b, rtol=1e-8, atol=1e-10, what="second order")
    return yt, yn


def test_fused_ops_gradgrad_and_node_names():
    x = RNG.standard_normal((4, 6, 5))
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    wl, bl = RNG.standard_normal((6, 5)), RNG.standard_normal((6, 5))
    cases = [
        (lambda x, w, b: TF.layer_norm(x, (6, 5), w, b), lambda x, w, b: F.layer_norm(
            x, (6, 5), w, b), [x, wl, bl], "NativeLayerNormBackward0"),
        (lambda x, w: TF.rms_norm(x, (5,), w[0]), lambda x, w: F.rms_norm(x, (5,), w[0]),
         [x, wl], "FusedRmsNormBackward0"),
        (lambda x, w, b: TF.group_norm(x, 3, w, b), lambda x, w, b: F.group_norm(x, 3, w, b),
         [x, w, b], "NativeGroupNormBackward0"),
        (lambda x, w, b: TF.group_norm(x.reshape(2, 6, 10), 2, w, b),     # folded backward
         lambda x, w, b: F.group_norm(x.reshape(2, 6, 10), 2, w, b), [x, w, b],
         "NativeGroupNormBackward0"),
        (lambda x, w, b: TF.batch_norm(x, None, None, w, b, True, eps=0.3),
         lambda x, w, b: F.batch_norm(x, None, None, w, b, True, eps=0.3), [x, w, b],
         "NativeBatchNormBackward0"),
        (lambda x: TF.batch_norm(x, None, None, training=True),
         lambda x: F.batch_norm(x, None, None, training=True), [x], "NativeBatchNormBackward0"),
    ]
    for tf, nf, arrays, node in cases:
        yt, yn = _grads(tf, nf, arrays)
        assert type(yn.grad_fn).__name__ == node


def test_batch_norm_saved_values_and_edges():
    x = ndgrad.tensor(RNG.standard_normal((3, 2, 4)), requires_grad=True)
    y = F.batch_norm(x, None, None, ndgrad.ones(2, dtype=ndgrad.float64, requires_grad=True),
                     None, True)
    fn = y.grad_fn
    assert fn._saved_input is x or ndgrad.equal(fn._saved_input, x)
    assert tuple(fn._saved_result1.shape) == (2,) and tuple(fn._saved_result2.shape) == (2,)
    assert fn.next_functions[2] == (None, 0)
    assert fn._saved_running_mean is None and fn._saved_training is True
    rm = ndgrad.zeros(2, dtype=ndgrad.float64)
    y2 = F.batch_norm(x, rm, ndgrad.ones(2, dtype=ndgrad.float64), training=True)
    assert ndgrad.equal(y2.grad_fn._saved_running_mean, rm)
    yl = F.layer_norm(x, (4,))
    assert yl.grad_fn._saved_weight is None
    assert tuple(yl.grad_fn._saved_result1.shape) == (3, 2, 1)


def test_batch_norm_running_stats_and_eval():
    x = _randn(5, 3, 4)
    rm_t, rv_t = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    rm_n, rv_n = ndgrad.zeros(3, dtype=ndgrad.float64), ndgrad.ones(3, dtype=ndgrad.float64)
    for _ in range(3):
        TF.batch_norm(x, rm_t, rv_t, training=True, momentum=0.3)
        F.batch_norm(to_ndgrad(x), rm_n, rv_n, training=True, momentum=0.3)
        x = x * 1.5 + 0.2
    assert_close(rm_n, rm_t, what="running_mean")
    assert_close(rv_n, rv_t, what="running_var")
    assert rm_n._version == 0      # written by the op, as torch's kernel: no version bump
    _grads(lambda x: TF.batch_norm(x, rm_t, rv_t, training=False),
           lambda x: F.batch_norm(x, rm_n, rv_n, training=False), [x.numpy()])


def test_instance_norm_running_stats():
    x = _randn(4, 3, 5)
    rm_t, rv_t = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    rm_n, rv_n = ndgrad.zeros(3, dtype=ndgrad.float64), ndgrad.ones(3, dtype=ndgrad.float64)
    yt = TF.instance_norm(x, rm_t, rv_t, momentum=0.2)
    yn = F.instance_norm(to_ndgrad(x), rm_n, rv_n, momentum=0.2)
    assert_close(yn, yt)
    assert_close(rm_n, rm_t)
    assert_close(rv_n, rv_t)


def test_normalize_lrn_rms_eps_none():
    x = RNG.standard_normal((2, 5, 3))
    _grads(lambda x: TF.normalize(x, p=3.0, dim=1), lambda x: F.normalize(x, p=3.0, dim=1),
           [x])
    _grads(lambda x: TF.local_response_norm(x, 3, alpha=0.5, k=1.5),
           lambda x: F.local_response_norm(x, 3, alpha=0.5, k=1.5), [x])
    xf = _randn(2, 3).float()
    assert_close(F.rms_norm(to_ndgrad(xf), (3,)), TF.rms_norm(xf, (3,)), rtol=1e-6,
                 atol=1e-6)


def _raises_like(tfn, nfn):
    with pytest.raises(Exception) as te:
        tfn()
    with pytest.raises(type(te.value)) as ne:
        nfn()
    return str(te.value), str(ne.value)


def test_functional_errors_like_torch():
    x = _randn(1, 3)
    t, n = _raises_like(lambda: TF.batch_norm(x, None, None, training=True),
                        lambda: F.batch_norm(to_ndgrad(x), None, None, training=True))
    assert "Expected more than 1 value per channel when training" in n
    x = _randn(2, 3)
    _raises_like(lambda: TF.batch_norm(x, torch.zeros(4), torch.ones(3), training=True),
                 lambda: F.batch_norm(to_ndgrad(x), ndgrad.zeros(4), ndgrad.ones(3),
                                      training=True))
    _raises_like(lambda: TF.batch_norm(x, None, None), lambda: F.batch_norm(to_ndgrad(x), None,
                                                                             None))
    # eps: positive in training, non-negative in evaluation (torch_moduledb's BatchNorm errors)
    for eps, training in ((0.0, True), (-1.0, True), (-1.0, False)):
        t, n = _raises_like(
            lambda: TF.batch_norm(x, torch.zeros(3), torch.ones(3), training=training, eps=eps),
            lambda: F.batch_norm(to_ndgrad(x), ndgrad.zeros(3), ndgrad.ones(3),
                                 training=training, eps=eps))
        assert n == t
    z, o = ndgrad.zeros(3, dtype=ndgrad.float64), ndgrad.ones(3, dtype=ndgrad.float64)
    F.batch_norm(to_ndgrad(x), z, o, eps=0.0)          # evaluation: 0 is fine
    x = _randn(2, 7, 4)
    t, n = _raises_like(lambda: TF.group_norm(x, 2), lambda: F.group_norm(to_ndgrad(x), 2))
    assert "divisible by num_groups" in n
    t, n = _raises_like(lambda: TF.layer_norm(x, (3,)), lambda: F.layer_norm(to_ndgrad(x), (3,)))
    assert n == t.replace("torch", "ndgrad")
    _raises_like(lambda: TF.layer_norm(x, (4,), torch.ones(3)),
                 lambda: F.layer_norm(to_ndgrad(x), (4,), ndgrad.ones(3)))
    _raises_like(lambda: TF.instance_norm(_randn(2, 3, 1)),
                 lambda: F.instance_norm(to_ndgrad(_randn(2, 3, 1))))
    _raises_like(lambda: TF.local_response_norm(_randn(2, 3), 2),
                 lambda: F.local_response_norm(to_ndgrad(_randn(2, 3)), 2))


# ---------------------------------------------------------------------------- embedding
def _emb_case(tf, nf, W, *extra):
    wt = torch.tensor(W, requires_grad=True)
    wn = ndgrad.tensor(W, requires_grad=True)
    yt, yn = tf(wt, *extra), nf(wn, *[to_ndgrad(e) for e in extra])
    assert_close(yn, yt)
    g = RNG.standard_normal(tuple(yt.shape))
    yt.backward(torch.tensor(g))
    yn.backward(ndgrad.tensor(g))
    tg = wt.grad.to_dense() if wt.grad.is_sparse else wt.grad   # ndgrad's is dense
    assert_close(wn.grad, tg, what="weight grad")
    assert_close(wn.detach(), wt.detach(), what="weight after the call")
    return yt, yn


def test_embedding_options():
    W = RNG.standard_normal((7, 4)) * 2
    idx = torch.tensor([[1, 2, 2], [6, 2, 0]])
    for kw in [{}, {"padding_idx": 2}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
               {"max_norm": 1.0}, {"max_norm": 1.5, "norm_type": 1.0}, {"sparse": True}]:
        yt, yn = _emb_case(lambda w, i: TF.embedding(i, w, **kw),
                           lambda w, i: F.embedding(i, w, **kw), W, idx)
        assert type(yn.grad_fn).__name__ == "EmbeddingBackward0"
    # second order: the backward op is differentiable. (Not compared with
    # scale_grad_by_freq: PyTorch's double backward leaves out the 1/frequency factor, ndgrad's
    # is the transpose of its backward.)
    _grads(lambda w: TF.embedding(idx, w, padding_idx=1) ** 2,
           lambda w: F.embedding(to_ndgrad(idx), w, padding_idx=1) ** 2, [W])


def test_embedding_bag_modes():
    W = RNG.standard_normal((7, 4))
    i1, off = torch.tensor([1, 2, 4, 2, 2, 6, 0]), torch.tensor([0, 3, 3, 5])
    i2 = torch.tensor([[1, 2, 2], [6, 2, 0]])
    for mode in ("sum", "mean", "max"):
        for kw in [{}, {"padding_idx": 2}, {"include_last_offset": True}]:
            _emb_case(lambda w, i, o: TF.embedding_bag(i, w, o, mode=mode, **kw),
                      lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, **kw), W, i1, off)
        _emb_case(lambda w, i: TF.embedding_bag(i, w, mode=mode),
                  lambda w, i: F.embedding_bag(i, w, mode=mode), W, i2)
    psw = RNG.standard_normal(7)
    pt, pn = torch.tensor(psw, requires_grad=True), ndgrad.tensor(psw, requires_grad=True)
    _emb_case(lambda w, i, o: TF.embedding_bag(i, w, o, mode="sum", per_sample_weights=pt,
                                               padding_idx=2),
              lambda w, i, o: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=pn,
                                              padding_idx=2), W, i1, off)
    assert_close(pn.grad, pt.grad, what="per_sample_weights grad")


def test_embedding_and_one_hot_errors():
    W = _randn(5, 3)
    cases = [
        (lambda m: m.embedding(torch_or(m, [1, 7]), conv(m, W))),
        (lambda m: m.embedding(torch_or(m, [1.0, 2.0]), conv(m, W))),
        (lambda m: m.embedding(torch_or(m, [1, 2]), conv(m, W), padding_idx=5)),
        (lambda m: m.embedding(torch_or(m, [1, 2]), conv(m, _randn(5)))),
        (lambda m: m.one_hot(torch_or(m, [1, -1]))),
        (lambda m: m.one_hot(torch_or(m, [1, 3]), 3)),
        (lambda m: m.one_hot(torch_or(m, [1.0]))),
        (lambda m: m.one_hot(torch_or(m, np.zeros(0, np.int64)))),
        (lambda m: m.embedding_bag(torch_or(m, [1, 2]), conv(m, W), torch_or(m, [1]))),
        (lambda m: m.embedding_bag(torch_or(m, [1, 2]), conv(m, W), torch_or(m, [0]),
                                   mode="mean", per_sample_weights=conv(m, _randn(2)))),
    ]
    for case in cases:
        t, n = _raises_like(lambda: case(TF), lambda: case(F))
        first = t.splitlines()[0].split("(")[0].strip()
        assert n.split("(")[0].strip() == first.replace("torch.", "ndgrad."), (n, t)
    oh = F.one_hot(ndgrad.tensor([0, 2]), -1)
    assert oh.dtype == ndgrad.int64 and tuple(oh.shape) == (2, 3)
    assert tuple(F.one_hot(ndgrad.tensor(np.zeros((0, 2), np.int64)), 4).shape) == (0, 2, 4)


def test_embedding_bag_error_messages_like_torch():
    # the checks torch's functional makes, in its order, with its words (a Size prints as
    # torch.Size), and the kernel's index check (a RuntimeError naming the position)
    W = _randn(5, 3)
    i8 = [1, 2, 4, 0, 4, 3, 2, 1]
    cases = [
        lambda m: m.embedding_bag(torch_or(m, i8), conv(m, W), torch_or(m, [0, 4]),
                                  per_sample_weights=conv(m, _randn(3))),
        lambda m: m.embedding_bag(torch_or(m, i8), conv(m, _randn(5)), torch_or(m, [0, 4]),
                                  per_sample_weights=conv(m, _randn(2))),
        lambda m: m.embedding_bag(torch_or(m, i8), conv(m, W), torch_or(m, [0, 4]), mode="min"),
        lambda m: m.embedding_bag(torch_or(m, i8), conv(m, W), torch_or(m, [0, 4]), mode="max",
                                  scale_grad_by_freq=True),
        lambda m: m.embedding_bag(torch_or(m, i8), conv(m, W), torch_or(m, [0, 9])),
        lambda m: m.embedding_bag(torch_or(m, [1, 5, 2]), conv(m, W), torch_or(m, [0, 2])),
        lambda m: m.embedding_bag(torch_or(m, [[1, 2], [-1, 2]]), conv(m, W), mode="sum"),
        lambda m: m.embedding_bag(torch_or(m, [1, 5, 2]), conv(m, W), torch_or(m, [0, 2]),
                                  mode="max"),
        lambda m: m.embedding_bag(torch_or(m, [1, 5, 2]), conv(m, W).double(),
                                  torch_or(m, [0, 2])),
        # max_norm renormalizes first: torch's select() error, and -1 wraps there
        lambda m: m.embedding_bag(torch_or(m, [1, 5, 2]), conv(m, W), torch_or(m, [0, 2]),
                                  max_norm=1.0),
        lambda m: m.embedding(torch_or(m, [1, -6, 7]), conv(m, W), max_norm=1.0),
        lambda m: m.embedding(torch_or(m, [1, -1, 2]), conv(m, W), max_norm=1.0),
    ]
    for case in cases:
        t, n = _raises_like(lambda: case(TF), lambda: case(F))
        assert n.replace("ndgrad.", "torch.") == t, (n, t)


def test_embedding_bag_scale_grad_by_freq():
    # each row's gradient divided by how often its index occurs; torch 2.13's CPU kernel
    # divides a once-occurring index sorted after a repeated one by the repeated one's count
    # (pytorch/pytorch#190063, fixed after 2.13): ndgrad gives the documented value
    w = ndgrad.ones(4, 3, requires_grad=True)
    F.embedding_bag(ndgrad.tensor([1, 1, 3]), w, ndgrad.tensor([0]), mode="sum",
                    scale_grad_by_freq=True).sum().backward()
    assert w.grad[:, 0].tolist() == [0.0, 1.0, 0.0, 1.0]
    tw = torch.ones(4, 3, requires_grad=True)
    TF.embedding_bag(torch.tensor([1, 1, 3]), tw, torch.tensor([0]), mode="sum",
                     scale_grad_by_freq=True).sum().backward()
    assert tw.grad[:, 0].tolist() in ([0.0, 1.0, 0.0, 0.5], [0.0, 1.0, 0.0, 1.0])
    # with sparse gradients torch refuses the flag when backward runs
    errs = []
    for lib in (torch, ndgrad):
        bag = lib.nn.EmbeddingBag(5, 2, mode="mean", sparse=True, scale_grad_by_freq=True)
        out = bag(lib.tensor([1, 2, 2]), lib.tensor([0, 1]))
        with pytest.raises(RuntimeError) as e:
            out.sum().backward()
        errs.append(str(e.value))
    assert errs[0] == errs[1]


def torch_or(m, values):
    a = np.asarray(values)
    return torch.from_numpy(a) if m is TF else ndgrad.tensor(a)


def conv(m, t):
    return t if m is TF else to_ndgrad(t)


# ---------------------------------------------------------------------------- modules
@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (4, 3)), ("BatchNorm1d", (4, 3, 5)),
                                       ("BatchNorm2d", (2, 3, 4, 2)),
                                       ("BatchNorm3d", (2, 3, 2, 2, 2))])
def test_batchnorm_modules_train_and_eval(cls, shape):
    for kw in [{}, {"affine": False}, {"momentum": None}, {"track_running_stats": False},
               {"bias": False}]:
        t, n = _pair(getattr(torch.nn, cls), getattr(nn, cls), 3, **kw)
        with torch.no_grad():
            if t.weight is not None:
                t.weight.uniform_(0.5, 1.5)
            if t.bias is not None:
                t.bias.uniform_(-1, 1)
        check_module(t, n, _randn(*shape))
        for step in range(3):           # several steps: running statistics follow
            x = _randn(*shape) * (step + 1) + step
            assert_close(n(to_ndgrad(x)), t(x))
        for name, b in t.named_buffers():
            assert_close(dict(n.named_buffers())[name], b, what=name)
        t.eval()
        n.eval()
        check_module(t, n, _randn(*shape))
        assert repr(n) == repr(t)


def test_batchnorm_state_dict_and_errors():
    t, n = torch.nn.BatchNorm2d(4), nn.BatchNorm2d(4)
    assert list(n.state_dict()) == list(t.state_dict())
    assert n.num_batches_tracked.dtype == ndgrad.int64
    _raises_like(lambda: t(torch.zeros(2, 4, 3)), lambda: n(ndgrad.zeros(2, 4, 3)))
    _raises_like(lambda: torch.nn.BatchNorm1d(4)(torch.zeros(1, 4)),
                 lambda: nn.BatchNorm1d(4)(ndgrad.zeros(1, 4)))
    _raises_like(lambda: torch.nn.BatchNorm1d(4)(torch.zeros(3, 5)),
                 lambda: nn.BatchNorm1d(4)(ndgrad.zeros(3, 5)))
    # a checkpoint without num_batches_tracked (version < 2) still loads
    sd = {k: v for k, v in n.state_dict().items() if k != "num_batches_tracked"}
    n.load_state_dict(sd)


def test_lazy_batchnorm():
    m = nn.LazyBatchNorm2d()
    y = m(ndgrad.randn(2, 3, 4, 4))
    assert type(m) is nn.BatchNorm2d and m.num_features == 3
    assert list(m.state_dict()) == list(torch.nn.BatchNorm2d(3).state_dict())
    assert tuple(y.shape) == (2, 3, 4, 4)


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)),
                                       ("InstanceNorm1d", (3, 5)),
                                       ("InstanceNorm2d", (2, 3, 4, 3)),
                                       ("InstanceNorm3d", (2, 3, 2, 3, 2))])
def test_instancenorm_modules(cls, shape):
    for kw in [{}, {"affine": True}, {"track_running_stats": True},
               {"affine": True, "track_running_stats": True, "momentum": 0.3}]:
        t, n = _pair(getattr(torch.nn, cls), getattr(nn, cls), 3, **kw)
        check_module(t, n, _randn(*shape))
        t.eval()
        n.eval()
        check_module(t, n, _randn(*shape))
        assert repr(n) == repr(t)
    t, n = getattr(torch.nn, cls)(4, affine=True), getattr(nn, cls)(4, affine=True)
    _raises_like(lambda: t(_randn(*shape).float()), lambda: n(to_ndgrad(_randn(*shape).float())))


def test_normalization_modules():
    cases = [
        (torch.nn.LayerNorm, nn.LayerNorm, ((3, 4),), {}, (2, 3, 4)),
        (torch.nn.LayerNorm, nn.LayerNorm, (4,), {"bias": False}, (2, 3, 4)),
        (torch.nn.LayerNorm, nn.LayerNorm, (4,), {"elementwise_affine": False}, (2, 4)),
        (torch.nn.GroupNorm, nn.GroupNorm, (2, 4), {}, (3, 4, 5)),
        (torch.nn.GroupNorm, nn.GroupNorm, (4, 4), {"affine": False}, (3, 4, 2, 2)),
        (torch.nn.RMSNorm, nn.RMSNorm, ((3, 4),), {}, (2, 3, 4)),
        (torch.nn.RMSNorm, nn.RMSNorm, (4,), {"eps": 0.1, "elementwise_affine": False},
         (2, 4)),
        (torch.nn.LocalResponseNorm, nn.LocalResponseNorm, (3,), {"alpha": 0.1}, (2, 5, 3)),
    ]
    for tc, nc, args, kw, shape in cases:
        t, n = _pair(tc, nc, *args, **kw)
        with torch.no_grad():
            for p in t.parameters():
                p.uniform_(-1, 1)
        check_module(t, n, _randn(*shape))
        assert repr(n) == repr(t)
    _raises_like(lambda: torch.nn.GroupNorm(3, 4), lambda: nn.GroupNorm(3, 4))


def test_embedding_modules():
    t, n = _pair(torch.nn.Embedding, nn.Embedding, 6, 3, padding_idx=1)
    check_module(t, n, torch.tensor([[1, 2], [5, 1]]))
    assert repr(n) == repr(t)
    assert float(nn.Embedding(6, 3, padding_idx=1).weight.detach()[1].abs().sum()) == 0.0
    t, n = _pair(torch.nn.EmbeddingBag, nn.EmbeddingBag, 6, 3, mode="max")
    check_module(t, n, torch.tensor([1, 2, 5, 1]), torch.tensor([0, 2]))
    assert repr(n) == repr(t)
    W = _randn(4, 3)
    for freeze in (True, False):
        e = nn.Embedding.from_pretrained(to_ndgrad(W), freeze=freeze, padding_idx=0)
        et = torch.nn.Embedding.from_pretrained(W, freeze=freeze, padding_idx=0)
        assert e.weight.requires_grad == et.weight.requires_grad
        assert_close(e(ndgrad.tensor([3, 0])), et(torch.tensor([3, 0])))
        b = nn.EmbeddingBag.from_pretrained(to_ndgrad(W), freeze=freeze, mode="sum")
        bt = torch.nn.EmbeddingBag.from_pretrained(W, freeze=freeze, mode="sum")
        assert b.weight.requires_grad == bt.weight.requires_grad
        assert_close(b(ndgrad.tensor([[3, 0]])), bt(torch.tensor([[3, 0]])))
    with pytest.raises(AssertionError):
        nn.Embedding.from_pretrained(ndgrad.zeros(3))
    # max_norm renormalizes the weight in place, as torch
    t, n = _pair(torch.nn.Embedding, nn.Embedding, 6, 3, max_norm=0.5)
    copy_state(t, n)
    assert_close(n(ndgrad.tensor([0, 3, 3])), t(torch.tensor([0, 3, 3])))
    assert_close(n.weight.detach(), t.weight.detach())


def test_forward_over_reverse():
    """The backward ops have JVPs: forward mode through a gradient (Hessian-vector products)."""
    import ndgrad.autograd.forward_ad as fwAD
    from torch.func import jvp, vjp
    x, w, b = RNG.standard_normal((4, 6, 5)), RNG.standard_normal(6), RNG.standard_normal(6)
    cases = [(lambda x, w, b: TF.layer_norm(x, (5,), w[:5], b[:5]),
              lambda x, w, b: F.layer_norm(x, (5,), w[:5], b[:5])),
             (lambda x, w, b: TF.group_norm(x, 3, w, b), lambda x, w, b: F.group_norm(x, 3, w, b)),
             (lambda x, w, b: TF.batch_norm(x, None, None, w, b, True),
              lambda x, w, b: F.batch_norm(x, None, None, w, b, True))]
    arrs = [x, w, b]
    for tf, nf in cases:
        g, tg = RNG.standard_normal(x.shape), RNG.standard_normal(x.shape)
        tans = [RNG.standard_normal(a.shape) for a in arrs]

        def tfun(x, w, b, gg):
            return vjp(tf, x, w, b)[1](gg)
        _, want = jvp(tfun, tuple(torch.tensor(a) for a in arrs + [g]),
                      tuple(torch.tensor(a) for a in tans + [tg]))
        with fwAD.dual_level():
            duals = [fwAD.make_dual(ndgrad.tensor(a, requires_grad=True), ndgrad.tensor(t))
                     for a, t in zip(arrs, tans)]
            grads = ndgrad.autograd.grad(nf(*duals), duals,
                                         fwAD.make_dual(ndgrad.tensor(g), ndgrad.tensor(tg)),
                                         create_graph=True)
            got = [fwAD.unpack_dual(q).tangent for q in grads]
        for a, e in zip(got, want):
            assert_close(a, e, rtol=1e-8, atol=1e-10)


def test_dtype_rules_like_torch():
    x64, x32, xh = _randn(4, 3), _randn(4, 3).float(), _randn(4, 3).half()
    xi = torch.randint(0, 3, (4, 3))
    for tm, nm, x in [(torch.nn.BatchNorm1d(3), nn.BatchNorm1d(3), x64),
                      (torch.nn.LayerNorm(3), nn.LayerNorm(3), x64),
                      (torch.nn.GroupNorm(1, 3), nn.GroupNorm(1, 3), x64),
                      (torch.nn.BatchNorm1d(3).double(), nn.BatchNorm1d(3).double(), x32),
                      (torch.nn.BatchNorm1d(3), nn.BatchNorm1d(3), xi),
                      (torch.nn.LayerNorm(3), nn.LayerNorm(3), xi)]:
        _raises_like(lambda: tm(x), lambda: nm(to_ndgrad(x)))
    # half input, float32 parameters: allowed, half result, float32 running statistics
    m = nn.BatchNorm1d(3)
    y = m(to_ndgrad(xh))
    assert y.dtype == ndgrad.float16 and m.running_mean.dtype == ndgrad.float32
    assert nn.LayerNorm(3)(to_ndgrad(xh)).dtype == ndgrad.float16


def test_training_trajectory_with_norm_layers():
    """An MLP with BatchNorm1d, LayerNorm and an Embedding trained by plain gradient descent:
    the same loss at every step as torch (float64), the same running statistics."""
    def build(lib):
        return lib.Sequential(lib.Linear(4, 6), lib.BatchNorm1d(6, momentum=None),
                              lib.Linear(6, 5), lib.LayerNorm(5))
    t = build(torch.nn).double()
    n = build(nn).double()
    te, ne = torch.nn.Embedding(7, 4).double(), nn.Embedding(7, 4).double()
    copy_state(t, n)
    copy_state(te, ne)
    idx = torch.from_numpy(RNG.integers(0, 7, (8,)))
    target = _randn(8, 5)
    t_params = list(t.parameters()) + list(te.parameters())
    n_params = list(n.parameters()) + list(ne.parameters())
    for step in range(6):
        lt = ((t(te(idx)) - target) ** 2).mean()
        ln = ((n(ne(to_ndgrad(idx))) - to_ndgrad(target)) ** 2).mean()
        lt_v = float(lt.detach())
        assert abs(float(ln.detach()) - lt_v) <= 1e-9 * abs(lt_v), step
        gt = torch.autograd.grad(lt, t_params)
        gn = ndgrad.autograd.grad(ln, n_params)
        with torch.no_grad():
            for p, g in zip(t_params, gt):
                p -= 0.1 * g
        with ndgrad.no_grad():
            for p, g in zip(n_params, gn):
                p -= 0.1 * g
    for (name, b), nb in zip(t.named_buffers(), n.buffers()):
        assert_close(nb, b, what=name)
    t.eval()
    n.eval()
    assert_close(n(ne(to_ndgrad(idx))), t(te(idx)))


def test_vectorized_hessians():
    """Batched second-order gradients (is_grads_batched through the backward ops, vectorized
    forward-over-reverse) agree with torch's Hessians."""
    x = RNG.standard_normal((3, 4))
    w = RNG.standard_normal(4)
    for nf, tf in [(lambda x, w: F.layer_norm(x, (4,), w),
                    lambda x, w: TF.layer_norm(x, (4,), w)),
                   (lambda x, w: F.batch_norm(x, None, None, w, None, True),
                    lambda x, w: TF.batch_norm(x, None, None, w, None, True))]:
        wn, wt = ndgrad.tensor(w), torch.tensor(w)
        want = torch.autograd.functional.hessian(lambda x: tf(x, wt).pow(3).sum(),
                                                 torch.tensor(x))
        for strategy in ("reverse-mode", "forward-mode"):
            got = ndgrad.autograd.functional.hessian(
                lambda x: nf(x, wn).pow(3).sum(), ndgrad.tensor(x), vectorize=True,
                outer_jacobian_strategy=strategy)
            assert_close(got, want, rtol=1e-9, atol=1e-11, what=strategy)


def test_blocked_kernels_on_large_inputs():
    """Inputs large enough to be processed in blocks of rows (Note [Blocked normalization])."""
    from ndgrad.ops import nn_norm
    for shape, tf, nf, ps in [
            ((64, 4100), lambda x, w, b: TF.layer_norm(x, (4100,), w, b),
             lambda x, w, b: F.layer_norm(x, (4100,), w, b), (4100,)),
            ((33, 16, 8, 72), lambda x, w, b: TF.group_norm(x, 4, w, b),
             lambda x, w, b: F.group_norm(x, 4, w, b), (16,))]:
        assert nn_norm._blocks((shape[0], _prod(shape[1:])), (1,), (1, 1)) > 0
        arrays = [RNG.standard_normal(shape), RNG.standard_normal(ps), RNG.standard_normal(ps)]
        _grads(tf, nf, arrays, order2=False)
    # batch norm's backward adds g * (rstd * w) through a buffer of rows
    assert nn_norm._BLOCK // (4 * 64) < 300
    arrays = [RNG.standard_normal((300, 4, 64)), RNG.standard_normal(4), RNG.standard_normal(4)]
    _grads(lambda x, w, b: TF.batch_norm(x, None, None, w, b, True),
           lambda x, w, b: F.batch_norm(x, None, None, w, b, True), arrays, order2=False)


def _prod(shape):
    return int(np.prod(shape))


def test_cross_map_lrn2d():
    """Forward equal to torch's legacy CrossMapLRN2d; the gradient is the derivative of that
    forward (torch's hand-written backward is not: it fails torch's own gradcheck)."""
    for C, size in [(5, 3), (3, 4), (6, 1)]:
        x = _randn(2, C, 2, 2)
        t = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.2)
        n = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.2)
        assert_close(n(to_ndgrad(x)), t(x))
        assert repr(n) == repr(t)
        xn = to_ndgrad(x, requires_grad=True)
        assert ndgrad.autograd.gradcheck(lambda x: n(x), (xn,))
    _raises_like(lambda: torch.nn.CrossMapLRN2d(3)(torch.zeros(2, 3, 4)),
                 lambda: nn.CrossMapLRN2d(3)(ndgrad.zeros(2, 3, 4)))


def test_batch_norm_size_checks_in_torchs_order():
    # the running statistics are checked before the affine parameters
    x = torch.randn(4, 2, 5, 5)
    cases = [dict(running_mean=torch.zeros(3), running_var=torch.ones(3), weight=torch.ones(3)),
             dict(running_mean=torch.zeros(2), running_var=torch.ones(3), weight=torch.ones(3)),
             dict(running_mean=torch.zeros(2), running_var=torch.ones(2), weight=torch.ones(3)),
             dict(running_mean=None, running_var=None, bias=torch.ones(4))]
    for kw in cases:
        msgs = []
        for f, conv in ((torch.nn.functional.batch_norm, lambda v: v),
                        (ndgrad.nn.functional.batch_norm,
                         lambda v: None if v is None else ndgrad.tensor(v.numpy()))):
            with pytest.raises(RuntimeError) as e:
                f(conv(x), training=True, **{k: conv(v) for k, v in kw.items()})
            msgs.append(str(e.value))
        assert msgs[1] == msgs[0]


def test_instance_norm_float32_stats_with_float64_input_and_empty_batch_norm():
    """torch's instance norm uses and updates float32 running statistics with a float64 input;
    batch norm of an empty batch returns before the dtype rules (found by
    tests/torch_moduledb.py's "mixed" check)."""
    x = _randn(2, 3, 4)
    for use_input_stats in (True, False):
        rm_t, rv_t = torch.rand(3), torch.rand(3) + 0.5
        rm_n, rv_n = to_ndgrad(rm_t), to_ndgrad(rv_t)
        want = TF.instance_norm(x, rm_t, rv_t, use_input_stats=use_input_stats)
        got = F.instance_norm(to_ndgrad(x), rm_n, rv_n, use_input_stats=use_input_stats)
        assert got.dtype == ndgrad.float64 and rm_n.dtype == ndgrad.float32
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(rm_n.numpy(), rm_t.numpy(), rtol=1e-6)
        np.testing.assert_allclose(rv_n.numpy(), rv_t.numpy(), rtol=1e-6)
    for training in (True, False):
        got = F.batch_norm(ndgrad.ones(0, 3, dtype=ndgrad.float64), ndgrad.zeros(3),
                           ndgrad.ones(3), training=training)
        assert tuple(got.shape) == (0, 3) and got.dtype == ndgrad.float64
