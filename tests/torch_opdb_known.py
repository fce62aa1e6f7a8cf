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
    'nn.functional.cross_entropy': {
        'batched': 'sample 0 backward: ndgrad raises AxisError: axis 1 is out of bounds for array of dimension 0',
        'lowp': 'torch.bfloat16 sample 1: ndgrad raises RuntimeError: 0D or 1D target tensor expected, multi-target not supported',
    },
    'nn.functional.ctc_loss': {
        'gradgrad': 'sample 0 double backward: ndgrad returns where torch raises RuntimeError: derivative for aten::_ctc_loss_backward is not implemented',
    },
    'nn.functional.fractional_max_pool2d': {
        'forward': "sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
        'vjp': "sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
        'jvp': "sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
        'gradgrad': "sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
        'batched': "sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
        'lowp': "torch.float32 sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
    },
    'nn.functional.fractional_max_pool3d': {
        'forward': "sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
        'vjp': "sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
        'jvp': "sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
        'gradgrad': "sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
        'batched': "sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
        'lowp': "torch.float32 sample 0: ndgrad raises ImportError: cannot import name '_random' from 'ndgrad' (/work/wt/conv/ndgrad/__init__.py)",
    },
    'nn.functional.linear_cross_entropy': {
        'batched': 'sample 0 backward: ndgrad raises IndexError: too many indices for array: array is 0-dimensional, but 1 were indexed',
        'errors': "error input 0: ValueError: Expected input batch_size (2) to match target batch_size (3).; torch RuntimeError('expected input with dimensionality 1 or 2, got 3')",
    },
    'nn.functional.linear_cross_entropy/chunked': {
        'gradgrad': 'sample 0 gradgrad[0]: tensor, torch None',
        'batched': 'sample 0 backward: ndgrad raises IndexError: too many indices for array: array is 0-dimensional, but 1 were indexed',
        'errors': "error input 0: ValueError: Expected input batch_size (2) to match target batch_size (3).; torch RuntimeError('expected input with dimensionality 1 or 2, got 3')",
    },
    'nn.functional.linear_cross_entropy/chunked_none': {
        'gradgrad': "sample 0 backward: ndgrad returns where torch raises RuntimeError: div(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.",
        'errors': "error input 0: ValueError: Expected input batch_size (2) to match target batch_size (3).; torch RuntimeError('expected input with dimensionality 1 or 2, got 3')",
    },
    'nn.functional.max_pool1d': {
        'errors': "error input 0: message 'max_pool1d() padding must be non-negative, but got -1' does not match torch's 'pad must be non-negative'",
    },
    'nn.functional.multi_margin_loss': {
        'vjp': 'sample 0 backward: ndgrad raises ValueError: too many values to unpack (expected 1)',
        'batched': 'sample 0 backward: ndgrad raises ValueError: too many values to unpack (expected 1)',
        'errors': "error input 2: message 'inconsistent target size, expected 1 but got [5]' does not match torch's 'Expected non-empty vector or matrix with optional 0-dim batch size, but got: \\\\[0\\\\]'",
    },
    'nn.functional.multilabel_margin_loss': {
        'vjp': 'sample 0 backward: ndgrad raises ValueError: too many values to unpack (expected 1)',
        'batched': 'sample 0 backward: ndgrad raises ValueError: too many values to unpack (expected 1)',
        'errors': "error input 2: message 'expected scalar type Long but found Float' does not match torch's 'Expected non-empty vector or matrix with optional 0-dim batch size, but got: \\\\[0\\\\]'",
    },
    'nn.functional.soft_margin_loss': {
        'lowp': 'torch.float16 sample 1[0]: values differ (max abs err inf)',
    },
    'nn.functional.triplet_margin_loss': {
        'errors': "error input 1: message 'TripletMarginLoss: expected margin to be greater than 0, got -1.0 instead' does not match torch's 'margin must be greater than 0, got -1.0'",
    },
    'nn.functional.triplet_margin_with_distance_loss': {
        'forward': "sample 0: ndgrad raises TypeError: pairwise_distance(): argument 'x1' (position 1) must be Tensor, not Tensor",
        'vjp': "sample 0: ndgrad raises TypeError: pairwise_distance(): argument 'x1' (position 1) must be Tensor, not Tensor",
        'jvp': "sample 0: ndgrad raises TypeError: pairwise_distance(): argument 'x1' (position 1) must be Tensor, not Tensor",
        'gradgrad': "sample 0: ndgrad raises TypeError: pairwise_distance(): argument 'x1' (position 1) must be Tensor, not Tensor",
        'batched': "sample 0: ndgrad raises TypeError: pairwise_distance(): argument 'x1' (position 1) must be Tensor, not Tensor",
        'fwbatched': "sample 0: ndgrad raises TypeError: pairwise_distance(): argument 'x1' (position 1) must be Tensor, not Tensor",
        'lowp': "torch.float32 sample 0: ndgrad raises TypeError: pairwise_distance(): argument 'x1' (position 1) must be Tensor, not Tensor",
        'errors': "error input 1: message 'TripletMarginWithDistanceLoss: expected margin to be greater than 0, got -1.0 instead' does not match torch's 'margin must be greater than 0, got -1.0'",
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
    'nn.functional.batch_norm': 'not yet implemented',
    'nn.functional.batch_norm/without_cudnn': 'not yet implemented',
    'nn.functional.embedding': 'not yet implemented',
    'nn.functional.embedding_bag': 'not yet implemented',
    'nn.functional.grid_sample': 'not yet implemented',
    'nn.functional.group_norm': 'not yet implemented',
    'nn.functional.instance_norm': 'not yet implemented',
    'nn.functional.interpolate/area': 'not yet implemented',
    'nn.functional.interpolate/bicubic': 'not yet implemented',
    'nn.functional.interpolate/bilinear': 'not yet implemented',
    'nn.functional.interpolate/linear': 'not yet implemented',
    'nn.functional.interpolate/nearest': 'not yet implemented',
    'nn.functional.interpolate/nearest-exact': 'not yet implemented',
    'nn.functional.interpolate/trilinear': 'not yet implemented',
    'nn.functional.layer_norm': 'not yet implemented',
    'nn.functional.local_response_norm': 'not yet implemented',
    'nn.functional.multi_head_attention_forward': 'not yet implemented',
    'nn.functional.normalize': 'not yet implemented',
    'nn.functional.one_hot': 'not yet implemented',
    'nn.functional.rms_norm': 'not yet implemented',
    'nn.functional.scaled_dot_product_attention': 'not yet implemented',
    'nn.functional.upsample_bilinear': 'not yet implemented',
    'nn.functional.upsample_nearest': 'not yet implemented',
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
