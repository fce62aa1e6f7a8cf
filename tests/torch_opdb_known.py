"""The state of ndgrad against torch's OpInfo database: for each entry,
the checks it fails and why (``KNOWN``), and the entries not shipped yet (``NOT_SHIPPED``).
tests/test_torch_opdb.py fails when this file is not the true state; rewrite it with
``python -m tests.torch_opdb --update-known`` (reasons already written are kept)."""

# ruff: noqa: E501
KNOWN = {
    'as_strided_scatter': {
        'vjp': "torch's AsStridedScatterBackward0 is wrong here (its own gradcheck fails: an overwritten input gets gradient); ndgrad's passes gradcheck (tests/test_rearrange.py)",
        'gradgrad': 'follows from the vjp difference above',
        'batched': 'follows from the vjp difference above',
        'fwbatched': "torch's forward-mode Jacobian of as_strided_scatter differs from ndgrad's, which matches finite differences",
    },
    'cat': {
        'errors': "ndgrad names the bad element's type (NoneType); torch's message says 'got None'",
    },
    'complex': {
        'lowp': 'float16 -> complex32, which NumPy does not have',
    },
    'linalg.eig': {
        'forward': "eigenvectors are unique up to sign/phase; which one LAPACK returns differs between torch's MKL and NumPy's OpenBLAS (equal after the entry's output_process_fn_grad, which vjp/jvp/gradgrad use)",
        'lowp': "eigenvectors are unique up to sign/phase; which one LAPACK returns differs between torch's MKL and NumPy's OpenBLAS (equal after the entry's output_process_fn_grad, which vjp/jvp/gradgrad use)",
    },
    'linalg.eigh': {
        'forward': "eigenvectors are unique up to sign/phase; which one LAPACK returns differs between torch's MKL and NumPy's OpenBLAS (equal after the entry's output_process_fn_grad, which vjp/jvp/gradgrad use)",
    },
    'linalg.norm/subgradients_at_zero': {
        'gradgrad': 'second derivative of the 2-norm at 0: torch gives NaN, ndgrad a finite subgradient',
    },
    'linspace': {
        'errors': 'ndgrad says which argument is wrong (steps must be int, not float); torch prints its overload list',
    },
    'linspace/tensor_overload': {
        'errors': 'ndgrad says which argument is wrong (steps must be int, not float); torch prints its overload list',
    },
    'logcumsumexp': {
        'jvp': 'inputs up to 1e4: torch tangent off by ~1e-6; ndgrad agrees with 40-digit mpmath to 1e-12',
        'fwbatched': 'inputs up to 1e4: torch tangent off by ~1e-6; ndgrad agrees with 40-digit mpmath to 1e-12',
    },
    'logspace': {
        'errors': 'ndgrad says which argument is wrong (steps must be int, not float); torch prints its overload list',
    },
    'logspace/tensor_overload': {
        'errors': 'ndgrad says which argument is wrong (steps must be int, not float); torch prints its overload list',
    },
    'matrix_exp': {
        'lowp': "torch's float32 result is off by 0.05 at magnitude 9e4; ndgrad computes in float64 and rounds",
    },
    'nan_to_num': {
        'fwbatched': 'a vectorized Jacobian over an empty input (batch of size 0) is refused',
    },
    'nn.functional.linear_cross_entropy/chunked': {
        'gradgrad': "torch's chunked path gives no second derivative for the input; ndgrad always computes the reference path, which is twice differentiable",
    },
    'nn.functional.linear_cross_entropy/chunked_none': {
        'gradgrad': "torch refuses double backward on its chunked path (an internal out= call); ndgrad's reference path is twice differentiable",
    },
    'special.bessel_j0': {
        'forward': "sample 0[0]: values differ (max abs err 1.89e-07): ndgrad uses scipy.special.j0 (exact to 1e-16 against mpmath); torch's own kernel is off by ~2e-7",
    },
    'special.bessel_y1': {
        'forward': "sample 0[0]: values differ (max abs err 3.21e-07): ndgrad uses scipy.special.y1 (exact to 1e-16 against mpmath); torch's own kernel is off by ~3e-7",
    },
    'view_as_complex': {
        'lowp': 'float16 -> complex32, which NumPy does not have',
    },
}

NOT_SHIPPED = {
    'hash_tensor': 'returns torch.uint64 (an xor of the 64-bit patterns), a dtype ndgrad does not have',
}
