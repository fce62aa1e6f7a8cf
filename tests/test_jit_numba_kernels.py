"""The numba tier's large-array kernels (ndgrad/jit/numba_kernels.py): relu's backward in one
pass gives the NumPy tier's bits (NaN results pass the gradient, -0.0 and negatives drop it,
a dropped NaN or inf gradient becomes +0.0) in either layout, declines what it does not cover,
and the numba tier's generated code uses it only for large values."""

import numpy as np
import pytest

import ndgrad
from ndgrad.jit import numba_backend, numba_kernels
from ndgrad.ops import pointwise as _pw

if not numba_backend.available():   # the test extra installs numba: this never skips in CI
    pytest.fail("numba is missing: pip install -e '.[test]'")

SHAPE = (256, 320)     # 81920 elements, above MIN_NUMEL


def _special(rng, dtype):
    r = np.maximum(rng.standard_normal(SHAPE), 0).astype(dtype)
    g = rng.standard_normal(SHAPE).astype(dtype)
    flat_r, flat_g = r.reshape(-1), g.reshape(-1)
    flat_r[:6] = [np.nan, -np.nan, -0.0, 0.0, -1.5, np.inf]
    flat_g[:6] = [np.inf, 2.0, np.nan, -np.inf, np.nan, 3.0]
    flat_g[6:9] = [np.nan, -0.0, np.inf]      # with r > 0 here or dropped
    return g, r


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_relu_backward_into_bits(dtype, layout):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    g, r = _special(rng, dtype)
    if layout == "F":
        g, r = np.asfortranarray(g), np.asfortranarray(r)
        assert g.flags.f_contiguous and not g.flags.c_contiguous
    want = _pw._threshold_backward_fwd(g.copy(), r)       # the NumPy tier's bits
    out = g.copy(order="K")
    assert numba_kernels.relu_backward_into(out, r)
    ix = f"i{out.itemsize}"
    np.testing.assert_array_equal(np.ascontiguousarray(out).view(ix),
                                  np.ascontiguousarray(want).view(ix))
    # PyTorch's rule: g where not r <= 0, else 0
    ref = torch.ops.aten.threshold_backward(torch.from_numpy(np.ascontiguousarray(g)),
                                            torch.from_numpy(np.ascontiguousarray(r)), 0)
    np.testing.assert_array_equal(np.ascontiguousarray(out), ref.numpy())


def test_relu_backward_into_declines():
    rng = np.random.default_rng(1)
    g, r = _special(rng, np.float32)
    small_g, small_r = g[:8].copy(), r[:8].copy()
    for args in [(small_g, small_r),                              # too small
                 (g, np.asfortranarray(r)),                       # layouts differ
                 (g, r.astype(np.float64)),                       # dtypes differ
                 (g[:, ::2], r[:, ::2]),                           # not contiguous
                 (g.astype(np.float16), r.astype(np.float16))]:   # not float32/float64
        before = args[0].copy()
        assert not numba_kernels.relu_backward_into(*args)
        np.testing.assert_array_equal(args[0], before)


def _mlp(x, w1, w2):
    h = ndgrad.relu(x @ w1)
    loss = (h @ w2).square().mean()
    return loss.detach(), tuple(ndgrad.autograd.grad(loss, [w1, w2]))


@pytest.mark.parametrize("rows", [4, 256])
def test_generated_code_uses_the_kernel_for_large_values_only(rows):
    rng = np.random.default_rng(2)
    x = ndgrad.tensor(rng.standard_normal((rows, 64)).astype(np.float32))
    w1 = ndgrad.tensor(rng.standard_normal((64, 512)).astype(np.float32), requires_grad=True)
    w2 = ndgrad.tensor(rng.standard_normal((512, 8)).astype(np.float32), requires_grad=True)
    fnb, fnp = ndgrad.compile(_mlp, backend="numba"), ndgrad.compile(_mlp, backend="numpy")
    out_nb, out_np = fnb(x, w1, w2), fnp(x, w1, w2)
    large = rows * 512 >= numba_kernels.MIN_NUMEL
    assert ("threshold_backward_into_nb" in fnb.code) == large
    assert "threshold_backward_into_nb" not in fnp.code
    for a, b in zip([out_nb[0], *out_nb[1]], [out_np[0], *out_np[1]]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    e1, e2 = ndgrad.autograd.grad((ndgrad.relu(x @ w1) @ w2).square().mean(), [w1, w2])
    np.testing.assert_allclose(out_nb[1][0].numpy(), e1.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out_nb[1][1].numpy(), e2.numpy(), rtol=1e-4, atol=1e-6)
