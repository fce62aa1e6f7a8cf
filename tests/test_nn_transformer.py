"""Attention and transformers against PyTorch (float64): F.scaled_dot_product_attention,
F.multi_head_attention_forward, nn.MultiheadAttention, the Transformer modules."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ndgrad
import ndgrad.nn as nn
import ndgrad.nn.functional as F
from tests.nn_compare import assert_close, check_module, copy_state

D = torch.float64


def _t(a, rg=False):
    return torch.tensor(a, requires_grad=rg)


def _n(a, rg=False):
    return ndgrad.tensor(a, requires_grad=rg)


# ---------------------------------------------------------------------------- sdpa
_SDPA_CASES = [
    dict(),
    dict(is_causal=True),
    dict(scale=0.3),
    dict(mask="bool"),
    dict(mask="float"),
    dict(mask="dead"),           # a fully masked row: zeros, as torch's safe softmax
    dict(gqa=True),
    dict(broadcast=True),
]


@pytest.mark.parametrize("case", range(len(_SDPA_CASES)))
def test_sdpa_matches_torch(case):
    c = _SDPA_CASES[case]
    rng = np.random.default_rng(case)
    hq, hk = (4, 2) if c.get("gqa") else (2, 2)
    q = rng.standard_normal((3, 2, 5, 4) if c.get("broadcast") else (2, hq, 5, 4))
    k = rng.standard_normal((2, hk, 6, 4))
    v = rng.standard_normal((2, hk, 6, 3))
    kw_t, kw_n = {}, {}
    if c.get("is_causal"):
        kw_t["is_causal"] = kw_n["is_causal"] = True
    if c.get("scale"):
        kw_t["scale"] = kw_n["scale"] = c["scale"]
    if c.get("gqa"):
        kw_t["enable_gqa"] = kw_n["enable_gqa"] = True
    m = c.get("mask")
    if m == "bool" or m == "dead":
        mask = rng.random((5, 6)) > 0.3
        if m == "dead":
            mask[1] = False
        kw_t["attn_mask"], kw_n["attn_mask"] = torch.tensor(mask), ndgrad.tensor(mask)
    elif m == "float":
        mask = rng.standard_normal((2, 1, 5, 6))
        kw_t["attn_mask"], kw_n["attn_mask"] = _t(mask, True), _n(mask, True)
    if c.get("broadcast"):
        q = rng.standard_normal((2, 1, 5, 4))
    tq, tk, tv = _t(q, True), _t(k, True), _t(v, True)
    nq, nk, nv = _n(q, True), _n(k, True), _n(v, True)
    to = TF.scaled_dot_product_attention(tq, tk, tv, **kw_t)
    no = F.scaled_dot_product_attention(nq, nk, nv, **kw_n)
    assert_close(no, to, what="output")
    g = rng.standard_normal(tuple(to.shape))
    tins = [tq, tk, tv] + ([kw_t["attn_mask"]] if m == "float" else [])
    nins = [nq, nk, nv] + ([kw_n["attn_mask"]] if m == "float" else [])
    tg = torch.autograd.grad(to, tins, torch.tensor(g), create_graph=True)
    ng = ndgrad.autograd.grad(no, nins, ndgrad.tensor(g), create_graph=True)
    for a, b in zip(tg, ng):
        assert_close(b, a, what="grad")
    tgg = torch.autograd.grad(sum((x * x).sum() for x in tg), tins)
    ngg = ndgrad.autograd.grad(sum((x * x).sum() for x in ng), nins)
    for a, b in zip(tgg, ngg):
        assert_close(b, a, rtol=1e-8, atol=1e-10, what="gradgrad")
    # plain backward (NumPy path) equals the differentiable one
    plain = ndgrad.autograd.grad(F.scaled_dot_product_attention(nq, nk, nv, **kw_n), nins,
                                 ndgrad.tensor(g))
    for a, b in zip(tg, plain):
        assert_close(b, a, what="grad (NumPy path)")


def test_sdpa_jvp_and_dropout():
    import ndgrad.autograd.forward_ad as fwAD
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    tans = [rng.standard_normal((2, 3, 4)) for _ in range(3)]
    _, tj = torch.func.jvp(lambda a, b, c: TF.scaled_dot_product_attention(a, b, c),
                           tuple(map(torch.tensor, (q, k, v))), tuple(map(torch.tensor, tans)))
    with fwAD.dual_level():
        d = [fwAD.make_dual(_n(a), _n(t)) for a, t in zip((q, k, v), tans)]
        nj = fwAD.unpack_dual(F.scaled_dot_product_attention(*d)).tangent
    assert_close(nj, tj)
    # dropout: kept probabilities scaled by 1/(1-p); the output is P*mask/(1-p) @ v
    ndgrad.manual_seed(0)
    out = F.scaled_dot_product_attention(_n(q), _n(k), _n(np.eye(3)[None].repeat(2, 0)),
                                         dropout_p=0.5)
    p = torch.softmax(torch.tensor(q) @ torch.tensor(k).transpose(-1, -2) / 2, -1).numpy()
    ratio = out.numpy() / p
    assert set(np.round(np.unique(ratio), 6)) <= {0.0, 2.0}


def test_sdpa_errors_match_torch():
    q, k = torch.randn(2, 3, 4, dtype=D), torch.randn(2, 5, 4, dtype=D)
    nq, nk = ndgrad.tensor(q.numpy()), ndgrad.tensor(k.numpy())
    m = torch.ones(3, 5, dtype=torch.bool)
    cases = [
        (lambda L, a, b: L.nn.functional.scaled_dot_product_attention(
            a, b, b, attn_mask=(torch.ones(3, 5, dtype=torch.bool) if L is torch else
                                ndgrad.ones(3, 5, dtype=ndgrad.bool)), is_causal=True)),
        (lambda L, a, b: L.nn.functional.scaled_dot_product_attention(a, b[..., :3], b)),
        (lambda L, a, b: L.nn.functional.scaled_dot_product_attention(a, b, b[:, :4])),
        (lambda L, a, b: L.nn.functional.scaled_dot_product_attention(a, b.float(), b)),
        (lambda L, a, b: L.nn.functional.scaled_dot_product_attention(a[0, 0], b[0, 0],
                                                                      b[0, 0])),
        (lambda L, a, b: L.nn.functional.scaled_dot_product_attention(a, b, b, dropout_p=1.5)),
        (lambda L, a, b: L.nn.functional.scaled_dot_product_attention(
            a.unsqueeze(1).expand(2, 4, 3, 4), b.unsqueeze(1).expand(2, 3, 5, 4),
            b.unsqueeze(1).expand(2, 3, 5, 4), enable_gqa=True)),
    ]
    del m
    for f in cases:
        with pytest.raises(Exception) as te:
            f(torch, q, k)
        with pytest.raises(type(te.value)) as ne:
            f(ndgrad, nq, nk)
        key = str(te.value).split(",")[0][:30]
        assert key in str(ne.value), (str(ne.value), str(te.value))


def _sdpa_mask_and_causal(lib, case):
    """One F.scaled_dot_product_attention call with attn_mask and is_causal=True: torch runs
    it when its CPU flash kernel takes the call (4-D, no dropout, same batch and head dims, a
    2-D or 4-D mask not requiring grad ...) and combines the masks; otherwise its math path
    refuses the pair."""
    rng = np.random.default_rng(3)
    q = lib.tensor(rng.standard_normal((2, 2, 3, 4)))
    k = lib.tensor(rng.standard_normal((2, 2, 5, 4)))
    bm = lib.tensor(rng.random((3, 5)) > 0.3)
    fm = lib.tensor(rng.standard_normal((3, 5)))
    args = {"bool": (q, k, k, bm), "float": (q, k, k, fm),
            "mask4d": (q, k, k, lib.tensor(rng.random((2, 1, 3, 5)) > 0.2)),
            "gqa": (q, k[:, :1], k[:, :1], bm), "rank3": (q[0], k[0], k[0], bm),
            "dropout": (q, k, k, bm), "batch_bcast": (q, k[:1], k[:1], bm),
            "v_dim": (q, k, lib.tensor(rng.standard_normal((2, 2, 5, 6))), bm),
            "mask3d": (q, k, k, bm.unsqueeze(0)),
            "mask_grad": (q, k, k, fm.clone().requires_grad_()),
            "q_strided": (q.transpose(-1, -2).contiguous().transpose(-1, -2), k, k, bm)}[case]
    kw = {"enable_gqa": case == "gqa", "dropout_p": 0.3 if case == "dropout" else 0.0}
    try:
        return _f_of(lib).scaled_dot_product_attention(*args[:3], attn_mask=args[3],
                                                      is_causal=True, **kw).detach().numpy()
    except RuntimeError as e:
        return str(e)


def _f_of(lib):
    return TF if lib is torch else F


@pytest.mark.parametrize("case", ["bool", "float", "mask4d", "gqa", "rank3", "dropout",
                                  "batch_bcast", "v_dim", "mask3d", "mask_grad", "q_strided"])
def test_sdpa_attn_mask_with_is_causal_as_torch(case):
    want, got = _sdpa_mask_and_causal(torch, case), _sdpa_mask_and_causal(ndgrad, case)
    if isinstance(want, str):
        assert got == want
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("mdt", ["float64", "float16", "bfloat16", "int64", "float32"])
def test_sdpa_attn_mask_dtype_as_torch(rank, mdt):
    """A float mask must be float32 ("float") or the query's dtype; torch's message names
    C++ types."""
    def run(lib):
        q = lib.ones((2, 2, 3, 4)[4 - rank:])
        m = lib.zeros(3, 5, dtype=getattr(lib, mdt))
        try:
            return _f_of(lib).scaled_dot_product_attention(q, q[..., :1, :].expand(
                *q.shape[:-2], 5, 4), q[..., :1, :].expand(*q.shape[:-2], 5, 4),
                attn_mask=m).sum().item()
        except RuntimeError as e:
            return str(e)
    assert run(ndgrad) == run(torch)


# ---------------------------------------------------------------------------- mha functional
def _mha_samples():
    """Argument sets of F.multi_head_attention_forward (as torch's OpInfo samples, plus static
    keys/values, bias_k/v, zero attention and key padding), without dropout."""
    rng = np.random.default_rng(7)

    def r(*shape):
        return torch.tensor(rng.standard_normal(shape))
    out = []
    for batched in (True, False):
        for sep in (False, True):
            for extra in ("", "mask2", "mask3", "kpm", "bias_kv", "zero", "static"):
                E, H, L, S, B = 4, 2, 3, 5, 2
                q = r(L, B, E) if batched else r(L, E)
                k = r(S, B, E) if batched else r(S, E)
                v = r(S, B, E) if batched else r(S, E)
                args = [q, k, v, E, H, None if sep else r(3 * E, E), r(3 * E), None, None,
                        False, 0.0, r(E, E), r(E)]
                kw = dict(training=False, use_separate_proj_weight=sep)
                if sep:
                    kw.update(q_proj_weight=r(E, E), k_proj_weight=r(E, E),
                              v_proj_weight=r(E, E))
                if extra == "mask2":
                    kw["attn_mask"] = r(L, S)
                elif extra == "mask3":
                    kw["attn_mask"] = r(B * H if batched else H, L, S)
                elif extra == "kpm":
                    m = torch.zeros(B, S, dtype=torch.bool) if batched else \
                        torch.zeros(S, dtype=torch.bool)
                    m[..., -1] = True
                    kw["key_padding_mask"] = m
                elif extra == "bias_kv":
                    args[7], args[8] = r(1, 1, E), r(1, 1, E)
                elif extra == "zero":
                    args[9] = True
                elif extra == "static" and batched:
                    kw.update(static_k=r(B * H, S, E // H), static_v=r(B * H, S, E // H))
                out.append((args, kw))
    return out


def test_mha_forward_matches_torch():
    rng = np.random.default_rng(0)

    def conv(x, lib):
        if isinstance(x, torch.Tensor):
            a = x.detach().numpy().copy()
            return (torch.tensor if lib is torch else ndgrad.tensor)(
                a, requires_grad=x.is_floating_point())
        return x
    for args, kwargs in _mha_samples():
        for nw in (True, False):
            kw = dict(kwargs, need_weights=nw)
            ti = [conv(a, torch) for a in args]
            ni = [conv(a, ndgrad) for a in args]
            tk = {k: conv(v, torch) for k, v in kw.items()}
            nk = {k: conv(v, ndgrad) for k, v in kw.items()}
            to = TF.multi_head_attention_forward(*ti, **tk)
            no = F.multi_head_attention_forward(*ni, **nk)
            assert_close(no[0], to[0])
            if nw:
                assert_close(no[1], to[1])
            else:
                assert no[1] is None
            g = rng.standard_normal(tuple(to[0].shape))
            tl = [t for t in ti + list(tk.values())
                  if isinstance(t, torch.Tensor) and t.requires_grad]
            nl = [t for t in ni + list(nk.values())
                  if isinstance(t, ndgrad.Tensor) and t.requires_grad]
            tg = torch.autograd.grad((to[0] * torch.tensor(g)).sum(), tl, allow_unused=True)
            ng = ndgrad.autograd.grad((no[0] * ndgrad.tensor(g)).sum(), nl, allow_unused=True)
            for a, b in zip(tg, ng):
                if a is None:
                    assert b is None
                    continue
                scale = 1 + np.abs(a.numpy()).max()
                np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-8, atol=1e-9 * scale)


# ---------------------------------------------------------------------------- modules
class _W(torch.nn.Module):
    def __init__(self, m, **kw):
        super().__init__()
        self.m, self.kw = m, kw

    def forward(self, *a):
        return self.m(*a, **self.kw)


class _WN(nn.Module):
    def __init__(self, m, **kw):
        super().__init__()
        self.m, self.kw = m, kw

    def forward(self, *a):
        return self.m(*a, **self.kw)


def _cm(t, n, *inputs, **kw):
    nk = {k: (ndgrad.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v)
          for k, v in kw.items()}
    return check_module(_W(t, **kw), _WN(n, **nk), *inputs)


_MHA_CFG = [dict(), dict(bias=False), dict(add_bias_kv=True), dict(add_zero_attn=True),
            dict(kdim=3, vdim=5), dict(batch_first=True)]


@pytest.mark.parametrize("cfg", range(len(_MHA_CFG)))
def test_multihead_attention_matches_torch(cfg):
    kw = _MHA_CFG[cfg]
    torch.manual_seed(cfg)
    t = torch.nn.MultiheadAttention(4, 2, **kw).double()
    n = nn.MultiheadAttention(4, 2, **kw).double()
    assert repr(n) == repr(t)
    L, S, B = 3, 5, 2
    kd, vd = kw.get("kdim", 4), kw.get("vdim", 4)
    sh = (lambda s, d: (B, s, d)) if kw.get("batch_first") else (lambda s, d: (s, B, d))
    q, k, v = (torch.randn(*sh(L, 4), dtype=D), torch.randn(*sh(S, kd), dtype=D),
               torch.randn(*sh(S, vd), dtype=D))
    kpm = torch.tensor([[False] * 4 + [True], [False] * 5])
    for opts in [dict(), dict(need_weights=False), dict(average_attn_weights=False),
                 dict(attn_mask=torch.randn(L, S, dtype=D)),
                 dict(attn_mask=torch.rand(L, S) > 0.7),
                 dict(key_padding_mask=kpm),
                 dict(key_padding_mask=kpm, attn_mask=torch.rand(L, S) > 0.8,
                      need_weights=False)]:
        _cm(t, n, q, k, v, **opts)
    if "kdim" not in kw:
        x = torch.randn(*sh(L, 4), dtype=D)
        _cm(t, n, x[:, 0] if not kw.get("batch_first") else x[0],
            x[:, 0] if not kw.get("batch_first") else x[0],
            x[:, 0] if not kw.get("batch_first") else x[0])        # unbatched
    names = [name for name, _ in n.named_parameters()]
    assert names == [name for name, _ in t.named_parameters()]
    assert type(n.out_proj).__name__ == "NonDynamicallyQuantizableLinear"


_LAYER_CFG = [dict(), dict(norm_first=True), dict(activation="gelu"), dict(batch_first=True),
              dict(bias=False), dict(activation="callable")]


@pytest.mark.parametrize("cfg", range(len(_LAYER_CFG)))
def test_transformer_layers_match_torch(cfg):
    kw = dict(_LAYER_CFG[cfg])
    nkw = dict(kw)
    if kw.get("activation") == "callable":
        kw["activation"], nkw["activation"] = torch.tanh, ndgrad.tanh
    torch.manual_seed(cfg)
    t = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw).double()
    n = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **nkw).double()
    bf = kw.get("batch_first", False)
    x = torch.randn(3, 5, 8, dtype=D) if bf else torch.randn(5, 3, 8, dtype=D)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=D)
    check_module(t, n, x)
    _cm(t, n, x, src_mask=mask, is_causal=True)
    _cm(t, n, x, src_key_padding_mask=torch.tensor([[False] * 5, [False] * 3 + [True] * 2,
                                                    [False] * 4 + [True]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        te = torch.nn.TransformerEncoder(t, 2, norm=torch.nn.LayerNorm(8).double())
        ne = nn.TransformerEncoder(n, 2, norm=nn.LayerNorm(8).double())
    _cm(te, ne, x, mask=mask)
    td = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw).double()
    nd = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **nkw).double()
    m = torch.randn(3, 4, 8, dtype=D) if bf else torch.randn(4, 3, 8, dtype=D)
    _cm(td, nd, x, m, tgt_mask=mask)
    tdd, ndd = torch.nn.TransformerDecoder(td, 2), nn.TransformerDecoder(nd, 2)
    _cm(tdd, ndd, x, m, tgt_mask=mask, memory_key_padding_mask=torch.zeros(3, 4).bool())
    assert repr(ndd) == repr(tdd)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_transformer_matches_torch():
    torch.manual_seed(0)
    t = torch.nn.Transformer(8, 2, 2, 2, 16, dropout=0.0).double()
    n = nn.Transformer(8, 2, 2, 2, 16, dropout=0.0).double()
    assert list(n.state_dict()) == list(t.state_dict())
    assert repr(n) == repr(t)
    _cm(t, n, torch.randn(5, 3, 8, dtype=D), torch.randn(4, 3, 8, dtype=D),
        tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=D))
    # dropout: eval is deterministic and equals torch's
    t, n = torch.nn.Transformer(8, 2, 1, 1, 16).double(), nn.Transformer(8, 2, 1, 1, 16).double()
    copy_state(t, n)
    t.eval()
    n.eval()
    src, tgt = torch.randn(5, 3, 8, dtype=D), torch.randn(4, 3, 8, dtype=D)
    with torch.no_grad():
        want = t(src, tgt)
    assert_close(n(ndgrad.tensor(src.numpy()), ndgrad.tensor(tgt.numpy())), want)
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.dtype == ndgrad.float32
    np.testing.assert_array_equal(mask.numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(3).numpy())


def test_transformer_errors_match_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = [(torch.nn.Transformer(8, 2, 1, 1, 16), nn.Transformer(8, 2, 1, 1, 16))]
    t, n = pairs[0]
    cases = [
        (lambda L, m: m(L.randn(5, 3, 8), L.randn(4, 2, 8))),
        (lambda L, m: m(L.randn(5, 3, 6), L.randn(4, 3, 6))),
    ]
    for f in cases:
        with pytest.raises(RuntimeError) as te:
            f(torch, t)
        with pytest.raises(RuntimeError, match=str(te.value)):
            f(ndgrad, n)
    for ctor in (lambda M: M.MultiheadAttention(5, 2), lambda M: M.MultiheadAttention(0, 2),
                 lambda M: M.TransformerEncoderLayer(8, 2, activation="tanh")):
        with pytest.raises(Exception) as te:
            ctor(torch.nn)
        with pytest.raises(type(te.value)):
            ctor(nn)
    tm, nm = torch.nn.MultiheadAttention(4, 2), nn.MultiheadAttention(4, 2)
    bad = [
        (lambda L, m: m(L.randn(3, 2, 4), L.randn(5, 2, 4), L.randn(5, 2, 4),
                        attn_mask=L.zeros(3, 4))),
        (lambda L, m: m(L.randn(3, 2, 4), L.randn(5, 2, 4), L.randn(5, 2, 4),
                        key_padding_mask=L.zeros(2, 4))),
        (lambda L, m: m(L.randn(3, 2, 4), L.randn(5, 4), L.randn(5, 4))),
        (lambda L, m: m(L.randn(3, 2, 4), L.randn(5, 2, 4), L.randn(5, 2, 4),
                        attn_mask=L.zeros(3, 5, dtype=L.int64))),
    ]
    for f in bad:
        with pytest.raises(Exception) as te:
            f(torch, tm)
        with pytest.raises(type(te.value)) as ne:
            f(ndgrad, nm)
        assert str(te.value)[:25].replace("torch.", "ndgrad.") in str(ne.value)
    # separate projections (kdim/vdim) with keys/values of other widths: torch's shape asserts
    # (found by tests/torch_moduledb.py's MultiheadAttention variants)
    tm, nm = torch.nn.MultiheadAttention(4, 2, kdim=2, vdim=5), \
        nn.MultiheadAttention(4, 2, kdim=2, vdim=5)
    for kd, vd in ((3, 5), (2, 3)):
        f = (lambda L, m, kd=kd, vd=vd: m(L.randn(3, 2, 4), L.randn(5, 2, kd),
                                          L.randn(5, 2, vd)))
        with pytest.raises(AssertionError) as te:
            f(torch, tm)
        with pytest.raises(AssertionError) as ne:
            f(ndgrad, nm)
        assert str(ne.value) == str(te.value).replace("torch.", "ndgrad.")


# ---------------------------------------------------------------------------- training
def test_transformer_encoder_training_trajectory():
    """A small TransformerEncoder (2 layers) with a linear head, 20 steps of plain gradient
    descent from torch's weights on the same data: the same loss at every step."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2).double()
        nl = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2).double()
    th, nh = torch.nn.Linear(8, 1).double(), nn.Linear(8, 1).double()
    copy_state(tl, nl)
    copy_state(th, nh)
    x, y = rng.standard_normal((6, 3, 8)), rng.standard_normal((6, 3, 1))
    mask = torch.nn.Transformer.generate_square_subsequent_mask(6, dtype=D)
    nmask = ndgrad.tensor(mask.numpy())
    tparams = list(tl.parameters()) + list(th.parameters())
    nparams = list(nl.parameters()) + list(nh.parameters())
    for _ in range(20):
        tloss = ((th(tl(torch.tensor(x), mask=mask)) - torch.tensor(y)) ** 2).mean()
        nloss = ((nh(nl(ndgrad.tensor(x), mask=nmask)) - ndgrad.tensor(y)) ** 2).mean()
        np.testing.assert_allclose(nloss.item(), tloss.item(), rtol=1e-9)
        for p in tparams:
            p.grad = None
        for p in nparams:
            p.grad = None
        tloss.backward()
        nloss.backward()
        with torch.no_grad():
            for p in tparams:
                p -= 0.05 * p.grad
        with ndgrad.no_grad():
            for p in nparams:
                p -= 0.05 * p.grad


def test_attention_under_vmap_of_grad_gives_each_row_its_own_saved_values():
    # the attention op fills a ``saved`` list for its backward: a batching rule that ran it
    # per row with one shared list gave every row the last row's values (gradients off by ~15)
    F = ndgrad.nn.functional
    ndgrad.manual_seed(0)
    q = ndgrad.randn(3, 2, 4, 5)

    def f(x):
        return F.scaled_dot_product_attention(x, x, x).pow(2).sum()

    got = ndgrad.func.vmap(ndgrad.func.grad(f))(q)
    want = ndgrad.stack([ndgrad.func.grad(f)(q[i]) for i in range(3)])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    mha = ndgrad.nn.MultiheadAttention(4, 2, batch_first=True)
    x = ndgrad.randn(3, 2, 3, 4)

    def g(v):
        return mha(v, v, v)[0].pow(2).sum()

    got = ndgrad.func.vmap(ndgrad.func.grad(g))(x)
    want = ndgrad.stack([ndgrad.func.grad(g)(x[i]) for i in range(3)])
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"attn_mask": "bool"},
                                {"attn_mask": "float"}])
def test_low_precision_sdpa_and_mha_weights_match_torchs_rounding(dtype, kw):
    # Note [Low-precision flash attention] / [Low-precision attention weights]: bit-identical
    # outputs for keys in one block of torch's flash kernel and for the explicit weights path
    td, nd = getattr(torch, dtype), getattr(ndgrad, dtype)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 6, 8, generator=g).to(td) for _ in range(3))
    kw = dict(kw)
    nkw = dict(kw)
    if kw.get("attn_mask") == "bool":
        kw["attn_mask"] = ~torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)
        nkw["attn_mask"] = ndgrad.tensor(kw["attn_mask"].numpy())
    elif kw.get("attn_mask") == "float":
        kw["attn_mask"] = torch.randn(6, 6, generator=g).to(td)
        nkw["attn_mask"] = ndgrad.tensor(kw["attn_mask"].float().numpy()).to(nd)
    want = TF.scaled_dot_product_attention(q, k, v, **kw)
    got = ndgrad.nn.functional.scaled_dot_product_attention(
        *(ndgrad.tensor(t.float().numpy()).to(nd) for t in (q, k, v)), **nkw)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).to(td)
    nmha = ndgrad.nn.MultiheadAttention(8, 2, batch_first=True).to(nd)
    nmha.load_state_dict({name: ndgrad.tensor(t.float().numpy()).to(nd)
                          for name, t in mha.state_dict().items()})
    x = q[0]
    nx = ndgrad.tensor(x.float().numpy()).to(nd)
    mask = torch.tensor([[False] * 5 + [True], [False] * 6])
    o, w = mha(x, x, x, key_padding_mask=mask)
    no, nw = nmha(nx, nx, nx, key_padding_mask=ndgrad.tensor(mask.numpy()))
    np.testing.assert_array_equal(no.detach().float().numpy(), o.detach().float().numpy())
    np.testing.assert_array_equal(nw.detach().float().numpy(), w.detach().float().numpy())


@pytest.mark.parametrize("case", ["right_padded", "left_padded", "training", "needs_grad",
                                  "with_mask", "fastpath_off", "no_nested", "final_norm"])
def test_encoder_inference_zeroes_padded_positions_as_torch(case):
    # Note [Encoder padding in inference]: torch's nested-tensor path returns zeros at the
    # padded positions, only under its conditions
    def run(lib):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            enc = lib.nn.TransformerEncoder(
                layer, 2, norm=lib.nn.LayerNorm(8) if case == "final_norm" else None,
                enable_nested_tensor=case != "no_nested")
        src = lib.tensor(np.linspace(-1, 1, 80).reshape(2, 5, 8), dtype=lib.float32)
        pad = [[False] * 5, [False] * 3 + [True] * 2]
        if case == "left_padded":
            pad[1] = [True] * 2 + [False] * 3
        pad = lib.tensor(pad)
        if case != "training":
            enc.eval()
        kw = {"mask": lib.zeros(5, 5)} if case == "with_mask" else {}
        lib.backends.mha.set_fastpath_enabled(case != "fastpath_off")
        try:
            if case in ("needs_grad", "training"):
                out = enc(src, src_key_padding_mask=pad, **kw)
            else:
                with lib.no_grad():
                    out = enc(src, src_key_padding_mask=pad, **kw)
        finally:
            lib.backends.mha.set_fastpath_enabled(True)
        return out.detach().numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = run(torch)
    np.testing.assert_allclose(run(ndgrad), theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backends", ["MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "",
                                      "MATH,FLASH_ATTENTION", "CUDNN_ATTENTION,MATH"])
def test_sdpa_kernel_restricts_backends_as_torch(backends):
    """``nn.attention.sdpa_kernel``: the calls torch's CPU math and flash kernels take, and
    torch's errors when the allowed backends take none."""
    import torch as T
    out = []
    for m in (T, ndgrad):
        from importlib import import_module
        att = import_module(m.__name__ + ".nn.attention")
        chosen = [getattr(att.SDPBackend, b) for b in backends.split(",") if b]
        m.manual_seed(0)
        q = m.randn(1, 2, 4, 8, dtype=m.float64)
        mask = m.ones(4, 4, dtype=m.bool).tril()
        calls = [dict(), dict(attn_mask=mask), dict(attn_mask=mask, is_causal=True),
                 dict(is_causal=True), "3d"]
        res = []
        with att.sdpa_kernel(chosen):
            for kw in calls:
                try:
                    if kw == "3d":
                        r = m.nn.functional.scaled_dot_product_attention(q[0], q[0], q[0])
                    else:
                        r = m.nn.functional.scaled_dot_product_attention(q, q, q, **kw)
                    res.append(round(float(r.sum()), 9))
                except RuntimeError as e:
                    res.append(str(e))
        res.append(m.nn.functional.scaled_dot_product_attention(
            q, q, q, attn_mask=mask, is_causal=True).shape[-1])   # restored afterwards
        out.append(res)
    assert out[0] == out[1]


def test_backends_cuda_sdp_flags_as_torch():
    """``backends.cuda.enable_*_sdp`` and the deprecated ``sdp_kernel``: the same global flags
    ``nn.attention.sdpa_kernel`` sets (each reports the other's choice), torch's errors."""
    import torch as T
    out = []
    for m in (T, ndgrad):
        cuda, F = m.backends.cuda, m.nn.functional
        q = m.ones(1, 1, 3, 4, dtype=m.float64)
        mask = m.ones(3, 3, dtype=m.bool).tril()
        flags = lambda c=cuda: (c.math_sdp_enabled(), c.flash_sdp_enabled(),  # noqa: E731
                                c.mem_efficient_sdp_enabled(), c.cudnn_sdp_enabled())
        res = [flags(), cuda.is_flash_attention_available()]
        try:
            cuda.enable_math_sdp(False)
            res.append((flags(), float(F.scaled_dot_product_attention(q, q, q).sum())))
            res.append(F.scaled_dot_product_attention(q, q, q, attn_mask=mask,
                                                      is_causal=True).shape[-1])
            cuda.enable_flash_sdp(False)
            with pytest.raises(RuntimeError) as e:
                F.scaled_dot_product_attention(q, q, q)
            res.append(str(e.value))
            att = __import__(m.__name__ + ".nn.attention", fromlist=["x"])
            with att.sdpa_kernel(att.SDPBackend.MATH) as ctx:
                res.append((ctx, flags()))
            res.append(flags())
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False) as ctx:
                    res.append((ctx, flags()))
                    with pytest.raises(RuntimeError) as e:
                        F.scaled_dot_product_attention(q, q, q, attn_mask=mask, is_causal=True)
                    res.append(str(e.value)[-40:])
            res.append(([x.category for x in w], "is deprecated" in str(w[0].message), flags()))
            for f in (cuda.enable_flash_sdp, cuda.enable_cudnn_sdp):
                with pytest.raises(RuntimeError) as e:
                    f(1)
                res.append(str(e.value))
        finally:
            for f in (cuda.enable_math_sdp, cuda.enable_flash_sdp, cuda.enable_mem_efficient_sdp,
                      cuda.enable_cudnn_sdp):
                f(True)
        res.append(flags())
        out.append(res)
    assert out[0] == out[1]


@pytest.mark.parametrize("variant", ["upper_left", "lower_right"])
@pytest.mark.parametrize("sizes", [(3, 3), (2, 5), (1, 4)])
def test_causal_bias_as_torch(variant, sizes):
    """``nn.attention.bias.causal_upper_left/causal_lower_right`` as ``attn_mask``: values and
    gradients as torch's, the materialised mask, the repr and the shape torch gives it."""
    import torch as T
    L, S = sizes
    res = []
    for m in (T, ndgrad):
        bias_mod = __import__(m.__name__ + ".nn.attention.bias", fromlist=["x"])
        bias = getattr(bias_mod, f"causal_{variant}")(L, S)
        m.manual_seed(0)
        q = m.randn(2, 2, L, 8, dtype=m.float64, requires_grad=True)
        kv = m.randn(2, 1, S, 8, dtype=m.float64, requires_grad=True)
        out = m.nn.functional.scaled_dot_product_attention(q, kv, kv, attn_mask=bias,
                                                           enable_gqa=True)
        (out * out).sum().backward()
        res.append((out.detach().numpy(), q.grad.numpy(), kv.grad.numpy(),
                    bias._materialize().tolist(), repr(bias), tuple(bias.shape),
                    int(bias.variant), isinstance(bias, m.Tensor), type(bias).__name__))
    for a, b in zip(res[0][:3], res[1][:3]):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)
    assert res[0][3:] == res[1][3:]


def test_causal_bias_errors_as_torch():
    import torch as T
    out = []
    for m in (T, ndgrad):
        bias_mod = __import__(m.__name__ + ".nn.attention.bias", fromlist=["x"])
        res = []
        q = m.ones(1, 1, 2, 4)
        for call in (lambda b, m, q: b.causal_lower_right(2),
                     lambda b, m, q: b.causal_upper_left(1, 2, 3),
                     lambda b, m, q: b.CausalBias(1, 2, 3),
                     lambda b, m, q: m.nn.functional.scaled_dot_product_attention(
                         q, q, q, attn_mask=b.causal_upper_left(2, 2), is_causal=True)):
            try:
                call(bias_mod, m, q)
                res.append("ok")
            except (AssertionError, ValueError) as e:
                res.append((type(e).__name__, str(e)))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            bias_mod.causal_lower_right(4, 2)
        res.append([(x.category.__name__, str(x.message)) for x in w])
        res.append((bias_mod.__all__, [(v.name, int(v)) for v in bias_mod.CausalVariant]))
        out.append(res)
    assert out[0] == out[1]


def test_sdpa_kernel_refuses_what_is_no_backend():
    from ndgrad.nn.attention import SDPBackend, sdpa_kernel
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with sdpa_kernel("math"):
            pass
    assert str(SDPBackend.MATH) == "SDPBackend.MATH" and int(SDPBackend.FLASH_ATTENTION) == 1
