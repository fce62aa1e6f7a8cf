"""The state of ndgrad against torch's OpInfo database: for each entry,
the checks it fails and why (``KNOWN``), and the entries not shipped yet (``NOT_SHIPPED``).
tests/test_torch_opdb.py fails when this file is not the true state; rewrite it with
``python -m tests.torch_opdb --update-known`` (reasons already written are kept)."""

# ruff: noqa: E501
KNOWN = {
    'amax': {
        'errors': 'ndgrad has no out= arguments yet; this error input passes out=',
    },
    'amin': {
        'errors': 'ndgrad has no out= arguments yet; this error input passes out=',
    },
    'aminmax': {
        'errors': 'a 65-dim error input cannot be built as an ndarray (NumPy allows 64 dims)',
    },
    'arange': {
        'errors': 'ndgrad has no out= arguments yet; this error input passes out=',
    },
    'argsort': {
        'lowp': 'ties among float16 values: torch unstable sort orders them otherwise (unspecified)',
    },
    'as_strided': {
        'fwbatched': 'no batching rule for as_strided yet (its backward is a strided scatter)',
        'inplace': "in-place view ops (x.as_strided_) change a tensor's metadata in place: not implemented yet",
    },
    'as_strided/partial_views': {
        'fwbatched': 'no batching rule for as_strided yet (its backward is a strided scatter)',
        'inplace': "in-place view ops (x.as_strided_) change a tensor's metadata in place: not implemented yet",
    },
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
        'errors': 'ndgrad has no out= arguments yet; this error input passes out=',
    },
    'gather': {
        'errors': 'ndgrad has no out= arguments yet; this error input passes out=',
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
    'matrix_exp': {
        'lowp': "torch's float32 result is off by 0.05 at magnitude 9e4; ndgrad computes in float64 and rounds",
    },
    'nan_to_num': {
        'fwbatched': 'a vectorized Jacobian over an empty input (batch of size 0) is refused',
    },
    'sort': {
        'lowp': 'ties among float16 values: torch unstable sort orders them otherwise (unspecified)',
    },
    'special.bessel_j0': {
        'forward': "sample 0[0]: values differ (max abs err 1.89e-07): ndgrad uses scipy.special.j0 (exact to 1e-16 against mpmath); torch's own kernel is off by ~2e-7",
    },
    'special.bessel_y1': {
        'forward': "sample 0[0]: values differ (max abs err 3.21e-07): ndgrad uses scipy.special.y1 (exact to 1e-16 against mpmath); torch's own kernel is off by ~3e-7",
    },
    'squeeze': {
        'inplace': "in-place view ops (x.squeeze_()) change a tensor's metadata in place: not implemented yet",
    },
    'squeeze/multiple': {
        'inplace': "in-place view ops (x.squeeze_()) change a tensor's metadata in place: not implemented yet",
    },
    't': {
        'inplace': "in-place view ops (x.t_()) change a tensor's metadata in place: not implemented yet",
    },
    'topk': {
        'lowp': 'ties among bfloat16 values: which tied index comes first is unspecified',
    },
    'transpose': {
        'inplace': "in-place view ops (x.transpose_()) change a tensor's metadata in place: not implemented yet",
    },
    'unsqueeze': {
        'inplace': "in-place view ops (x.unsqueeze_()) change a tensor's metadata in place: not implemented yet",
    },
    'view_as_complex': {
        'lowp': 'float16 -> complex32, which NumPy does not have',
    },
}

NOT_SHIPPED = {
    'bernoulli': 'not yet implemented',
    'bincount': 'not yet implemented',
    'cauchy': 'not yet implemented',
    'cdist': 'not yet implemented',
    'empty_permuted': 'not yet implemented',
    'empty_strided': 'not yet implemented',
    'exponential': 'not yet implemented',
    'geometric': 'not yet implemented',
    'gradient': 'not yet implemented',
    'hash_tensor': 'not yet implemented',
    'histc': 'not yet implemented',
    'histogram': 'not yet implemented',
    'histogramdd': 'not yet implemented',
    'log_normal': 'not yet implemented',
    'logspace': 'not yet implemented',
    'logspace/tensor_overload': 'not yet implemented',
    'multinomial': 'not yet implemented',
    'new_empty_strided': 'not yet implemented',
    'normal': 'not yet implemented',
    'normal/in_place': 'not yet implemented',
    'normal/number_mean': 'not yet implemented',
    'resize_': 'not yet implemented',
    'resize_as_': 'not yet implemented',
    'scalar_tensor': 'not yet implemented',
    'tril_indices': 'not yet implemented',
    'triu_indices': 'not yet implemented',
    'uniform': 'not yet implemented',
    'unique': 'not yet implemented',
    'unique_consecutive': 'not yet implemented',
    'unravel_index': 'not yet implemented',
}
