"""ndgrad.amp against torch.amp (CPU): autocast's casting policy per op (output dtypes and
values), its context/decorator API, the cast cache, threads, custom_fwd/custom_bwd, and
GradScaler's scaling, unscaling, skipped steps, scale updates, state and errors."""

from __future__ import annotations

import pickle
import threading
import warnings

import numpy as np
import pytest

import ndgrad

torch = pytest.importorskip("torch")
F_T = torch.nn.functional
F_N = ndgrad.nn.functional


def _lib_cases():
    """(name, fn(lib, F, mk)) where mk(shape, kind) makes an input from fixed data."""
    return {
        "matmul": lambda L, F, mk: mk((2, 3)) @ mk((3, 4)),
        "matmul_1d": lambda L, F, mk: L.matmul(mk((3,)), mk((3, 2))),
        "mm": lambda L, F, mk: L.mm(mk((2, 3)), mk((3, 4))),
        "bmm": lambda L, F, mk: L.bmm(mk((2, 2, 3)), mk((2, 3, 2))),
        "addmm": lambda L, F, mk: L.addmm(mk((4,)), mk((2, 3)), mk((3, 4))),
        "baddbmm": lambda L, F, mk: L.baddbmm(mk((2, 2, 2)), mk((2, 2, 3)), mk((2, 3, 2))),
        "addbmm": lambda L, F, mk: L.addbmm(mk((2, 2)), mk((2, 2, 3)), mk((2, 3, 2))),
        "linear": lambda L, F, mk: F.linear(mk((2, 3)), mk((4, 3)), mk((4,))),
        "conv1d": lambda L, F, mk: F.conv1d(mk((1, 2, 5)), mk((3, 2, 2)), mk((3,))),
        "conv2d": lambda L, F, mk: F.conv2d(mk((1, 2, 4, 4)), mk((3, 2, 2, 2)), padding=1),
        "conv_transpose2d": lambda L, F, mk: F.conv_transpose2d(mk((1, 2, 3, 3)),
                                                                mk((2, 3, 2, 2))),
        "prelu": lambda L, F, mk: F.prelu(mk((2, 3)), mk((1,))),
        "sdpa": lambda L, F, mk: F.scaled_dot_product_attention(mk((1, 2, 3, 4)), mk((1, 2, 3, 4)),
                                                                mk((1, 2, 3, 4))),
        "einsum_contracting": lambda L, F, mk: L.einsum("bij,jk->bik", mk((2, 2, 3)), mk((3, 2))),
        "einsum_dot": lambda L, F, mk: L.einsum("i,i->", mk((3,)), mk((3,))),
        "einsum_elementwise": lambda L, F, mk: L.einsum("ij,ij->ij", mk((2, 3)), mk((2, 3))),
        "einsum_outer": lambda L, F, mk: L.einsum("i,j->ij", mk((2,)), mk((3,))),
        "vecdot": lambda L, F, mk: L.linalg.vecdot(mk((2, 3)), mk((2, 3))),
        "tensordot": lambda L, F, mk: L.tensordot(mk((2, 3)), mk((3, 2)), 1),
        "mha": lambda L, F, mk: L.nn.functional.multi_head_attention_forward(
            mk((3, 1, 4)), mk((3, 1, 4)), mk((3, 1, 4)), 4, 2, mk((12, 4)), mk((12,)), None, None,
            False, 0.0, mk((4, 4)), mk((4,)), need_weights=False)[0],
        "mv_untouched": lambda L, F, mk: L.mv(mk((3, 3)), mk((3,))),
        "softmax_untouched": lambda L, F, mk: mk((2, 3)).softmax(-1),
        "sum_untouched": lambda L, F, mk: mk((2, 3)).sum(),
        "mse_loss": lambda L, F, mk: F.mse_loss(mk((2, 3)), mk((2, 3))),
        "l1_loss": lambda L, F, mk: F.l1_loss(mk((2, 3)), mk((2, 3))),
        "smooth_l1_loss": lambda L, F, mk: F.smooth_l1_loss(mk((2, 3)), mk((2, 3))),
        "cross_entropy": lambda L, F, mk: F.cross_entropy(mk((2, 3)), L.tensor([0, 2])),
        "nll_loss": lambda L, F, mk: F.nll_loss(mk((2, 3)), L.tensor([0, 2])),
        "bce": lambda L, F, mk: F.binary_cross_entropy(mk((2, 3), "prob"), mk((2, 3), "prob")),
        "bce_logits": lambda L, F, mk: F.binary_cross_entropy_with_logits(mk((2, 3)),
                                                                          mk((2, 3), "prob")),
        "kl_div": lambda L, F, mk: F.kl_div(mk((2, 3)), mk((2, 3), "prob"),
                                            reduction="batchmean"),
        "triplet": lambda L, F, mk: F.triplet_margin_loss(mk((2, 3)), mk((2, 3)), mk((2, 3))),
        "prod": lambda L, F, mk: mk((2, 3)).prod(),
        "trace": lambda L, F, mk: L.trace(mk((3, 3))),
        "cdist": lambda L, F, mk: L.cdist(mk((2, 3)), mk((2, 3))),
        "grid_sample": lambda L, F, mk: F.grid_sample(mk((1, 1, 4, 4)), mk((1, 2, 2, 2), "unit"),
                                                      align_corners=False),
        "linalg_inv": lambda L, F, mk: L.linalg.inv(mk((3, 3), "spd")),
        "inverse": lambda L, F, mk: L.inverse(mk((3, 3), "spd")),
        "linalg_solve": lambda L, F, mk: L.linalg.solve(mk((3, 3), "spd"), mk((3,))),
        "linalg_eigh": lambda L, F, mk: L.linalg.eigh(mk((3, 3), "spd"))[0],
        "linalg_cholesky": lambda L, F, mk: L.linalg.cholesky(mk((3, 3), "spd")),
        "fft_rfft": lambda L, F, mk: L.fft.rfft(mk((8,))).abs(),
        "cat_promotes": lambda L, F, mk: L.cat([mk((2,)), mk((2,)).float()]),
    }


_RNG = np.random.default_rng(0)
_DATA: dict = {}


def _array(shape, kind):
    key = (shape, kind)
    if key not in _DATA:
        a = _RNG.standard_normal(shape)
        if kind == "prob":
            a = _RNG.uniform(0.1, 0.9, shape)
        elif kind == "unit":
            a = _RNG.uniform(-0.9, 0.9, shape)
        elif kind == "spd":
            a = a @ a.T + 3 * np.eye(shape[0])
        _DATA[key] = a.astype(np.float32)
    return _DATA[key]


@pytest.mark.parametrize("name", sorted(_lib_cases()))
@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16"])
def test_autocast_policy_matches_torch(name, in_dtype):
    fn = _lib_cases()[name]
    outs = []
    for L, F in ((torch, F_T), (ndgrad, F_N)):
        dt = getattr(L, in_dtype)

        def mk(shape, kind="normal", L=L, dt=dt):
            return L.tensor(_array(shape, kind)).to(dt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with L.autocast("cpu"):
                r = fn(L, F, mk)
        outs.append(r)
    t, n = outs
    assert str(n.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (n.dtype, t.dtype)
    low = "bfloat16" in str(t.dtype) or in_dtype == "bfloat16"
    tol = 3e-2 if low else 1e-5
    np.testing.assert_allclose(n.float().detach().numpy(), t.float().detach().numpy(),
                               rtol=tol, atol=tol)


def test_gradients_flow_back_in_the_inputs_dtype():
    for L in (torch, ndgrad):
        x = L.tensor(_array((2, 3), "normal"), requires_grad=True)
        w = L.tensor(_array((3, 4), "normal"), requires_grad=True)
        with L.autocast("cpu"):
            y = x @ w
            loss = L.nn.functional.mse_loss(y, L.zeros(2, 4))
        loss.backward()
        if L is torch:
            ref = (y.dtype, loss.dtype, x.grad.dtype, w.grad.numpy().copy(),
                   y.grad_fn.name(), y.grad_fn.next_functions[1][0].name())
        else:
            got = (y.dtype, loss.dtype, x.grad.dtype, w.grad.numpy().copy(),
                   y.grad_fn.name(), y.grad_fn.next_functions[1][0].name())
    assert [str(v).split(".")[-1] for v in got[:3]] == [str(v).split(".")[-1] for v in ref[:3]]
    np.testing.assert_allclose(got[3], ref[3], rtol=2e-2, atol=2e-2)
    assert got[4:] == ref[4:] == ("MmBackward0", "ToCopyBackward0")


def test_cast_cache_shares_a_leafs_cast_within_a_region():
    w = ndgrad.ones(3, 3, requires_grad=True)
    x = ndgrad.ones(2, 3)
    with ndgrad.autocast("cpu"):
        a, b = x @ w, x @ w
        assert a.grad_fn.next_functions[1][0] is b.grad_fn.next_functions[1][0]
        with ndgrad.autocast("cpu", cache_enabled=False):
            c = x @ w
        assert c.grad_fn.next_functions[1][0] is not a.grad_fn.next_functions[1][0]
    with ndgrad.autocast("cpu"):
        d = x @ w       # the cache was cleared when the outer region exited
    assert d.grad_fn.next_functions[1][0] is not a.grad_fn.next_functions[1][0]
    # non-leaves are never cached
    h = w * 1
    with ndgrad.autocast("cpu"):
        e, f = x @ h, x @ h
    assert e.grad_fn.next_functions[1][0] is not f.grad_fn.next_functions[1][0]


def test_cast_cache_follows_torchs_rules():
    # a cast made under no_grad is not cached; bfloat16 -> float32 casts are not cached
    for L in (torch, ndgrad):
        w = L.ones(3, 3, requires_grad=True)
        x = L.ones(2, 3)
        with L.autocast("cpu"):
            with L.no_grad():
                x @ w
            b = x @ w
        assert b.requires_grad
        b.float().sum().backward()
        assert float(w.grad.sum()) == 18.0
    v = ndgrad.ones(2, 3, dtype=ndgrad.bfloat16, requires_grad=True)
    with ndgrad.autocast("cpu"):
        la = ndgrad.nn.functional.mse_loss(v, ndgrad.zeros(2, 3))
        lb = ndgrad.nn.functional.mse_loss(v, ndgrad.zeros(2, 3))
    assert la.grad_fn.next_functions[0][0] is not lb.grad_fn.next_functions[0][0]


def test_compiled_functions_specialize_on_the_autocast_state():
    x, w = ndgrad.ones(2, 3), ndgrad.ones(3, 3)
    g = ndgrad.compile(lambda x, w: (x @ w).sum())
    assert g(x, w).dtype == ndgrad.float32
    with ndgrad.autocast("cpu"):
        assert g(x, w).dtype == ndgrad.bfloat16
    with ndgrad.autocast("cpu", dtype=ndgrad.float16):
        assert g(x, w).dtype == ndgrad.float16
    assert g(x, w).dtype == ndgrad.float32


def test_region_state_nesting_decorator_and_restore_on_error():
    assert not ndgrad.is_autocast_enabled("cpu")
    with ndgrad.autocast("cpu", dtype=ndgrad.float16):
        assert ndgrad.is_autocast_enabled("cpu")
        assert ndgrad.get_autocast_dtype("cpu") == ndgrad.float16
        assert (ndgrad.ones(2, 2) @ ndgrad.ones(2, 2)).dtype == ndgrad.float16
        with ndgrad.autocast("cpu", enabled=False):
            assert not ndgrad.is_autocast_enabled("cpu")
            assert (ndgrad.ones(2, 2) @ ndgrad.ones(2, 2)).dtype == ndgrad.float32
        assert ndgrad.is_autocast_enabled("cpu")
    assert ndgrad.get_autocast_dtype("cpu") == ndgrad.bfloat16
    assert not ndgrad.is_autocast_enabled() and not ndgrad.is_autocast_enabled("cpu")

    @ndgrad.autocast("cpu")
    def f(a):
        return a @ a
    assert f(ndgrad.ones(2, 2)).dtype == ndgrad.bfloat16
    with pytest.raises(ZeroDivisionError):
        with ndgrad.autocast("cpu"):
            1 / 0
    assert not ndgrad.is_autocast_enabled("cpu")
    assert ndgrad.amp.autocast_mode._autocast.active == 0
    # float64 is never cast
    with ndgrad.autocast("cpu"):
        assert (ndgrad.ones(2, 2, dtype=ndgrad.float64) @ ndgrad.ones(
            2, 2, dtype=ndgrad.float64)).dtype == ndgrad.float64


def test_errors_and_warnings_match_torch():
    for L in (torch, ndgrad):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            L.autocast(1)
        with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
            L.autocast("tpu")
        with pytest.warns(UserWarning, match="target dtype is not supported"):
            with L.autocast("cpu", dtype=L.float64):
                assert not L.is_autocast_enabled("cpu")
        with pytest.warns(UserWarning, match="CUDA is not available"):
            with L.autocast("cuda"):
                assert not L.is_autocast_enabled("cuda")
        with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprec"):
            with L.cpu.amp.autocast():
                assert L.is_autocast_enabled("cpu")
        with pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"):
            s = L.cuda.amp.GradScaler()
        assert not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}
        with pytest.warns(DeprecationWarning, match="is_autocast_cpu_enabled"):
            assert L.is_autocast_cpu_enabled() is False
        assert L.amp.is_autocast_available("cpu") and L.amp.is_autocast_available("cuda")


def test_autocast_state_is_per_thread():
    seen = {}

    def other():
        seen["enabled"] = ndgrad.is_autocast_enabled("cpu")
        seen["dtype"] = (ndgrad.ones(2, 2) @ ndgrad.ones(2, 2)).dtype
    with ndgrad.autocast("cpu"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert (ndgrad.ones(2, 2) @ ndgrad.ones(2, 2)).dtype == ndgrad.bfloat16
    assert seen == {"enabled": False, "dtype": ndgrad.float32}


def _custom_mm(L, record):
    class MyMM(L.autograd.Function):
        @staticmethod
        @L.amp.custom_fwd(device_type="cpu", cast_inputs=L.float32)
        def forward(ctx, a, b):
            record["fwd"] = (L.is_autocast_enabled("cpu"), a.dtype)
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @L.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            record["bwd"] = L.is_autocast_enabled("cpu")
            a, b = ctx.saved_tensors
            return g.mm(b.t()), a.t().mm(g)
    return MyMM


def test_custom_fwd_and_custom_bwd():
    for L in (torch, ndgrad):
        record: dict = {}
        a = L.ones(2, 2, dtype=L.bfloat16, requires_grad=True)
        with L.autocast("cpu"):
            out = _custom_mm(L, record).apply(a, L.ones(2, 2))
        out.sum().backward()
        assert record["fwd"] == (False, L.float32) and record["bwd"] is False
        assert out.dtype == L.float32 and a.grad.dtype == L.bfloat16
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            L.amp.custom_fwd(device_type=1)


# ---------------------------------------------------------------------------- GradScaler
def _scaler_run(L, inject_inf_at=(2,), steps=6, growth_interval=2):
    L.manual_seed(0)
    model = L.nn.Linear(3, 2)
    opt = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = L.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=growth_interval)
    x = L.tensor(_array((4, 3), "normal"))
    log = []
    for step in range(steps):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        scaled = scaler.scale(loss)
        scaled.backward()
        if step in inject_inf_at:
            model.weight.grad[0, 0] = float("inf")
        scaler.unscale_(opt)
        gw = model.weight.grad.clone()
        r = scaler.step(opt)
        scaler.update()
        log.append((float(scaled.detach()), r, scaler.get_scale(), scaler._get_growth_tracker(),
                    gw.numpy(), model.weight.detach().numpy().copy()))
    return log, scaler.state_dict()


def test_grad_scaler_matches_torch():
    ref, ref_state = _scaler_run(torch)
    got, got_state = _scaler_run(ndgrad)
    assert got_state == ref_state
    for (s1, r1, sc1, tr1, g1, w1), (s2, r2, sc2, tr2, g2, w2) in zip(ref, got):
        assert (r1, sc1, tr1) == (r2, sc2, tr2)
        np.testing.assert_allclose(s2, s1, rtol=1e-5)
        np.testing.assert_allclose(g2, g1, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(w2, w1, rtol=1e-5, atol=1e-7)


def test_grad_scaler_errors_match_torch():
    for L in (torch, ndgrad):
        w = L.ones(2, requires_grad=True)
        opt = L.optim.SGD([w], lr=0.1)
        s = L.amp.GradScaler("cpu")
        with pytest.raises(AssertionError, match="Attempted update but _scale is None"):
            s.update()
        with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
            s.step(opt)
        s.scale((w * 2).sum()).backward()
        s.unscale_(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
            s.unscale_(opt)
        assert s.step(opt) is None
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            s.step(opt)
        s.update()
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            s.step(opt, closure=lambda: 0)
        s2 = L.amp.GradScaler("cpu")
        s2.load_state_dict(s.state_dict())
        assert s2.state_dict() == s.state_dict()
        s3 = pickle.loads(pickle.dumps(s))
        assert s3.get_scale() == s.get_scale()
        assert s.scale([w, (w,)])[1][0].shape == w.shape
        with pytest.raises(RuntimeError, match="disabled instance of GradScaler"):
            s2.load_state_dict({})


def test_disabled_scaler_is_the_plain_step():
    w = ndgrad.ones(2, requires_grad=True)
    opt = ndgrad.optim.SGD([w], lr=0.5)
    s = ndgrad.amp.GradScaler("cpu", enabled=False)
    loss = (w * 2).sum()
    assert s.scale(loss) is loss
    loss.backward()
    s.unscale_(opt)
    s.step(opt)
    s.update()
    assert w.tolist() == [0.0, 0.0] and s.get_scale() == 1.0


@pytest.mark.parametrize("cls,kw,packed", [
    ("LSTM", {}, False), ("LSTM", {"num_layers": 2, "bidirectional": True}, False),
    ("LSTM", {}, True), ("RNN", {"nonlinearity": "relu"}, False), ("RNN", {}, True),
    ("GRU", {"bidirectional": True}, False)])
def test_recurrent_layers_under_autocast_match_torch(cls, kw, packed):
    x = _array((3, 2, 4), "normal")
    res = []
    for L in (torch, ndgrad):
        L.manual_seed(0)
        m = getattr(L.nn, cls)(4, 5, **kw)
        inp = L.tensor(x)
        if packed:
            inp = L.nn.utils.rnn.pack_padded_sequence(inp, [3, 2])
        with L.autocast("cpu"):
            out, h = m(inp)
        out = out.data if packed else out
        hs = h if isinstance(h, tuple) else (h,)
        out.float().sum().backward()
        res.append(([str(t.dtype).split(".")[-1] for t in (out,) + hs], out.float().detach(),
                    next(m.parameters()).grad))
    (td, tv, tg), (nd, nv, ng) = res
    assert nd == td
    np.testing.assert_allclose(nv.numpy(), tv.numpy(), rtol=3e-2, atol=3e-2)
    assert str(ng.dtype).split(".")[-1] == str(tg.dtype).split(".")[-1] == "float32"
