"""``nn.AdaptiveLogSoftmaxWithLoss`` against torch: initial weights from the same seed, the
forward's ``(output, loss)`` namedtuple, gradients of input and parameters, ``log_prob``,
``predict`` on its three paths, unbatched input, repr/state_dict, and torch's errors."""

import numpy as np
import pytest
import torch

import ndgrad

LIBS = (torch, ndgrad)


def make(L, in_features=12, n_classes=11, cutoffs=(3, 6, 9), div_value=2.0, head_bias=True,
         dtype=None):
    L.manual_seed(0)
    return L.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, list(cutoffs), div_value,
                                           head_bias, dtype=dtype)


def arr(t):
    return t.detach().numpy()


def test_same_seed_same_parameters_state_dict_and_repr():
    mods = [make(L) for L in LIBS]
    sd = [{k: arr(v) for k, v in m.state_dict().items()} for m in mods]
    assert list(sd[1]) == list(sd[0])
    for k in sd[0]:
        np.testing.assert_allclose(sd[1][k], sd[0][k], rtol=1e-6, atol=1e-7, err_msg=k)
    assert repr(mods[1]) == repr(mods[0])
    assert [(m.shortlist_size, m.n_clusters, m.head_size, m.cutoffs) for m in mods][0] == \
        (mods[1].shortlist_size, mods[1].n_clusters, mods[1].head_size, mods[1].cutoffs)


@pytest.mark.parametrize("target", [[0, 2, 3, 5, 6, 10, 1, 9], [4], [0, 1, 2, 0], [10, 9, 10]])
def test_forward_output_loss_and_gradients_match_torch(target):
    res = []
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((len(target), 12))
    for L in LIBS:
        m = make(L, dtype=L.float64)
        x = L.tensor(x0, requires_grad=True)
        out = m(x, L.tensor(target))
        assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
        out.loss.backward()
        res.append((arr(out.output), arr(out.loss), arr(x.grad),
                    [arr(p.grad) if p.grad is not None else None for p in m.parameters()]))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-10)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-10)
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-10, atol=1e-14)
    for a, b in zip(res[0][3], res[1][3]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-14)


def test_gradcheck_in_float64():
    m = make(ndgrad, in_features=6, n_classes=7, cutoffs=(2, 4), dtype=ndgrad.float64)
    x = ndgrad.randn(5, 6, dtype=ndgrad.float64, requires_grad=True)
    t = ndgrad.tensor([0, 3, 6, 1, 5])
    assert ndgrad.autograd.gradcheck(lambda x: m(x, t).loss, (x,))


def test_unbatched_input_and_log_prob():
    res = []
    x0 = np.random.default_rng(2).standard_normal((4, 12)).astype(np.float32)
    for L in LIBS:
        m = make(L)
        out = m(L.tensor(x0[0]), L.tensor(7))
        lp = m.log_prob(L.tensor(x0))
        res.append((arr(out.output), arr(out.loss), tuple(out.output.shape), arr(lp)))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-5)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-5)
    assert res[1][2] == res[0][2] == ()
    np.testing.assert_allclose(res[1][3], res[0][3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.exp(res[1][3]).sum(1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("bias_shift", ["shortlist", "clusters", "mixed"])
def test_predict_on_each_path_matches_torch(bias_shift):
    x0 = np.random.default_rng(3).standard_normal((6, 12)).astype(np.float32)
    res = []
    for L in LIBS:
        m = make(L)
        with L.no_grad():
            if bias_shift == "shortlist":
                m.head.bias[:3] += 50
            elif bias_shift == "clusters":
                m.head.bias[3:] += 50
            else:
                m.head.weight.zero_()
                m.head.weight[0, 0] = 100.0
                m.head.weight[4, 0] = -100.0
        pred = m.predict(L.tensor(x0))
        res.append((pred.tolist(), str(pred.dtype).split(".")[1],
                    m.log_prob(L.tensor(x0)).argmax(1).tolist()))
    assert res[1] == res[0]
    assert res[0][0] == res[0][2]
    if bias_shift == "mixed":
        assert min(res[0][0]) < 3 <= max(res[0][0])


@pytest.mark.parametrize("cutoffs, n_classes", [([], 5), ([3, 2], 5), ([0, 2], 5), ([2, 5], 5),
                                                ([2, 2], 5), ([1.5], 5)])
def test_bad_cutoffs_raise_value_error_like_torch(cutoffs, n_classes):
    msgs = []
    for L in LIBS:
        with pytest.raises(ValueError) as e:
            L.nn.AdaptiveLogSoftmaxWithLoss(4, n_classes, cutoffs)
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


@pytest.mark.parametrize("x_shape, target", [((3, 12), [1, 2]), ((3, 4, 12), [1, 2, 3]),
                                             ((2, 12), 1), ((12,), [[1]]), ((2, 12), [0, 11]),
                                             ((2, 12), [-1, 3])])
def test_bad_shapes_and_targets_raise_like_torch(x_shape, target):
    msgs = []
    for L in LIBS:
        m = make(L)
        with pytest.raises(RuntimeError) as e:
            m(L.zeros(x_shape), L.tensor(target))
        msgs.append(str(e.value).replace("torch.Size", "Size").replace("ndgrad.Size", "Size"))
    assert msgs[1] == msgs[0]
