"""Bugs found reviewing session 24's merged diff, fixed (each asserts torch's behaviour or an
invariant): tanh's reused ``1 - y*y`` aliasing a gradient the user can write, float16/bfloat16
``add``/``sub`` with ``alpha``, negative sizes in ``normal``/``sparse_coo_tensor``/``zeros``,
``linalg.lstsq`` with non-finite input, a custom Function's CSR gradient for a strided input."""

import warnings

import numpy as np
import torch

import ndgrad


def _tanh_grad_after_mutating_inner_gradient(lib):
    h = lib.tensor(np.linspace(-1.0, 1.0, 6), requires_grad=True)
    y = lib.tanh(h)
    (gr,) = lib.autograd.grad(y.sum(), h, create_graph=True)
    gr.detach().numpy()[:] = 0.0      # memory the user can see, written without autograd
    y.sum().backward()
    return h.grad.detach().numpy()


def test_tanh_reuse_sees_inner_gradient_written_through_numpy():
    # Note [Reusing tanh's 1 - y*y]: the cached ``1 - y*y`` is the inner gradient's own
    # array, handed to the user; torch recomputes from the saved result
    got = _tanh_grad_after_mutating_inner_gradient(ndgrad)
    want = _tanh_grad_after_mutating_inner_gradient(torch)
    np.testing.assert_allclose(got, want)


def test_tanh_reuse_sees_inner_gradient_written_through_data():
    h = ndgrad.tensor(np.linspace(-1.0, 1.0, 6), requires_grad=True)
    y = ndgrad.tanh(h)
    (gr,) = ndgrad.autograd.grad(y.sum(), h, create_graph=True)
    gr.data.zero_()
    y.sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), 1 - np.tanh(np.linspace(-1.0, 1.0, 6)) ** 2)


def test_bfloat16_add_with_alpha_keeps_bfloat16():
    for lib in (ndgrad, torch):
        b = lib.ones(2, dtype=lib.bfloat16)
        r = b.add(b, alpha=0.1967773426534207)
        assert str(r.dtype).split(".")[-1] == "bfloat16", (lib.__name__, r.dtype)


def test_half_add_and_sub_with_alpha_round_as_torch():
    """PyTorch rounds ``alpha`` to the dtype and computes ``a + alpha * b`` in float32."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 20000)).astype(np.float32)
    for name in ("float16", "bfloat16"):
        ta, tb = (torch.tensor(v).to(getattr(torch, name)) for v in (a, b))
        na, nb = (ndgrad.tensor(v).to(getattr(ndgrad, name)) for v in (a, b))
        for alpha in (0.3, 2.7, -1.1):
            for op in ("add", "sub"):
                want = getattr(ta, op)(tb, alpha=alpha).float().numpy()
                got = getattr(na, op)(nb, alpha=alpha).float().numpy()
                assert (got == want).mean() > 0.999, (name, alpha, op)


def _error(f):
    try:
        f()
    except Exception as e:      # noqa: BLE001 - the type is what is compared
        return type(e).__name__, str(e)
    return None


def test_normal_with_negative_size_raises_torch_error():
    # NumPy's ValueError reached the user
    for lib in (torch, ndgrad):
        err = _error(lambda lib=lib: lib.normal(0.0, 1.0, size=(-1,)))
        assert err is not None and err[0] == "RuntimeError", (lib.__name__, err)
        assert "negative dimension -1" in err[1], (lib.__name__, err)


def test_sparse_coo_tensor_with_negative_size_raises():
    # ndgrad made a tensor of Size([-1])
    for lib in (torch, ndgrad):
        err = _error(lambda lib=lib: lib.sparse_coo_tensor(lib.zeros(1, 0, dtype=lib.int64),
                                                    lib.zeros(0), (-1,)))
        assert err is not None and err[0] == "RuntimeError", (lib.__name__, err)


def test_zeros_with_negative_size_words_torch_message():
    for lib in (torch, ndgrad):
        err = _error(lambda lib=lib: lib.zeros(2, -1))
        assert err == ("RuntimeError", "zeros: Dimension size must be non-negative."), err


def test_lstsq_with_inf_does_not_leak_scipy_valueerror():
    # SciPy's check_finite ValueError reached the user; torch returns a result
    a = np.array([[1.0, np.inf], [0.5, 2.0]])
    r = torch.linalg.lstsq(torch.tensor(a), torch.ones(2, 1, dtype=torch.float64)).solution
    assert r.shape == (2, 1)
    b = ndgrad.ones(2, 1, dtype=ndgrad.float64)
    err = _error(lambda: ndgrad.linalg.lstsq(ndgrad.tensor(a), b))
    assert err is None or err[0] == "RuntimeError", err


def test_half_arithmetic_with_python_numbers_is_bitwise_torchs():
    """Note [Half times a Python number]: mul/div in float32 with the number in float32;
    add/sub/rsub with the number rounded to the dtype through float32."""
    a = np.random.default_rng(1).standard_normal(20000).astype(np.float32)
    forms = [lambda x, s: x * s, lambda x, s: s * x, lambda x, s: x / s,
             lambda x, s: x.clone().mul_(s), lambda x, s: x.clone().div_(s),
             lambda x, s: x + s, lambda x, s: x - s, lambda x, s: s - x,
             lambda x, s: x.clone().add_(s)]
    for name in ("float16", "bfloat16"):
        tx = torch.tensor(a).to(getattr(torch, name))
        nx = ndgrad.tensor(a).to(getattr(ndgrad, name))
        for s in (0.1, 0.7, 1.1967773426534207, 3.3):
            for k, f in enumerate(forms):
                want, got = f(tx, s).float().numpy(), f(nx, s).float().numpy()
                assert np.array_equal(got, want), (name, s, k)


def _csr_gradient_for_dense_input(lib):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return lib.eye(3).to_sparse_csr()

    x = lib.ones(3, 3, requires_grad=True)
    try:
        F.apply(x).sum().backward()
    except RuntimeError as e:
        return str(e)
    return None


def test_csr_gradient_for_strided_input_is_refused_like_torch():
    with warnings.catch_warnings():     # torch's CSR beta warning
        warnings.simplefilter("ignore")
        want = _csr_gradient_for_dense_input(torch)
    assert want is not None and "expected layout Strided" in want
    got = _csr_gradient_for_dense_input(ndgrad)
    assert got is not None and "expected layout Strided" in got
