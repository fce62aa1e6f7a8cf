"""ndgrad.fft and ndgrad.special against PyTorch where op_db cannot reach: ops differentiable in
one argument only and without forward AD (igamma, igammac, zeta), complex inputs of the
transforms, dtype rules and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad

RNG = np.random.default_rng(8)
X = RNG.uniform(0.5, 2.0, 5)
A = RNG.uniform(0.5, 2.0, 5)


_V = np.random.default_rng(1).standard_normal(5)
ONE_SIDED = {
    "gammainc": lambda m, a, x: m.special.gammainc(a, x),
    "gammaincc": lambda m, a, x: m.special.gammaincc(a, x),
    "igamma_method": lambda m, a, x: a.igamma(x),
    "zeta": lambda m, a, x: m.special.zeta(a + 1, x),
    "zeta_scalar_self": lambda m, a, x: m.special.zeta(2.5, x),
}


@pytest.mark.parametrize("name", sorted(ONE_SIDED))
def test_one_sided_gradients_match_torch(name):
    fn = ONE_SIDED[name]
    out = {}
    for m in (torch, ndgrad):
        x = m.tensor(X, dtype=m.float64, requires_grad=True)
        y = fn(m, m.tensor(A, dtype=m.float64), x)
        (g,) = m.autograd.grad(y, x, m.tensor(_V, dtype=m.float64), create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        out[m] = (type(y.grad_fn).__name__, y.detach().numpy(), g.detach().numpy(), gg.numpy())
    assert out[torch][0] == out[ndgrad][0]
    for t, n in zip(out[torch][1:], out[ndgrad][1:]):
        np.testing.assert_allclose(n, t, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda m, x: m.special.gammainc(x, x.detach()),
    lambda m, x: m.special.zeta(x, 2.0),
    lambda m, x: m.special.zeta(x, x.detach()),
])
def test_refused_derivatives(call):
    for m in (torch, ndgrad):
        x = m.tensor(X, dtype=m.float64, requires_grad=True)
        with pytest.raises(NotImplementedError, match="the derivative for"):
            call(m, x).sum().backward()


@pytest.mark.parametrize("call", [
    lambda m, x: m.special.gammainc(x.detach(), x),
    lambda m, x: m.special.zeta(3.0, x),
])
def test_no_forward_ad(call):
    for m in (torch, ndgrad):
        fw = m.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(m.tensor(X, dtype=m.float64), m.ones(5, dtype=m.float64))
            with pytest.raises(NotImplementedError, match="Trying to use forward AD"):
                call(m, x)


TRANSFORMS = ["fft", "ifft", "irfft", "hfft", "fft2", "ifft2", "irfft2", "hfft2", "fftn",
              "ifftn", "irfftn", "hfftn"]


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_complex_input_gradients_match_torch(name, norm):
    z = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    out = {}
    for m in (torch, ndgrad):
        x = m.tensor(z, dtype=m.complex128, requires_grad=True)
        y = getattr(m.fft, name)(x, norm=norm)
        v = np.random.default_rng(2).standard_normal(tuple(y.shape))
        (g,) = m.autograd.grad(y, x, m.tensor(v, dtype=y.dtype))
        out[m] = (str(y.dtype).split(".")[-1], y.detach().resolve_conj().numpy()
                  if m is torch else y.detach().numpy(), g.resolve_conj().numpy()
                  if m is torch else g.numpy())
    assert out[torch][0] == out[ndgrad][0]
    np.testing.assert_allclose(out[ndgrad][1], out[torch][1], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out[ndgrad][2], out[torch][2], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", ["int64", "bool", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "ihfftn"])
def test_transform_dtypes_match_torch(name, dtype):
    res = []
    for m in (torch, ndgrad):
        try:
            res.append(str(getattr(m.fft, name)(m.ones(4, 4, dtype=getattr(m, dtype))).dtype)
                       .split(".")[-1])
        except RuntimeError as e:
            res.append(str(e))
    assert res[0] == res[1]


@pytest.mark.parametrize("call", [
    lambda m: m.fft.fft(m.ones(4), norm="bad"),
    lambda m: m.fft.fft(m.ones(4), n=0),
    lambda m: m.fft.fftn(m.ones(4, 4), dim=(0, 0)),
    lambda m: m.fft.fftn(m.ones(4, 4), s=(2, 2), dim=(0,)),
    lambda m: m.fft.rfft(m.ones(4, dtype=m.complex64)),
    lambda m: m.fft.rfftn(m.ones(4), dim=()),
    lambda m: m.fft.fft(m.ones(4), dim=2),
    lambda m: m.fft.fft(m.tensor(1.0)),
    lambda m: m.fft.fftfreq(4, dtype=m.int64),
    lambda m: m.polygamma(-1, m.ones(2)),
    lambda m: m.mvlgamma(m.ones(2), 0),
    lambda m: m.special.i0(m.ones(2, dtype=m.complex64)),
    lambda m: m.special.ndtri(m.ones(2, dtype=m.float16)),
    lambda m: m.special.gammainc(m.ones(2, dtype=m.int64), m.ones(2, dtype=m.int64)),
])
def test_errors_match_torch(call):
    errs = []
    for m in (torch, ndgrad):
        with pytest.raises(Exception) as info:
            call(m)
        errs.append((type(info.value), str(info.value).split("\n")[0]))
    assert errs[0] == errs[1]


def test_frequencies_match_torch():
    for n, d in ((5, 1.0), (6, 0.5), (1, 2.0)):
        np.testing.assert_allclose(ndgrad.fft.fftfreq(n, d).numpy(), torch.fft.fftfreq(n, d))
        np.testing.assert_allclose(ndgrad.fft.rfftfreq(n, d, dtype=ndgrad.float64).numpy(),
                                   torch.fft.rfftfreq(n, d, dtype=torch.float64))


SPECIAL_VALUES = {
    "i0": lambda m, x: m.special.i0(x),
    "i0e": lambda m, x: m.special.i0e(x),
    "i1": lambda m, x: m.special.i1(x),
    "i1e": lambda m, x: m.special.i1e(x),
    "ndtr": lambda m, x: m.special.ndtr(x),
    "ndtri": lambda m, x: m.special.ndtri(x),
    "log_ndtr": lambda m, x: m.special.log_ndtr(x),
    "erfcx": lambda m, x: m.special.erfcx(x),
    "entr": lambda m, x: m.special.entr(x),
    "zeta_q": lambda m, x: m.special.zeta(3.0, x),
    "zeta_x": lambda m, x: m.special.zeta(x.detach(), 1.5),
    "mvlgamma": lambda m, x: m.mvlgamma(x, 2),
    "bessel_y1": lambda m, x: m.special.bessel_y1(x),
    "modified_bessel_k1": lambda m, x: m.special.scaled_modified_bessel_k1(x),
    "airy_ai": lambda m, x: m.special.airy_ai(x),
    "spherical_bessel_j0": lambda m, x: m.special.spherical_bessel_j0(x),
    "laguerre": lambda m, x: m.special.laguerre_polynomial_l(x, 3.0),
}


@pytest.mark.parametrize("name", sorted(SPECIAL_VALUES))
def test_special_values_match_torch_without_warnings(name):
    import warnings
    values = [0.0, -1.0, 2.0, float("inf"), -float("inf"), float("nan"), 1e30, 0.5]
    res = []
    for m in (torch, ndgrad):
        x = m.tensor(values, dtype=m.float64, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", append=True)
            y = SPECIAL_VALUES[name](m, x)
            g = m.autograd.grad(y.sum(), x)[0].numpy() if y.requires_grad else None
        if m is ndgrad:
            assert [str(w.message) for w in caught] == []
        res.append((y.detach().numpy(), g))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-6)
    assert (res[0][1] is None) == (res[1][1] is None)
    if res[0][1] is not None:
        np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-6)


WINDOWS = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {"tau": 2.5}),
           ("gaussian", {"std": 1.7}), ("general_cosine", {"a": [0.3, 0.5, 0.2]}),
           ("general_hamming", {"alpha": 0.6}), ("hamming", {}), ("hann", {}),
           ("kaiser", {"beta": 5.0}), ("nuttall", {})]


@pytest.mark.parametrize("name,kw", WINDOWS, ids=[w[0] for w in WINDOWS])
def test_windows_match_torch(name, kw):
    for M in (0, 1, 2, 7, 8):
        for sym in (True, False):
            want = getattr(torch.signal.windows, name)(M, sym=sym, dtype=torch.float64, **kw)
            got = getattr(ndgrad.signal.windows, name)(M, sym=sym, dtype=ndgrad.float64, **kw)
            np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)
    assert getattr(ndgrad.signal.windows, name)(4, **kw).dtype == ndgrad.float32


_SIG = np.arange(32.0)
STFT_ERRORS = {
    "stft_hop": lambda m: m.stft(m.tensor(_SIG), 8, hop_length=0, return_complex=True,
                                 window=m.ones(8, dtype=m.float64)),
    "stft_win_length": lambda m: m.stft(m.tensor(_SIG), 8, win_length=9, return_complex=True,
                                        normalized=True, onesided=False),
    "stft_window_size": lambda m: m.stft(m.tensor(_SIG, dtype=m.float32), 8,
                                         window=m.ones(3, dtype=m.float64), center=False,
                                         return_complex=True),
    "istft_win_length": lambda m: m.istft(_spec(m), 8, win_length=9),
    "istft_window_size": lambda m: m.istft(_spec(m), 8, window=m.ones(3)),
    "istft_onesided_bins": lambda m: m.istft(_spec(m), 6, window=m.ones(6)),
    "istft_twosided_bins": lambda m: m.istft(_spec(m), 8, onesided=False, window=m.ones(8)),
    "istft_overlap_add": lambda m: m.istft(_spec(m), 8, hop_length=4, window=m.hann_window(8),
                                           center=False, length=20),
    # integer signals are refused (after the centering pad), half precision at the transform,
    # a 3-d signal after its pad; istft's hop must not exceed the window; the type names
    # without a legacy torch.<Name>Tensor class read CPU<Name>Type
    "stft_int": lambda m: m.stft(m.arange(20), 8, return_complex=True),
    "stft_int_uncentered": lambda m: m.stft(m.arange(20), 64, center=False,
                                            return_complex=True),
    "stft_bool_constant_pad": lambda m: m.stft(m.ones(20, dtype=m.bool), 8, pad_mode="constant",
                                               return_complex=True),
    "stft_half": lambda m: m.stft(m.ones(20, dtype=m.float16), 8, return_complex=True),
    "stft_half_n_fft": lambda m: m.stft(m.ones(20, dtype=m.float16), 64, center=False,
                                        return_complex=True),
    "stft_3d": lambda m: m.stft(m.ones(2, 2, 20), 8, return_complex=True),
    "stft_3d_uncentered": lambda m: m.stft(m.ones(2, 2, 20), 8, center=False,
                                           return_complex=True),
    "stft_complex_bfloat16_names": lambda m: m.stft(m.ones(20, dtype=m.complex64), 64,
                                                    center=False, window=m.ones(
                                                        64, dtype=m.bfloat16)),
    "istft_hop": lambda m: m.istft(_spec(m), 8, hop_length=9),
}


def _spec(m):
    return m.stft(m.tensor(_SIG, dtype=m.float32), 8, return_complex=True, window=m.ones(8))


@pytest.mark.parametrize("name", sorted(STFT_ERRORS))
def test_stft_istft_error_messages_match_torch(name):
    # the whole message: PyTorch prefixes its call (types, sizes, flags) to every check
    out = []
    for m in (torch, ndgrad):
        with pytest.raises(RuntimeError) as e:
            STFT_ERRORS[name](m)
        out.append(str(e.value))
    assert out[1] == out[0]
