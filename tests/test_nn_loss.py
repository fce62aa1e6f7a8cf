"""Losses and distances (ndgrad/ops/nn_loss.py, nn_distance.py, nn/modules/loss.py and
distance.py) against PyTorch in float64: values, gradients, second order, node names, errors
and the loss modules."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ndgrad
import ndgrad.nn as nn
import ndgrad.nn.functional as F
from tests.nn_compare import check_module, to_ndgrad

pytestmark = pytest.mark.filterwarnings("ignore:Using a target size",
                                        "ignore:reduction. 'mean' divides")
D = torch.float64
REDUCTIONS = ("mean", "sum", "none")


def _g(seed: int = 0):
    return torch.Generator().manual_seed(seed)


def rn(*shape, seed=0):
    return torch.randn(*shape, dtype=D, generator=_g(seed))


def rr(*shape, seed=0):
    return torch.rand(*shape, dtype=D, generator=_g(seed))


def ri(hi, *shape, seed=0):
    return torch.randint(0, hi, shape, generator=_g(seed))


def _nd(x):
    if isinstance(x, torch.Tensor):
        t = ndgrad.tensor(x.detach().numpy().copy())
        return t.requires_grad_(True) if x.requires_grad else t
    if isinstance(x, (list, tuple)):
        return type(x)(_nd(v) for v in x)
    return x


def compare(name, args, kwargs=None, grads=True, rtol=1e-9, atol=1e-12, module=None):
    """Run ``F.name`` in both libraries: same values, same gradients for a random cotangent."""
    kwargs = kwargs or {}
    t_args = [a.detach().clone().requires_grad_(a.requires_grad)
              if isinstance(a, torch.Tensor) else a for a in args]
    n_args = [_nd(a) for a in t_args]
    n_kwargs = {k: _nd(v) for k, v in kwargs.items()}
    tf = getattr(TF, name) if module is None else getattr(torch, name)
    nf = getattr(F, name) if module is None else getattr(ndgrad, name)
    want = tf(*t_args, **kwargs)
    got = nf(*n_args, **n_kwargs)
    assert tuple(got.shape) == tuple(want.shape), (name, got.shape, want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol,
                               atol=atol, err_msg=name)
    leaves = [(t, n) for t, n in zip(t_args, n_args)
              if isinstance(t, torch.Tensor) and t.requires_grad]
    if grads and leaves and want.requires_grad:
        c = torch.randn(want.shape, dtype=D, generator=_g(7))
        tg = torch.autograd.grad(want, [t for t, _ in leaves], c, allow_unused=True)
        ng = ndgrad.autograd.grad(got, [n for _, n in leaves], ndgrad.tensor(c.numpy()),
                                  allow_unused=True)
        for i, (a, b) in enumerate(zip(ng, tg)):
            if b is None:
                assert a is None or not a.abs().sum().item(), f"{name}: grad {i}"
                continue
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=atol,
                                       err_msg=f"{name} grad {i}")
    return got, want


def same_error(fn_t, fn_n):
    with pytest.raises(Exception) as et:
        fn_t()
    with pytest.raises(Exception) as en:
        fn_n()
    assert type(en.value) is type(et.value), (en.value, et.value)
    words = re.sub(r"torch\.", "", str(et.value)).split(" ")[:4]
    assert " ".join(words) in re.sub(r"ndgrad\.", "", str(en.value)), (en.value, et.value)


# ---------------------------------------------------------------------------- elementwise
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction):
    x, y = rn(3, 4).requires_grad_(), rn(3, 4, seed=1).requires_grad_()
    compare("mse_loss", [x, y], {"reduction": reduction})
    compare("l1_loss", [x, y], {"reduction": reduction})
    for beta in (1.0, 0.5, 0.0):
        compare("smooth_l1_loss", [x, y], {"reduction": reduction, "beta": beta})
    for delta in (1.0, 0.3):
        compare("huber_loss", [x, y], {"reduction": reduction, "delta": delta})
    compare("soft_margin_loss", [x, torch.sign(rn(3, 4, seed=2))], {"reduction": reduction})
    w = rr(3, 4, seed=3).requires_grad_()
    compare("mse_loss", [x, y], {"reduction": reduction, "weight": w})
    compare("l1_loss", [x, y], {"reduction": reduction, "weight": w})
    compare("huber_loss", [x, y], {"reduction": reduction, "weight": w, "delta": 0.5})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce(reduction):
    p = rr(4, 3).clamp(0.05, 0.95).requires_grad_()
    t = rr(4, 3, seed=1).requires_grad_()
    w = rr(4, 3, seed=2)
    compare("binary_cross_entropy", [p, t], {"reduction": reduction})
    compare("binary_cross_entropy", [p, t.detach()], {"reduction": reduction, "weight": w})
    compare("binary_cross_entropy", [p, t.detach()], {"reduction": reduction, "weight": w[0]})
    x = rn(4, 3).requires_grad_()
    pw = rr(3, seed=3)
    compare("binary_cross_entropy_with_logits", [x, t], {"reduction": reduction})
    compare("binary_cross_entropy_with_logits", [x, t],
            {"reduction": reduction, "weight": w, "pos_weight": pw})


def test_bce_log_clamp():
    x = torch.tensor([0.0, 1.0, 0.5], dtype=D)
    t = torch.tensor([1.0, 0.0, 1.0], dtype=D)
    compare("binary_cross_entropy", [x, t], {"reduction": "none"}, grads=False)
    got = F.binary_cross_entropy(ndgrad.tensor([0.0]), ndgrad.tensor([1.0]))
    assert got.item() == 100.0


def test_legacy_reduction_arguments():
    x, y = rn(3), rn(3, seed=1)
    for sa, rd in ((False, None), (None, False), (True, True), (False, False)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = F.mse_loss(_nd(x), _nd(y), size_average=sa, reduce=rd)
        assert any("size_average and reduce args will be deprecated" in str(m.message)
                   for m in w)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = TF.mse_loss(x, y, size_average=sa, reduce=rd)
        np.testing.assert_allclose(got.numpy(), want.numpy())
    with pytest.raises(ValueError, match="abc is not a valid value for reduction"):
        F.mse_loss(_nd(x), _nd(y), reduction="abc")


def test_broadcast_warning():
    with pytest.warns(UserWarning, match="Using a target size"):
        got = F.mse_loss(ndgrad.ones(3, 1), ndgrad.zeros(3, 4))
    assert got.item() == 1.0


# ---------------------------------------------------------------------------- nll / ce
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    w = rr(5, seed=4) + 0.1
    for shape, tshape in (((5,), ()), ((3, 5), (3,)), ((2, 5, 3), (2, 3)),
                          ((2, 5, 3, 2), (2, 3, 2)), ((2, 5, 2, 2, 2), (2, 2, 2, 2))):
        x = rn(*shape).requires_grad_()
        t = ri(5, *tshape, seed=1)
        if t.dim():
            t.view(-1)[0] = 2
        compare("nll_loss", [x, t], {"reduction": reduction})
        compare("nll_loss", [x, t], {"reduction": reduction, "weight": w})
        compare("nll_loss", [x, t], {"reduction": reduction, "weight": w, "ignore_index": 2})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy(reduction):
    w = rr(5, seed=4) + 0.1
    for shape, tshape in (((5,), ()), ((4, 5), (4,)), ((2, 5, 3), (2, 3)),
                          ((2, 5, 2, 3), (2, 2, 3))):
        x = rn(*shape).requires_grad_()
        t = ri(5, *tshape, seed=1)
        if t.dim():
            t.view(-1)[0] = 1
        for kw in ({}, {"weight": w}, {"ignore_index": 1}, {"label_smoothing": 0.2},
                   {"weight": w, "ignore_index": 1, "label_smoothing": 0.3}):
            compare("cross_entropy", [x, t], {"reduction": reduction, **kw})
        p = rr(*shape, seed=5).softmax(0 if len(shape) == 1 else 1)
        for kw in ({}, {"weight": w}, {"label_smoothing": 0.1}):
            compare("cross_entropy", [x, p], {"reduction": reduction, **kw})
        compare("cross_entropy", [x, p.clone().requires_grad_()], {"reduction": reduction})


def test_cross_entropy_all_ignored_and_nodes():
    x = rn(3, 4).requires_grad_()
    t = torch.tensor([-100, -100, -100])
    got, want = compare("cross_entropy", [x, t], grads=False)
    assert np.isnan(got.item()) and np.isnan(want.item())
    y = F.cross_entropy(_nd(x), ndgrad.tensor([1, 2, 3]))
    assert y.grad_fn.name() == "NllLossBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
    y4 = F.nll_loss(ndgrad.randn(2, 3, 2, 2, requires_grad=True),
                    ndgrad.zeros(2, 2, 2, dtype=ndgrad.int64))
    assert y4.grad_fn.name() == "NllLoss2DBackward0"


def test_cross_entropy_gradgrad():
    x = rn(3, 5).requires_grad_()
    t = torch.tensor([1, 0, 4])
    w = rr(5) + 0.5
    for kw in ({}, {"weight": w, "label_smoothing": 0.1}):
        xt = x.detach().clone().requires_grad_()
        xn = _nd(xt)
        (gt,) = torch.autograd.grad(TF.cross_entropy(xt, t, **kw), xt, create_graph=True)
        (gn,) = ndgrad.autograd.grad(F.cross_entropy(xn, _nd(t), **{k: _nd(v) for k, v in
                                                                      kw.items()}), xn,
                                     create_graph=True)
        c = rn(3, 5, seed=3)
        (ggt,) = torch.autograd.grad((gt * c).sum(), xt)
        (ggn,) = ndgrad.autograd.grad((gn * _nd(c)).sum(), xn)
        np.testing.assert_allclose(ggn.numpy(), ggt.numpy(), rtol=1e-9, atol=1e-12)


def test_linear_cross_entropy():
    x, w, b = rn(4, 3).requires_grad_(), rn(5, 3, seed=1).requires_grad_(), rn(5, seed=2)
    t = ri(5, 4)
    compare("linear_cross_entropy", [x, w, t], {"linear_bias": b.requires_grad_()})
    compare("linear_cross_entropy", [x, w, t], {"label_smoothing": 0.1, "reduction": "sum"})


# ---------------------------------------------------------------------------- compositions
@pytest.mark.parametrize("reduction", REDUCTIONS + ("batchmean",))
def test_kl_div(reduction):
    x = rn(3, 4).log_softmax(1).detach().requires_grad_()
    t = rr(3, 4, seed=1).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare("kl_div", [x, t], {"reduction": reduction})
        compare("kl_div", [x, t.log().detach().requires_grad_()],
                {"reduction": reduction, "log_target": True})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_other_losses(reduction):
    x, y = rn(4, 3).requires_grad_(), rn(4, 3, seed=1).requires_grad_()
    r = {"reduction": reduction}
    lam = rr(4, 3, seed=2) * 3
    compare("poisson_nll_loss", [x, lam], r)
    compare("poisson_nll_loss", [rr(4, 3).requires_grad_(), lam],
            {**r, "log_input": False, "full": True})
    var = rr(4, 3, seed=3).requires_grad_()
    compare("gaussian_nll_loss", [x, y, var], r)
    compare("gaussian_nll_loss", [x, y, rr(4, 1, seed=3).requires_grad_()], {**r, "full": True})
    compare("gaussian_nll_loss", [x, y, rr(4, seed=3).requires_grad_()], r)
    # var of size 1 in one leading dim broadcasts (torch_moduledb's homoscedastic sample)
    compare("gaussian_nll_loss", [x, y, rr(1, 3, seed=3).requires_grad_()], r)
    sgn = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=D)
    compare("cosine_embedding_loss", [x, y, sgn], {**r, "margin": 0.2})
    compare("margin_ranking_loss", [x[:, 0], y[:, 0], sgn], {**r, "margin": 0.1})
    compare("hinge_embedding_loss", [x, torch.sign(rn(4, 3, seed=5))], {**r, "margin": 0.5})
    compare("multilabel_soft_margin_loss", [x, (rr(4, 3, seed=6) > 0.5).to(D)], r)
    compare("multilabel_soft_margin_loss", [x, (rr(4, 3, seed=6) > 0.5).to(D)],
            {**r, "weight": rr(3, seed=7)})
    t = torch.tensor([0, 2, 1, 2])
    for p in (1, 2):
        compare("multi_margin_loss", [x, t], {**r, "p": p, "margin": 0.7})
        compare("multi_margin_loss", [x, t], {**r, "p": p, "weight": rr(3, seed=8)})
    compare("multi_margin_loss", [x[0], t[:1]], r)
    mt = torch.tensor([[2, 0, -1], [1, -1, 0], [0, 1, 2], [-1, 0, 0]])
    compare("multilabel_margin_loss", [x, mt], r)
    compare("multilabel_margin_loss", [x[0], mt[0]], r)
    z = rn(4, 3, seed=9).requires_grad_()
    compare("triplet_margin_loss", [x, y, z], r)
    compare("triplet_margin_loss", [x, y, z], {**r, "p": 1.0, "swap": True, "margin": 0.5})
    compare("triplet_margin_with_distance_loss", [x, y, z], {**r, "swap": True})


def test_triplet_with_distance_function():
    x, y, z = rn(4, 3).requires_grad_(), rn(4, 3, seed=1), rn(4, 3, seed=2)
    got = F.triplet_margin_with_distance_loss(
        _nd(x), _nd(y), _nd(z), distance_function=lambda a, b: 1 - F.cosine_similarity(a, b))
    want = TF.triplet_margin_with_distance_loss(
        x, y, z, distance_function=lambda a, b: 1 - TF.cosine_similarity(a, b))
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-10)


def test_cross_entropy_probability_targets_promote_and_refuse_integers():
    # a target shaped like the input holds probabilities of any floating dtype (the result
    # promotes: float32 logits with float64 probabilities give float64); an integer one is
    # refused with torch's words; a negative ignore_index other than -100 is allowed
    x = rn(3, 4).float().requires_grad_()
    t = torch.rand(3, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    for kw in ({}, {"label_smoothing": 0.2}, {"weight": torch.ones(4, dtype=torch.float64)},
               {"ignore_index": -5}, {"reduction": "none"}):
        for tt in (t, t.half()):
            xn = _nd(x.detach()).requires_grad_()
            want = TF.cross_entropy(x, tt, **kw)
            got = F.cross_entropy(xn, _nd(tt), **{k: _nd(v) for k, v in kw.items()})
            assert got.dtype == getattr(ndgrad, str(want.dtype).split(".")[1]), kw
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
            (gt,) = torch.autograd.grad(want.sum(), x)
            got.sum().backward()
            assert xn.grad.dtype == ndgrad.float32
            np.testing.assert_allclose(xn.grad.numpy(), gt.numpy(), rtol=1e-5, atol=1e-7)
    for tt in (torch.ones(3, 4, dtype=torch.long), torch.ones(3, 4, dtype=torch.bool),
               torch.ones(3, 4, dtype=torch.complex64)):
        msgs = []
        for f, a, b in ((TF.cross_entropy, x, tt), (F.cross_entropy, _nd(x.detach()), _nd(tt))):
            with pytest.raises(RuntimeError) as e:
                f(a, b)
            msgs.append(str(e.value))
        assert msgs[1] == msgs[0]
    msgs = []
    for f, a, b in ((TF.binary_cross_entropy, torch.rand(3), torch.ones(3, dtype=torch.long)),
                    (F.binary_cross_entropy, _nd(torch.rand(3)),
                     _nd(torch.ones(3, dtype=torch.long)))):
        with pytest.raises(RuntimeError) as e:
            f(a, b)
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0] == "Found dtype Long but expected Float"


# ---------------------------------------------------------------------------- ctc
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_loss(reduction):
    T, N, C = 12, 3, 5
    lp = rn(T, N, C).log_softmax(2).detach().requires_grad_()
    il = torch.tensor([12, 10, 7])
    tl = torch.tensor([4, 0, 3])
    tg = torch.tensor([[1, 2, 2, 3], [0, 0, 0, 0], [4, 4, 1, 0]])
    compare("ctc_loss", [lp, tg, il, tl], {"reduction": reduction})
    flat = torch.cat([tg[0, :4], tg[2, :3]])
    compare("ctc_loss", [lp, flat, il, tl], {"reduction": reduction})
    compare("ctc_loss", [lp, tg + 0, tuple(il.tolist()), tuple(tl.tolist())],
            {"reduction": reduction, "blank": 0})
    # an impossible alignment: infinite loss, and zero_infinity
    tl2 = torch.tensor([4, 6, 3])
    tg2 = torch.tensor([[1, 2, 2, 3, 1, 1], [1, 1, 1, 1, 1, 1], [4, 4, 1, 0, 0, 0]])
    il2 = torch.tensor([12, 6, 7])
    compare("ctc_loss", [lp, tg2, il2, tl2], {"reduction": reduction, "zero_infinity": True})
    got = F.ctc_loss(_nd(lp), _nd(tg2), _nd(il2), _nd(tl2), reduction="none")
    assert np.isinf(got.detach().numpy()[1])
    # unbatched
    compare("ctc_loss", [lp[:, 0].detach().requires_grad_(), tg[0, :4], [12], [4]],
            {"reduction": reduction})
    y = F.ctc_loss(_nd(lp), _nd(tg), _nd(il), _nd(tl))
    assert y.grad_fn.name() == "CtcLossBackward0"


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_infinite_loss_gradient_is_nan_like_torch(reduction):
    # without zero_infinity torch's gradient of an impossible alignment is NaN over that
    # sample's input frames (0 after them); the other samples keep their gradients
    lp = rn(12, 3, 5).log_softmax(2).detach()
    tg = torch.tensor([[1, 2, 2, 3], [1, 2, 0, 0], [4, 4, 1, 0]])
    il, tl = torch.tensor([2, 2, 2]), torch.tensor([4, 2, 3])
    grads = []
    for m, f, conv in ((torch, TF, lambda v: v), (ndgrad, F, _nd)):
        x = conv(lp.clone()).requires_grad_()
        for zi in (False, True):
            loss = f.ctc_loss(x, conv(tg), conv(il), conv(tl), reduction=reduction,
                              zero_infinity=zi)
            (g,) = m.autograd.grad(loss.sum(), x)
            grads.append(g.numpy())
    for want, got in zip(grads[:2], grads[2:]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)   # NaNs where torch's
    assert np.isnan(grads[2][:2, [0, 2]]).all() and not np.isnan(grads[2][:, 1]).any()
    assert (grads[2][2:] == 0).all() and not np.isnan(grads[3]).any()


def test_ctc_blank_not_zero():
    lp = rn(8, 2, 4).log_softmax(2).detach().requires_grad_()
    compare("ctc_loss", [lp, torch.tensor([[0, 1], [2, 2]]), [8, 7], [2, 2]], {"blank": 3})


# ---------------------------------------------------------------------------- distances
def test_distances():
    a, b = rn(4, 3).requires_grad_(), rn(4, 3, seed=1).requires_grad_()
    compare("cosine_similarity", [a, b])
    compare("cosine_similarity", [a, b[:1]], {"dim": 1})
    compare("cosine_similarity", [a, b], {"dim": 0, "eps": 0.5})
    compare("cosine_similarity", [a, torch.zeros(4, 3, dtype=D)])
    for p in (2.0, 1.0, 3.0, float("inf"), 0.0):
        compare("pairwise_distance", [a, b], {"p": p, "keepdim": p == 1.0})
        compare("pdist", [a], {"p": p}, grads=p != 0.0)
    compare("pairwise_distance", [a[0], b[0]])
    x1, x2 = rn(2, 5, 3).requires_grad_(), rn(1, 4, 3, seed=2).requires_grad_()
    for p in (2.0, 1.0, 0.5, 3.0, float("inf")):
        compare("cdist", [x1, x2], {"p": p}, module=True)
    big1, big2 = rn(30, 3).requires_grad_(), rn(27, 3, seed=3).requires_grad_()
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                 "donot_use_mm_for_euclid_dist"):
        compare("cdist", [big1, big2], {"compute_mode": mode}, module=True, rtol=1e-7)
    assert ndgrad.cdist(_nd(x1), _nd(x2)).grad_fn.name() == "CdistBackward0"
    # rows with equal coordinates (a zero component of the difference): |0|^(p-1) is infinite
    # for p < 1, and torch's kernels give 0 there, not NaN
    e1 = torch.tensor([[0.0, 0.0], [1.0, 2.0], [1.0, 3.0]], dtype=D, requires_grad=True)
    e2 = torch.tensor([[1.0, 2.0], [0.0, 1.0]], dtype=D, requires_grad=True)
    for p in (0.5, 1.5, 3.0):
        compare("cdist", [e1, e2], {"p": p}, module=True)
        compare("pdist", [e1], {"p": p})


# ---------------------------------------------------------------------------- errors
def _errors():
    x = rn(3, 5)
    yield lambda m, F_: F_.nll_loss(m(x), m(torch.tensor([1, 2])))
    yield lambda m, F_: F_.nll_loss(m(x), m(torch.tensor([1, 2, 5])))
    yield lambda m, F_: F_.nll_loss(m(x), m(torch.tensor([1, 2, -1])))
    yield lambda m, F_: F_.nll_loss(m(x), m(torch.tensor([1.0, 2.0, 3.0])))
    yield lambda m, F_: F_.nll_loss(m(x), m(torch.tensor([1, 2, 3])), weight=m(torch.ones(3)))
    # a weight of another dtype than the input (float32 weight, float64 input)
    yield lambda m, F_: F_.nll_loss(m(x), m(torch.tensor([1, 2, 3])), weight=m(torch.ones(5)))
    yield lambda m, F_: F_.cross_entropy(m(x), m(torch.tensor([1, 2, 3])),
                                         weight=m(torch.ones(5, dtype=torch.float16)))
    yield lambda m, F_: F_.nll_loss(m(x), m(torch.tensor([1, 2, 3])), reduction="foo")
    yield lambda m, F_: F_.nll_loss(m(torch.tensor(1.0)), m(torch.tensor(1)))
    yield lambda m, F_: F_.nll_loss(m(torch.randn(2, 3, 4)), m(torch.zeros(2, 5).long()))
    yield lambda m, F_: F_.cross_entropy(m(x), m(torch.rand(3, 4)))
    # integer/bool targets shaped like the input are class probabilities of the wrong type
    yield lambda m, F_: F_.cross_entropy(m(x), m(torch.zeros(3, 5).long()))
    yield lambda m, F_: F_.cross_entropy(m(x), m(torch.zeros(3, 5).bool()), ignore_index=1)
    yield lambda m, F_: F_.cross_entropy(m(x), m(torch.tensor([1, 2, 3])), label_smoothing=1.5)
    yield lambda m, F_: F_.cross_entropy(m(x), m(torch.rand(3, 5, dtype=D)), ignore_index=1)
    yield lambda m, F_: F_.cross_entropy(m(x), m(torch.tensor([1, 2])))
    yield lambda m, F_: F_.mse_loss(m(x), m(torch.rand(3, 4, dtype=D)))
    yield lambda m, F_: F_.binary_cross_entropy(m(x.sigmoid()), m(torch.rand(3, 4, dtype=D)))
    yield lambda m, F_: F_.binary_cross_entropy(m(x), m(torch.rand(3, 5, dtype=D)))
    yield lambda m, F_: F_.binary_cross_entropy_with_logits(m(x), m(torch.rand(3, 4, dtype=D)))
    yield lambda m, F_: F_.soft_margin_loss(m(x), m(x.clone().requires_grad_()))
    yield lambda m, F_: F_.binary_cross_entropy(m(x.sigmoid()), m(x.sigmoid()),
                                                weight=m(x.clone().requires_grad_()))
    yield lambda m, F_: F_.binary_cross_entropy_with_logits(
        m(x), m(x.sigmoid()), pos_weight=m(torch.ones(5, dtype=D, requires_grad=True)))
    yield lambda m, F_: F_.multi_margin_loss(m(x), m(torch.tensor([1, 2, 3])), p=3)
    yield lambda m, F_: F_.multi_margin_loss(m(x), m(torch.tensor([1, 2])))
    yield lambda m, F_: F_.multi_margin_loss(m(x), m(torch.tensor([1, 2, 7])))
    yield lambda m, F_: F_.multilabel_margin_loss(m(x), m(torch.tensor([1, 2, 3])))
    yield lambda m, F_: F_.triplet_margin_loss(m(x), m(x), m(x), margin=-1.0)
    yield lambda m, F_: F_.triplet_margin_loss(m(x), m(x), m(x[0]))
    yield lambda m, F_: F_.gaussian_nll_loss(m(x), m(x), m(torch.ones(2, dtype=D)))
    yield lambda m, F_: F_.gaussian_nll_loss(m(x), m(x), m(-torch.ones(3, 5, dtype=D)))
    yield lambda m, F_: F_.gaussian_nll_loss(m(x), m(x), m(-torch.ones(1, 5, dtype=D)))
    yield lambda m, F_: F_.gaussian_nll_loss(m(x), m(x), m(torch.ones(1, 1, dtype=D)))
    yield lambda m, F_: F_.cosine_embedding_loss(m(x), m(x[:2]), m(torch.ones(3)))
    yield lambda m, F_: F_.kl_div(m(x), m(x), reduction="bad")
    yield lambda m, F_: F_.multilabel_soft_margin_loss(m(x), m(x), reduction="bad")
    yield lambda m, F_: F_.multilabel_soft_margin_loss(m(x), m(x[:2]), reduction="bad")
    yield lambda m, F_: F_.mse_loss(m(x), m(x), weight=m(x[0]))
    yield lambda m, F_: F_.l1_loss(m(x), m(x), weight=m(x), reduction="bad")
    yield lambda m, F_: F_.huber_loss(m(x), m(x), delta=-1.0)
    yield lambda m, F_: F_.smooth_l1_loss(m(x), m(x), beta=-1.0)
    yield lambda m, F_: F_.pdist(m(x[0]))
    yield lambda m, F_: F_.pdist(m(x), p=-1.0)
    yield lambda m, F_: F_.pairwise_distance(m(x), m(torch.randn(3, 4, dtype=D)))
    yield lambda m, F_: F_.cosine_similarity(m(x), m(torch.randn(3, 4, dtype=D)))
    lp = torch.randn(5, 2, 4, dtype=D).log_softmax(2)
    yield lambda m, F_: F_.ctc_loss(m(lp), m(torch.ones(2, 3).long()), [5, 6], [2, 2])
    yield lambda m, F_: F_.ctc_loss(m(lp), m(torch.ones(2, 3).long()), [5, 5], [2, 2], blank=4)
    yield lambda m, F_: F_.ctc_loss(m(lp[0]), m(torch.ones(3).long()), [5], [2])
    yield lambda m, F_: F_.ctc_loss(m(lp), m(torch.ones(2, 3).long()), [5, 5], [2, 4])
    yield lambda m, F_: F_.ctc_loss(m(lp), m(torch.ones(2, 3).long()), [5, 5, 5], [2, 2])
    yield lambda m, F_: F_.cosine_embedding_loss(m(x), m(x[0]), m(torch.ones(3)))
    yield lambda m, F_: F_.cosine_embedding_loss(m(x), m(x), m(torch.ones(3, 1)))


def _cdist_errors():
    yield lambda m: m.cdist(m.tensor([[1, 2]]) if m is ndgrad else torch.tensor([[1, 2]]),
                            m.ones(2, 2))
    yield lambda m: m.cdist(m.ones(2, 3), m.ones(2, 4))
    yield lambda m: m.cdist(m.ones(3), m.ones(2, 3))
    yield lambda m: m.cdist(m.ones(2, 3), m.ones(2, 3), p=-1.0)


@pytest.mark.parametrize("case", list(range(len(list(_errors())))))
def test_errors(case):
    f = list(_errors())[case]
    same_error(lambda: f(lambda t: t, TF), lambda: f(_nd, F))


@pytest.mark.parametrize("case", range(4))
def test_cdist_errors(case):
    f = list(_cdist_errors())[case]
    same_error(lambda: f(torch), lambda: f(ndgrad))


# ---------------------------------------------------------------------------- modules
def _module_cases():
    x, y = rn(4, 3), rn(4, 3, seed=1)
    w = rr(3, seed=2) + 0.1
    t = torch.tensor([0, 2, 1, 2])
    p01 = rr(4, 3, seed=3)
    sgn = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=D)
    mt = torch.tensor([[2, 0, -1], [1, -1, 0], [0, 1, 2], [-1, 0, 0]])
    lp = rn(6, 2, 4).log_softmax(2).detach()
    c = []
    for red in REDUCTIONS:
        c += [
            ("L1Loss", {"reduction": red}, (x, y)),
            ("MSELoss", {"reduction": red}, (x, y)),
            ("SmoothL1Loss", {"reduction": red, "beta": 0.5}, (x, y)),
            ("HuberLoss", {"reduction": red, "delta": 0.5}, (x, y)),
            ("SoftMarginLoss", {"reduction": red}, (x, torch.sign(y))),
            ("CrossEntropyLoss", {"reduction": red, "weight": w, "ignore_index": 1,
                                  "label_smoothing": 0.1}, (x, t)),
            ("NLLLoss", {"reduction": red, "weight": w}, (x.log_softmax(1), t)),
            ("BCELoss", {"reduction": red, "weight": w}, (p01, rr(4, 3, seed=4))),
            ("BCEWithLogitsLoss", {"reduction": red, "weight": w, "pos_weight": w + 1},
             (x, p01)),
            ("KLDivLoss", {"reduction": red, "log_target": True}, (x, y)),
            ("PoissonNLLLoss", {"reduction": red, "full": True}, (x, p01 * 3)),
            ("GaussianNLLLoss", {"reduction": red}, (x, y, p01 + 0.1)),
            ("CosineEmbeddingLoss", {"reduction": red, "margin": 0.1}, (x, y, sgn)),
            ("MarginRankingLoss", {"reduction": red, "margin": 0.1}, (x[:, 0], y[:, 0], sgn)),
            ("HingeEmbeddingLoss", {"reduction": red}, (x, torch.sign(y))),
            ("MultiLabelMarginLoss", {"reduction": red}, (x, mt)),
            ("MultiLabelSoftMarginLoss", {"reduction": red, "weight": w}, (x, (p01 > 0.5).to(D))),
            ("MultiMarginLoss", {"reduction": red, "p": 2, "weight": w}, (x, t)),
            ("TripletMarginLoss", {"reduction": red, "swap": True}, (x, y, rn(4, 3, seed=5))),
            ("TripletMarginWithDistanceLoss", {"reduction": red}, (x, y, rn(4, 3, seed=5))),
            ("CTCLoss", {"reduction": red}, (lp, torch.tensor([[1, 2], [3, 3]]),
                                             torch.tensor([6, 5]), torch.tensor([2, 2]))),
        ]
    c += [("CosineSimilarity", {"dim": 0}, (x, y)),
          ("PairwiseDistance", {"p": 1.0, "keepdim": True}, (x, y))]
    return c


@pytest.mark.parametrize("case", _module_cases(), ids=lambda c: f"{c[0]}-{c[1]}")
def test_modules(case):
    name, kw, inputs = case
    if name == "SoftMarginLoss":     # its target takes no gradient
        tm, nm = torch.nn.SoftMarginLoss(**kw), nn.SoftMarginLoss(**kw)
        x = inputs[0].clone().requires_grad_()
        compare("soft_margin_loss", [x, inputs[1]], kw)
        assert repr(nm) == repr(tm)
        return
    tkw = dict(kw)
    nkw = {k: to_ndgrad(v) for k, v in kw.items()}
    tm = getattr(torch.nn, name)(**tkw)
    nm = getattr(nn, name)(**nkw)
    assert repr(nm) == repr(tm)
    check_module(tm, nm, *inputs)
    for k in ("reduction", "ignore_index", "label_smoothing", "margin", "p", "beta", "delta",
              "log_target", "full", "eps", "swap", "blank", "zero_infinity", "norm", "dim",
              "keepdim", "log_input"):
        if hasattr(tm, k):
            assert getattr(nm, k) == getattr(tm, k), k


def test_module_buffers_and_legacy():
    w = ndgrad.tensor([1.0, 2.0, 3.0])
    m = nn.BCEWithLogitsLoss(weight=w, pos_weight=w)
    tm = torch.nn.BCEWithLogitsLoss(weight=torch.ones(3), pos_weight=torch.ones(3))
    assert list(m.state_dict()) == list(tm.state_dict()) == ["weight", "pos_weight"]
    assert [k for k, _ in nn.CrossEntropyLoss().named_buffers()] == []
    assert "weight" in dict(nn.NLLLoss(weight=w).named_buffers())
    m = nn.NLLLoss(weight=w).to(ndgrad.float64)
    assert m.weight.dtype == ndgrad.float64
    with pytest.warns(UserWarning, match="size_average and reduce args"):
        assert nn.L1Loss(size_average=False).reduction == "sum"
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=0.0)
    assert repr(nn.PairwiseDistance()) == repr(torch.nn.PairwiseDistance())


def test_cross_entropy_module_trains():
    """A few gradient steps of a linear classifier give torch's losses."""
    X, t = rn(16, 4), ri(3, 16)
    tw = rn(3, 4, seed=1).requires_grad_()
    nw = _nd(tw)
    tl, nl = torch.nn.CrossEntropyLoss(label_smoothing=0.05), nn.CrossEntropyLoss(
        label_smoothing=0.05)
    nX, nt = _nd(X), _nd(t)
    for _ in range(5):
        a, b = tl(X @ tw.t(), t), nl(nX @ nw.t(), nt)
        np.testing.assert_allclose(b.item(), a.item(), rtol=1e-10)
        a.backward()
        b.backward()
        with torch.no_grad():
            tw -= 0.5 * tw.grad
            tw.grad = None
        with ndgrad.no_grad():
            nw -= 0.5 * nw.grad
            nw.grad = None


def test_result_dtypes():
    """Mixed float32/float64 operands give torch's result dtype (or its error)."""
    a32, a64 = torch.zeros(3) + 0.5, torch.ones(3, dtype=D)
    for name in ("binary_cross_entropy", "binary_cross_entropy_with_logits", "soft_margin_loss",
                 "smooth_l1_loss", "huber_loss", "l1_loss", "mse_loss",
                 "multilabel_soft_margin_loss"):
        for x, y in ((a32, a64), (a64 * 0.5, a32)):
            try:
                want = getattr(TF, name)(x, y).dtype
            except RuntimeError as e:
                with pytest.raises(RuntimeError, match=str(e)):
                    getattr(F, name)(_nd(x), _nd(y))
                continue
            got = getattr(F, name)(_nd(x), _nd(y)).dtype
            assert str(got).split(".")[-1] == str(want).split(".")[-1], name


def test_huber_loss_delta_type_checked_at_construction():
    same_error(lambda: torch.nn.HuberLoss(delta=1 + 0j), lambda: nn.HuberLoss(delta=1 + 0j))
    assert nn.HuberLoss(delta=2).delta == 2


# ---- LinearCrossEntropyLoss (torch 2.13's module; found missing by tests/torch_moduledb.py) ----
@pytest.mark.parametrize("kw,tshape", [
    ({}, (5,)),
    ({"out_features": (2,), "bias": True, "reduction": "none"}, (5, 2)),
    ({"weight": "w", "ignore_index": 1, "label_smoothing": 0.2, "reduction": "sum"}, (5,)),
    ({"options": "opts"}, (5,)),
])
def test_linear_cross_entropy_loss_module(kw, tshape):
    w = torch.tensor([1.0, 2.0, 0.5, 1.5], dtype=D)
    tkw, nkw = dict(kw), dict(kw)
    if kw.get("weight") == "w":
        tkw["weight"], nkw["weight"] = w, to_ndgrad(w)
    if kw.get("options") == "opts":
        tkw["options"] = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
        nkw["options"] = nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    tm = torch.nn.LinearCrossEntropyLoss(3, 4, dtype=D, **tkw)
    nm = nn.LinearCrossEntropyLoss(3, 4, dtype=ndgrad.float64, **nkw)
    assert repr(nm) == repr(tm)
    x = rn(5, 3)
    t = torch.randint(0, 4, tshape, generator=_g(3))
    check_module(tm, nm, x, t)


def test_linear_cross_entropy_mixed_dtypes_as_addmm():
    x = rn(2, 3)
    for b in (None, torch.ones(4), torch.ones(4, dtype=D)):
        same_error(lambda b=b: TF.linear_cross_entropy(x, torch.ones(4, 3), torch.tensor([0, 1]),
                                                      linear_bias=b),
                   lambda b=b: F.linear_cross_entropy(
                       to_ndgrad(x), ndgrad.ones(4, 3), ndgrad.tensor([0, 1]),
                       linear_bias=None if b is None else to_ndgrad(b)))


def test_linear_cross_entropy_loss_errors():
    same_error(lambda: torch.nn.LinearCrossEntropyLoss(3, 2, weight=torch.ones(3)),
               lambda: nn.LinearCrossEntropyLoss(3, 2, weight=ndgrad.ones(3)))
    same_error(lambda: torch.nn.LinearCrossEntropyLoss(3, 2, label_smoothing=2.0),
               lambda: nn.LinearCrossEntropyLoss(3, 2, label_smoothing=2.0))
    for bad in ({"acc_policy": "fast"}, {"chunking_method": "square"},
                {"chunking_method": "aspect_ratio:0"}, {"batch_chunk_size": 0},
                {"acc_dtype": torch.int64}):
        nbad = {k: (ndgrad.int64 if v is torch.int64 else v) for k, v in bad.items()}
        same_error(lambda b=bad: torch.nn.LinearCrossEntropyOptions(**b),
                   lambda b=nbad: nn.LinearCrossEntropyOptions(**b))


def test_cross_entropy_negative_label_smoothing_is_none():
    """torch checks the range only for a positive smoothing: a negative one smooths nothing
    (found by tests/torch_moduledb.py's CrossEntropyLoss variants)."""
    x = rn(3, 4).requires_grad_()
    compare("cross_entropy", [x, torch.tensor([0, 3, 1])], {"label_smoothing": -0.1})
    compare("cross_entropy", [x, rr(3, 4, seed=2)], {"label_smoothing": -0.5})
    same_error(lambda: TF.cross_entropy(x, torch.tensor([0, 3, 1]), label_smoothing=1.5),
               lambda: F.cross_entropy(to_ndgrad(x), ndgrad.tensor([0, 3, 1]),
                                       label_smoothing=1.5))
