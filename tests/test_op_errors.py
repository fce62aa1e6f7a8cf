"""Bad input to ops raises what PyTorch raises: each case runs with ``m = torch`` and
``m = ndgrad``; both must raise the same exception class, and torch's message (its first line,
or the listed key phrases) must appear in ndgrad's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad


def _t(m, *shape, dtype="float32"):
    """``arange`` of ``shape`` (a 0-d tensor for no shape) of ``dtype``."""
    t = m.arange(int(np.prod(shape))).reshape(shape) if shape else m.tensor(1)
    return t.to(getattr(m, dtype))


def _setitem(m, index, value):
    y = _t(m, 3, 4).clone()
    y[index] = value
    return y


CASES = {
    # broadcasting
    "broadcast_add": lambda m: _t(m, 2, 3) + _t(m, 2, 2),
    "broadcast_mul_function": lambda m: m.mul(_t(m, 4), _t(m, 3)),
    "broadcast_sub_leading": lambda m: _t(m, 3, 2) - _t(m, 2, 1, 3),
    "broadcast_div": lambda m: _t(m, 2, 3) / _t(m, 3, 3),
    "broadcast_pow": lambda m: _t(m, 2, 3) ** _t(m, 3, 3),
    "broadcast_maximum": lambda m: m.maximum(_t(m, 2, 3), _t(m, 2)),
    "broadcast_where": lambda m: m.where(_t(m, 2, 3) > 1, _t(m, 2, 3), _t(m, 4)),
    "broadcast_eq": lambda m: _t(m, 2, 3) == _t(m, 2),
    "broadcast_clamp": lambda m: m.clamp(_t(m, 2, 3), _t(m, 2)),
    "broadcast_masked_fill": lambda m: _t(m, 2, 3).masked_fill(_t(m, 2) > 0, 1.0),
    # matrix products
    "mm_shapes": lambda m: m.mm(_t(m, 2, 3), _t(m, 2, 3)),
    "mm_not_matrix": lambda m: m.mm(_t(m, 3), _t(m, 3, 2)),
    "mm_dtypes": lambda m: m.mm(_t(m, 2, 3), _t(m, 3, 2, dtype="float64")),
    "matmul_shapes": lambda m: _t(m, 2, 3) @ _t(m, 2, 3),
    "matmul_0d": lambda m: m.matmul(_t(m), _t(m, 3)),
    "matmul_vectors": lambda m: _t(m, 3) @ _t(m, 4),
    "matmul_batched_inner": lambda m: _t(m, 2, 2, 3) @ _t(m, 2, 4, 2),
    "matmul_batch_broadcast": lambda m: _t(m, 2, 2, 3) @ _t(m, 3, 3, 2),
    "matmul_folded_inner": lambda m: _t(m, 2, 2, 3) @ _t(m, 4, 2),
    "bmm_not_3d": lambda m: m.bmm(_t(m, 2, 3), _t(m, 3, 2)),
    "bmm_batch": lambda m: m.bmm(_t(m, 2, 2, 3), _t(m, 3, 3, 2)),
    "mv_shapes": lambda m: m.mv(_t(m, 2, 3), _t(m, 2)),
    "mv_not_vector": lambda m: m.mv(_t(m, 2, 3), _t(m, 3, 1)),
    "dot_sizes": lambda m: m.dot(_t(m, 3), _t(m, 2)),
    "dot_2d": lambda m: m.dot(_t(m, 2, 3), _t(m, 3)),
    # view / reshape
    "view_strides": lambda m: _t(m, 2, 3).t().view(6),
    "view_size": lambda m: _t(m, 2, 3).view(4),
    "view_two_inferred": lambda m: _t(m, 2, 3).view(-1, -1),
    "reshape_size": lambda m: _t(m, 2, 3).reshape(4, 2),
    "reshape_inferred_size": lambda m: _t(m, 2, 3).reshape(-1, 4),
    # dimensions out of range
    "sum_dim": lambda m: _t(m, 2, 3).sum(2),
    "sum_negative_dim": lambda m: _t(m, 2, 3).sum(-3),
    "sum_repeated_dim": lambda m: _t(m, 2, 3).sum((1, 1)),
    "mean_dim": lambda m: _t(m, 2, 3).mean(5),
    "max_dim": lambda m: _t(m, 2, 3).max(2),
    "prod_dim": lambda m: _t(m, 2, 3).prod(-3),
    "unsqueeze_dim": lambda m: _t(m, 2, 3).unsqueeze(4),
    "unsqueeze_negative_dim": lambda m: _t(m, 2, 3).unsqueeze(-4),
    "transpose_dim": lambda m: _t(m, 2, 3).transpose(0, 2),
    "squeeze_dim": lambda m: _t(m, 2, 3).squeeze(3),
    "squeeze_dims": lambda m: _t(m, 1, 3).squeeze((0, 2)),
    "select_dim": lambda m: _t(m, 2, 3).select(2, 0),
    "permute_dim": lambda m: _t(m, 2, 3).permute(0, 2),
    "cat_dim": lambda m: m.cat([_t(m, 2, 3), _t(m, 2, 3)], 2),
    "stack_dim": lambda m: m.stack([_t(m, 3), _t(m, 3)], 3),
    # reductions
    "mean_int": lambda m: _t(m, 2, 3, dtype="int64").mean(),
    "mean_int_dim": lambda m: _t(m, 2, 3, dtype="int32").mean(0),
    "max_empty": lambda m: _t(m, 0).max(),
    "max_dim_empty": lambda m: _t(m, 2, 0).max(1),
    "sum_to_size": lambda m: _t(m, 2, 3).sum_to_size(3, 3),
    # cat / stack / split
    "cat_sizes": lambda m: m.cat([_t(m, 2, 3), _t(m, 2, 2)]),
    "cat_empty": lambda m: m.cat([]),
    "cat_ndim": lambda m: m.cat([_t(m, 2, 3), _t(m, 3)]),
    "cat_tensor_not_list": lambda m: m.cat(_t(m, 2, 3)),
    "stack_sizes": lambda m: m.stack([_t(m, 2, 3), _t(m, 3, 2)]),
    "stack_empty": lambda m: m.stack([]),
    "split_sizes": lambda m: _t(m, 2, 3).split([1, 1], 1),
    "chunk_zero": lambda m: _t(m, 2, 3).chunk(0),
    "unbind_0d": lambda m: _t(m).unbind(0),
    "narrow_range": lambda m: _t(m, 2, 3).narrow(1, 2, 2),
    "select_index": lambda m: _t(m, 2, 3).select(1, 3),
    # expand / permute / transpose
    "expand_size": lambda m: _t(m, 2, 3).expand(2, 4),
    "expand_fewer_dims": lambda m: _t(m, 2, 3).expand(3),
    "expand_negative_leading": lambda m: _t(m, 3).expand(-1, 3),
    "expand_negative_singleton": lambda m: _t(m, 1).expand(-2),
    "expand_negative_singleton_2d": lambda m: _t(m, 3, 1).expand(3, -2),
    "expand_negative_mismatch": lambda m: _t(m, 3).expand(2, -2),
    "repeat_negative": lambda m: _t(m, 3).repeat(2, -1),
    "tile_negative": lambda m: _t(m, 3).tile(-1),
    "empty_strided_negative_size": lambda m: m.empty_strided((2, -1), (1, 1)),
    "empty_strided_negative_stride": lambda m: m.empty_strided((2, 3), (-1, 1)),
    "tensor_str_element": lambda m: m.tensor([1, "a"]),
    "tensor_bytes_element": lambda m: m.tensor([b"a"]),
    "permute_length": lambda m: _t(m, 2, 3).permute(1, 0, 2),
    "permute_repeated": lambda m: _t(m, 2, 3).permute(0, 0),
    "t_3d": lambda m: _t(m, 2, 3, 1).t(),
    "flatten_order": lambda m: _t(m, 2, 3, 1).flatten(2, 1),
    "movedim_repeated": lambda m: _t(m, 2, 3).movedim((0, 1), (0, 0)),
    "movedim_repeated_source": lambda m: _t(m, 2, 3).movedim((0, 0), (0, 1)),
    "movedim_mixed_args": lambda m: _t(m, 2, 3).movedim(0, (0, 1)),
    # indexing
    "index_int": lambda m: _t(m, 2, 3)[2],
    "index_int_dim1": lambda m: _t(m, 2, 3)[0, 5],
    "index_negative_int": lambda m: _t(m, 2, 3)[-3],
    "index_too_many": lambda m: _t(m, 2, 3)[0, 0, 0],
    "index_0d": lambda m: _t(m)[0],
    "index_tensor": lambda m: _t(m, 2, 3)[m.tensor([0, 2])],
    "index_list_dim1": lambda m: _t(m, 2, 3)[:, [0, 3]],
    "index_float_tensor": lambda m: _t(m, 2, 3)[m.tensor([0.0])],
    "index_mask_shape": lambda m: _t(m, 2, 3)[m.tensor([True, False, True])],
    "index_mask_shape_dim1": lambda m: _t(m, 2, 3)[:, m.tensor([True, False])],
    "index_negative_step": lambda m: _t(m, 4)[::-1],
    "setitem_shape": lambda m: _setitem(m, 0, _t(m, 3)),
    "setitem_shape_advanced": lambda m: _setitem(m, m.tensor([0, 1]), _t(m, 3)),
    "setitem_index": lambda m: _setitem(m, 3, 1.0),
    "setitem_view_of_leaf": lambda m: _t(m, 3).requires_grad_().__setitem__(0, 1.0),
    "setitem_leaf": lambda m: _t(m, 3).requires_grad_().__setitem__(m.tensor([0]), 1.0),
    "index_put_shape": lambda m: _t(m, 3, 4).index_put((m.tensor([0, 1]),), _t(m, 3)),
    "gather_index_dtype": lambda m: _t(m, 2, 3).gather(1, m.tensor([[0]], dtype=m.int16)),
    "gather_index_ndim": lambda m: _t(m, 2, 3).gather(1, m.tensor([0, 1])),
    "gather_index_size": lambda m: _t(m, 2, 3).gather(1, m.tensor([[0], [1], [0]])),
    "gather_index_range": lambda m: _t(m, 2, 3).gather(1, m.tensor([[5]])),
    # pointwise dtype rules
    "sub_bools": lambda m: _t(m, 3, dtype="bool") - _t(m, 3, dtype="bool"),
    "sub_bool_scalar": lambda m: _t(m, 3) - True,
    "rsub_bool_tensor": lambda m: 1 - _t(m, 3, dtype="bool"),
    "neg_bool": lambda m: -_t(m, 3, dtype="bool"),
    "pow_int_negative": lambda m: _t(m, 3, dtype="int64") ** -1,
    "pow_bools": lambda m: _t(m, 3, dtype="bool") ** _t(m, 3, dtype="bool"),
    "add_float_alpha_int": lambda m: m.add(_t(m, 3, dtype="int64"), 2, alpha=0.5),
    "sub_bool_alpha": lambda m: m.sub(_t(m, 3), _t(m, 3), alpha=True),
    "add_complex_alpha": lambda m: m.add(_t(m, 3), _t(m, 3), alpha=1j),
    "div_rounding_mode": lambda m: m.div(_t(m, 3), 2, rounding_mode="round"),
    "floor_divide_bool": lambda m: _t(m, 3, dtype="bool") // True,
    "floor_divide_complex": lambda m: _t(m, 3) // 1j,
    "maximum_complex": lambda m: m.maximum(_t(m, 3) * 1j, _t(m, 3) * 1j),
    "lt_complex": lambda m: (_t(m, 3) * 1j) < 1,
    "clamp_no_bounds": lambda m: m.clamp(_t(m, 3)),
    "clamp_complex": lambda m: m.clamp(_t(m, 3) * 1j, 0),
    "masked_fill_mask_dtype": lambda m: _t(m, 2, 3).masked_fill(_t(m, 2, 3, dtype="int64"), 0.0),
    "masked_fill_uint8_mask": lambda m: _t(m, 2, 3).masked_fill(_t(m, 2, 3, dtype="uint8"), 0.0),
    "masked_fill_value_dims": lambda m: _t(m, 2, 3).masked_fill(_t(m, 2, 3) > 2, _t(m, 1)),
    # autograd through ops
    "requires_grad_int": lambda m: _t(m, 3, dtype="int64").requires_grad_(),
    "floor_divide_backward": lambda m: (_t(m, 3).requires_grad_() // 2).sum().backward(),
    "backward_non_scalar": lambda m: (_t(m, 3).requires_grad_() * 2).backward(),
    "item_many": lambda m: _t(m, 3).item(),
    # ---- reduce (issue 8) ----
    "sort_complex": lambda m: m.sort(_t(m, 3, dtype="complex64")),
    "topk_k_too_large": lambda m: m.topk(_t(m, 3), 4),
    "topk_bool": lambda m: m.topk(_t(m, 3, dtype="bool"), 1),
    "kthvalue_k_zero": lambda m: m.kthvalue(_t(m, 2, 3), 0),
    "kthvalue_empty_dim": lambda m: m.kthvalue(_t(m, 2, 0), 1, 1),
    "median_complex": lambda m: m.median(_t(m, 3, dtype="complex64")),
    "median_dim_bool": lambda m: m.median(_t(m, 3, dtype="bool"), 0),
    "mode_empty_dim": lambda m: m.mode(_t(m, 2, 0), 1),
    "quantile_q_range": lambda m: m.quantile(_t(m, 3), 1.5),
    "quantile_q_tensor_range": lambda m: m.quantile(_t(m, 3), m.tensor([0.5, 2.0])),
    "quantile_int": lambda m: m.quantile(_t(m, 3, dtype="int64"), 0.5),
    "quantile_q_dtype": lambda m: m.quantile(_t(m, 3), m.tensor([0.5], dtype=m.float64)),
    "quantile_interpolation": lambda m: m.quantile(_t(m, 3), 0.5, interpolation="cubic"),
    "quantile_empty": lambda m: m.quantile(_t(m, 0), 0.5),
    "cummax_complex": lambda m: m.cummax(_t(m, 3, dtype="complex64"), 0),
    "logcumsumexp_int": lambda m: m.logcumsumexp(_t(m, 3, dtype="int64"), 0),
    "nansum_complex": lambda m: m.nansum(_t(m, 3, dtype="complex64")),
    "nanmean_int": lambda m: m.nanmean(_t(m, 3, dtype="int64")),
    "var_mean_int": lambda m: m.var_mean(_t(m, 3, dtype="int64")),
    "aminmax_empty": lambda m: m.aminmax(_t(m, 0)),
    "aminmax_empty_dim": lambda m: m.aminmax(_t(m, 2, 0), dim=1),
    "diff_0d": lambda m: m.diff(_t(m)),
    "diff_negative_n": lambda m: m.diff(_t(m, 3), -1),
    "diff_prepend_dims": lambda m: m.diff(_t(m, 2, 3), prepend=_t(m, 3)),
    "trace_3d": lambda m: m.trace(_t(m, 2, 2, 2)),
    "cov_3d": lambda m: m.cov(_t(m, 2, 2, 2)),
    "cov_fweights_float": lambda m: m.cov(_t(m, 2, 3), fweights=_t(m, 3)),
    "cov_aweights_negative": lambda m: m.cov(_t(m, 2, 3), aweights=_t(m, 3) - 1),
    "cov_fweights_numel": lambda m: m.cov(_t(m, 2, 3), fweights=_t(m, 2, dtype="int64")),
    "renorm_1d": lambda m: m.renorm(_t(m, 3), 2, 0, 1.0),
    "renorm_nonpositive_p": lambda m: m.renorm(_t(m, 2, 3), 0, 0, 1.0),
    "renorm_negative_maxnorm": lambda m: m.renorm(_t(m, 2, 3), 2, 0, -1.0),
    "dist_broadcast": lambda m: m.dist(_t(m, 2), _t(m, 3)),
    "trapezoid_x_size": lambda m: m.trapezoid(_t(m, 3), _t(m, 4)),
    "masked_sum_mask_dims": lambda m: m.masked.sum(_t(m, 3), mask=_t(m, 2, 3) > 0),
    # ---- end reduce ----
    # fused products: PyTorch's checks per op, in its order (session 25)
    "addmm_self_dtype": lambda m: m.addmm(_t(m, 2, dtype="float64"), _t(m, 2, 2), _t(m, 2, 2)),
    "addmm_mat1_dtype": lambda m: m.addmm(_t(m, 2), _t(m, 2, 2, dtype="float64"), _t(m, 2, 2)),
    "addmm_mat2_dtype": lambda m: m.addmm(_t(m, 2), _t(m, 2, 2), _t(m, 2, 2, dtype="float64")),
    "linear_bias_input_dtype": lambda m: m.nn.functional.linear(
        _t(m, 2, 3, dtype="float64"), _t(m, 4, 3), _t(m, 4)),
    "addbmm_dtype": lambda m: m.addbmm(_t(m, 2, 2), _t(m, 1, 2, 2),
                                       _t(m, 1, 2, 2, dtype="float64")),
    "baddbmm_input_dtype": lambda m: m.baddbmm(_t(m, 1, 2, 2, dtype="float64"), _t(m, 1, 2, 2),
                                               _t(m, 1, 2, 2)),
    "baddbmm_batch2_dtype": lambda m: m.baddbmm(_t(m, 1, 2, 2), _t(m, 1, 2, 2),
                                                _t(m, 1, 2, 2, dtype="float64")),
    "addmv_dtype": lambda m: m.addmv(_t(m, 2), _t(m, 2, 2, dtype="float64"), _t(m, 2)),
    "mv_dtype": lambda m: m.mv(_t(m, 2, 2, dtype="float64"), _t(m, 2)),
    "bmm_dtype": lambda m: m.bmm(_t(m, 1, 2, 2), _t(m, 1, 2, 2, dtype="float64")),
    "matmul_batched_dtype": lambda m: m.matmul(_t(m, 2, 2), _t(m, 3, 2, 2, dtype="float64")),
    "matmul_folded_mv_dtype": lambda m: m.matmul(_t(m, 3, 2, 2), _t(m, 2, dtype="float64")),
    "matmul_folded_mm_dtype": lambda m: m.matmul(_t(m, 3, 2, 2), _t(m, 2, 2, dtype="float64")),
    "addmm_complex_alpha": lambda m: m.addmm(_t(m, 2, 2), _t(m, 2, 2), _t(m, 2, 2), alpha=1 + 1j),
    "addmm_long_complex_alpha": lambda m: m.addmm(
        _t(m, 2, 2, dtype="int64"), _t(m, 2, 2, dtype="int64"), _t(m, 2, 2, dtype="int64"),
        alpha=2j),
    "addr_integral_beta": lambda m: m.addr(_t(m, 2, 2, dtype="int64"), _t(m, 2, dtype="int64"),
                                           _t(m, 2, dtype="int64"), beta=0.5),
    "addr_bool_alpha": lambda m: m.addr(_t(m, 2, 2), _t(m, 2), _t(m, 2), alpha=True),
    "addr_bool_float_alpha": lambda m: m.addr(_t(m, 2, 2, dtype="bool"), _t(m, 2, dtype="bool"),
                                              _t(m, 2, dtype="bool"), alpha=0.5),
    # check order
    "expand_trailing_first": lambda m: _t(m, 3, 4).expand(2, 3),
    "expand_leading_below_minus_one": lambda m: _t(m, 3, 4).expand(-2, 3, 4),
    "masked_fill_shape_before_dtype": lambda m: _t(m, 2, 3).masked_fill(
        _t(m, 2, dtype="int64"), 1.0),
    "einsum_ellipsis_broadcast": lambda m: m.einsum("...i,...i", _t(m, 5, 2, 3), _t(m, 4, 3)),
    "einsum_subscript_size": lambda m: m.einsum("ij,jk->ik", _t(m, 3, 4), _t(m, 3, 4)),
    "float_of_many": lambda m: float(_t(m, 3)),
    "int_of_many": lambda m: int(_t(m, 3)),
    "complex_of_empty": lambda m: complex(_t(m, 0)),
    # pooling's checks (session 25)
    "avg_pool2d_2d_input": lambda m: m.nn.functional.avg_pool2d(_t(m, 4, 4), 2),
    "avg_pool2d_5d_input": lambda m: m.nn.functional.avg_pool2d(_t(m, 1, 1, 1, 4, 4), 2),
    "avg_pool2d_zero_height": lambda m: m.nn.functional.avg_pool2d(_t(m, 1, 1, 0, 4), 2),
    "lp_pool2d_5d_input": lambda m: m.nn.functional.lp_pool2d(_t(m, 1, 1, 1, 4, 4), 2, 2),
    "avg_pool3d_zero_channels": lambda m: m.nn.functional.avg_pool3d(_t(m, 1, 0, 4, 4, 4), 2),
    "max_pool2d_kernel_zero": lambda m: m.nn.functional.max_pool2d(_t(m, 1, 1, 4, 4), 0),
    "avg_pool1d_kernel_zero": lambda m: m.nn.functional.avg_pool1d(_t(m, 1, 1, 4), 0),
    "avg_pool2d_kernel_zero_stride_one": lambda m: m.nn.functional.avg_pool2d(
        _t(m, 1, 1, 4, 4), 0, 1),
    "adaptive_max_pool2d_1d": lambda m: m.nn.functional.adaptive_max_pool2d(_t(m, 4), 2),
    "adaptive_avg_pool2d_1d": lambda m: m.nn.functional.adaptive_avg_pool2d(_t(m, 4), 2),
    "batch_norm_running_mean_first": lambda m: m.nn.functional.batch_norm(
        _t(m, 2, 4, 2), _t(m, 3), _t(m, 3), _t(m, 3), _t(m, 3)),
    "batch_norm_running_var_before_weight": lambda m: m.nn.functional.batch_norm(
        _t(m, 2, 4, 2), _t(m, 4), _t(m, 3), _t(m, 3), _t(m, 4)),
    "batch_norm_eval_without_stats": lambda m: m.nn.functional.batch_norm(
        _t(m, 2, 4, 2), None, None, _t(m, 3), _t(m, 3), training=False),
    "conv2d_weight_3d": lambda m: m.nn.functional.conv2d(_t(m, 2, 3, 4, 4), _t(m, 5, 3, 3)),
    "conv2d_weight_5d_stride": lambda m: m.nn.functional.conv2d(
        _t(m, 2, 3, 4, 4), _t(m, 5, 3, 3, 3, 3), stride=2),
    "conv_transpose2d_weight_3d": lambda m: m.nn.functional.conv_transpose2d(
        _t(m, 2, 3, 4, 4), _t(m, 3, 5, 3)),
    "conv2d_weight_3d_valid": lambda m: m.nn.functional.conv2d(
        _t(m, 2, 3, 4, 4), _t(m, 5, 3, 3), padding="valid"),
    "new_zeros_negative": lambda m: _t(m, 3).new_zeros(2, -1),
    "to_mps": lambda m: _t(m, 3).to("mps"),
    "to_device_xla": lambda m: _t(m, 3).to(device="xla"),
    "detach_view_in_place": lambda m: _t(m, 3)[0:1].detach_(),
    "detach_view_made_without_grad": lambda m: _t(m, 3).view(3).detach_(),
    "from_numpy_negative_strides": lambda m: m.from_numpy(np.arange(4.0)[::-1]),
    "as_tensor_negative_strides": lambda m: m.as_tensor(np.zeros((2, 2))[:, ::-1]),
    "from_numpy_big_endian": lambda m: m.from_numpy(np.arange(3.0, dtype=">f8")),
    "tensor_big_endian": lambda m: m.tensor(np.arange(3.0, dtype=">f8")),
    "hardtanh_half_bound_overflow": lambda m: m.nn.functional.hardtanh(
        _t(m, 3, dtype="float16"), -1.0, 65519.0),
    "threshold_half_value_overflow": lambda m: m.nn.functional.threshold(
        _t(m, 3, dtype="float16"), 0.0, 1e5),
    "threshold_int_value_overflow": lambda m: m.nn.functional.threshold(
        _t(m, 3, dtype="int16"), 0, 1e5),
    "threshold_bool": lambda m: m.nn.functional.threshold(_t(m, 3, dtype="bool"), 0, 1),
    "hardshrink_half_lambda_overflow": lambda m: m.nn.functional.hardshrink(
        _t(m, 3, dtype="float16"), 65519.0),
    "softshrink_lambda_above_max": lambda m: m.nn.functional.softshrink(
        _t(m, 3, dtype="float16"), 65519.0),
    "softshrink_lambda_nan": lambda m: m.nn.functional.softshrink(_t(m, 3), float("nan")),
    "mm_int32_int64": lambda m: _t(m, 2, 2, dtype="int32") @ _t(m, 2, 2, dtype="int64"),
    "mm_int8_double": lambda m: _t(m, 2, 2, dtype="int8") @ _t(m, 2, 2, dtype="float64"),
    "tensor_negative_strides": lambda m: m.tensor(np.arange(4.0)[::-1]),
    "tensor_negative_strides_2d": lambda m: m.tensor(np.zeros((2, 3))[:, ::-1]),
    "tensor_negative_stride_size_one": lambda m: m.tensor(np.zeros((1, 3))[::-1]),
    "from_numpy_negative_stride_size_one": lambda m: m.from_numpy(np.zeros((1, 3))[::-1]),
}

# Where the first line of torch's message is not the thing to compare.
PHRASES = {
    # PyTorch names dimension 0 (of the index list); ndgrad names the indexed dimension, 1.
    "index_list_dim1": ["index 3 is out of bounds for dimension", "with size 3"],
    # PyTorch names itself where ndgrad names itself
    "to_mps": ["is not linked with support for mps devices"],
    "to_device_xla": ["is not linked with support for xla devices"],
}


def _raised(fn, m):
    with pytest.raises(Exception) as info:
        fn(m)
    return info.value


# Warnings: same category and text, attributed to the caller's line (this file) as torch's are.
WARNING_CASES = {
    "std_no_dof": lambda m: _t(m, 3).std(correction=3),
    "var_single": lambda m: _t(m, 1).var(),
    "var_0d": lambda m: _t(m).var(),
    "var_empty_kept_dim": lambda m: _t(m, 0, 2).var(1),
    "var_dim_no_dof": lambda m: _t(m, 3, 2).var(0, correction=3),
    "var_mean_single": lambda m: m.var_mean(_t(m, 1)),
    "std_mean_no_dof": lambda m: m.std_mean(_t(m, 3), correction=4),
    "mse_loss_target_size": lambda m: m.nn.functional.mse_loss(_t(m, 3, 1), _t(m, 3)),
    "tensor_of_tensor": lambda m: m.tensor(_t(m, 3)),
    "new_tensor_of_tensor": lambda m: _t(m, 2).new_tensor(_t(m, 3)),
    "stft_no_window": lambda m: m.stft(_t(m, 32), 8, return_complex=True),
    "stft_no_window_then_error": lambda m: m.stft(_t(m, 32), 8),
    "istft_no_window": lambda m: m.istft(m.stft(_t(m, 32), 8, window=m.ones(8),
                                                return_complex=True), 8),
    "kl_div_mean": lambda m: m.nn.functional.kl_div(_t(m, 2, 3), _t(m, 2, 3)),
    "cross_no_dim": lambda m: m.cross(_t(m, 3, 3), _t(m, 3, 3)),
}
NO_WARNING_CASES = {
    "var_enough_dof": lambda m: _t(m, 3).var(correction=2),
    "var_empty_dim_list": lambda m: _t(m, 3).var(dim=[], correction=1),
}


def _warned(fn, m, always=True):
    import warnings
    before = m.is_warn_always_enabled()
    m.set_warn_always(always)       # torch's warn-once warnings too, whatever ran before
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            fn(m)
        except RuntimeError:    # warned first, then raised (stft without return_complex)
            pass
        finally:
            m.set_warn_always(before)
    return [(x.category, str(x.message).split(" (Triggered internally")[0], x.filename)
            for x in w]


@pytest.mark.parametrize("name", sorted(WARNING_CASES))
def test_warning_matches_torch(name):
    expected = _warned(WARNING_CASES[name], torch)
    got = _warned(WARNING_CASES[name], ndgrad)
    assert expected and got
    assert (got[0][0], got[0][2]) == (expected[0][0], __file__)
    assert got[0][1].replace("ndgrad.", "torch.") == expected[0][1]


@pytest.mark.parametrize("name", ["stft_no_window", "istft_no_window", "cross_no_dim"])
def test_warn_once(name):
    """PyTorch's warn-once warnings: the first occurrence in the process only."""
    from ndgrad import _warn
    _warn._warned_once.clear()
    assert len(_warned(WARNING_CASES[name], ndgrad, always=False)) == 1
    assert _warned(WARNING_CASES[name], ndgrad, always=False) == []
    assert len(_warned(WARNING_CASES[name], ndgrad, always=True)) == 1


@pytest.mark.parametrize("name", sorted(NO_WARNING_CASES))
def test_no_warning_as_torch(name):
    assert _warned(NO_WARNING_CASES[name], torch) == []
    assert _warned(NO_WARNING_CASES[name], ndgrad) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_matches_torch(name):
    expected = _raised(CASES[name], torch)
    got = _raised(CASES[name], ndgrad)
    assert type(got).__name__ == type(expected).__name__, (str(got), str(expected))
    phrases = PHRASES.get(name) or [str(expected).strip().splitlines()[0].strip()]
    for phrase in phrases:
        assert phrase in str(expected)
        assert phrase in str(got)


@pytest.mark.parametrize("dtypes", [("float32", "float64", "float32"),
                                    ("float32", "float32", "float64"),
                                    ("float64", "float32", "float32"),
                                    ("int64", "float32", "float32"),
                                    ("float32", "int64", "int64"), ("int64", "int64", "int64")])
def test_addr_promotes_as_torch(dtypes):
    """``addr`` promotes its three operands (the other fused products refuse mixed dtypes); the
    gradient of each operand comes back in its own dtype."""
    rng = np.random.default_rng(0)
    arrays = [rng.integers(-3, 4, size=s).astype(d) for s, d in zip(((3, 2), (3,), (2,)), dtypes)]
    want = torch.addr(*[torch.from_numpy(a) for a in arrays], beta=2, alpha=3)
    ts = [ndgrad.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    got = ndgrad.addr(*ts, beta=2, alpha=3)
    assert str(got.dtype) == str(want.dtype).replace("torch", "ndgrad")
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-6)
    if got.requires_grad:
        got.sum().backward()
        for t in ts:
            if t.requires_grad:
                assert t.grad.dtype == t.dtype and t.grad.shape == t.shape


@pytest.mark.parametrize("kw", [{}, {"beta": False}, {"alpha": False}, {"beta": 2}, {"beta": 0}])
def test_addr_bool_is_logical_as_torch(kw):
    args = ([[True, False], [False, False]], [True, False], [False, True])
    want = torch.addr(*[torch.tensor(a) for a in args], **kw)
    got = ndgrad.addr(*[ndgrad.tensor(a) for a in args], **kw)
    assert got.dtype == ndgrad.bool and got.tolist() == want.tolist()


def test_fused_products_take_a_complex_number_with_no_imaginary_part():
    m = [torch.ones(2, 2), ndgrad.ones(2, 2)]
    want = torch.addmm(m[0], m[0], m[0], beta=1 + 0j)
    assert ndgrad.addmm(m[1], m[1], m[1], beta=1 + 0j).tolist() == want.tolist()
    li = [torch.ones(2, 2, dtype=torch.long), ndgrad.ones(2, 2, dtype=ndgrad.long)]
    want = torch.baddbmm(li[0][None], li[0][None], li[0][None], beta=2.5)
    assert ndgrad.baddbmm(li[1][None], li[1][None], li[1][None], beta=2.5).tolist() == \
        want.tolist()


@pytest.mark.parametrize("call", [
    lambda m, o: m.ones(2, 3, out=o), lambda m, o: m.zeros(2, 3, out=o),
    lambda m, o: m.full((2, 3), 1.0, out=o), lambda m, o: m.eye(2, out=o),
    lambda m, o: m.linspace(0, 1, 4, out=o), lambda m, o: m.randn(2, 3, out=o),
    lambda m, o: m.add(m.ones(2, 3), 1, out=o), lambda m, o: m.arange(4, out=o),
    lambda m, o: m.fft.fftfreq(4, out=o), lambda m, o: m.logspace(0, 1, 4, out=o),
    lambda m, o: m.fft.rfftfreq(6, out=o)])
@pytest.mark.parametrize("shape", [(6,), (0,), (2, 2)])
def test_out_resize_warnings_as_torch(call, shape):
    """Factories resize a mismatched ``out=`` silently; ``arange``/``fftfreq`` keep an out with
    the right element count and warn in their own words otherwise; other functions warn with
    the deprecation message."""
    import warnings

    seen = []
    for m in (torch, ndgrad):
        o = m.empty(*shape)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = call(m, o)
        msgs = [str(x.message).split(" (Triggered")[0] for x in w
                if issubclass(x.category, UserWarning)]
        seen.append((list(o.shape), r is o, msgs))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("data", [
    [np.float32(1)], [np.float64(1)], [np.int32(1)], [np.int16(1), 2], [np.float16(1)],
    [1.0, np.float32(2)], [np.float32(1), 2.0], [np.int64(1), 2.5], [np.bool_(True)],
    [[np.float64(1)], [2.0]], [np.complex64(1)], [np.uint8(3)], [np.float32(1), np.int64(2)],
    [np.int8(1), np.float16(2)], [np.float64(1)] * 5000, [1.0] * 5000 + [np.float64(2)]])
def test_tensor_of_numpy_scalars_infers_torchs_dtype(data):
    """A list holding NumPy scalars: each scalar's own dtype, promoted with the Python numbers'
    (a float the default dtype); a long list is scanned when it starts with a NumPy scalar."""
    want = torch.tensor(data).dtype
    got = ndgrad.tensor(data).dtype
    if len(data) > 4096 and not isinstance(data[0], np.generic):
        assert str(got) == "ndgrad.float32"     # not scanned (documented cost trade-off)
        return
    assert str(got).replace("ndgrad", "torch") == str(want)


@pytest.mark.parametrize("make", [
    lambda m: [1.0, m.tensor(2.0, dtype=m.float64)],
    lambda m: [m.tensor(1, dtype=m.int32), 2], lambda m: [m.tensor(1, dtype=m.int32)],
    lambda m: [m.tensor(1.5, dtype=m.float16), 2.0], lambda m: [m.tensor(True), 1],
    lambda m: [[m.tensor(1.0)], [m.tensor(2.0, dtype=m.float64)]],
    lambda m: [m.tensor(1), np.float32(2)],
    lambda m: [m.tensor(1, dtype=m.uint8), m.tensor(2, dtype=m.int8)],
    lambda m: [[m.tensor(1)], [m.tensor(2)]],
    lambda m: [m.tensor(1.5, dtype=m.bfloat16), m.tensor(2.0, dtype=m.bfloat16)]])
def test_tensor_of_tensors_infers_torchs_dtype(make):
    """A list holding one-element tensors: each tensor's dtype, promoted with the other
    leaves' (NumPy 2.4 cannot build some of these nestings itself: the numbers are used)."""
    want = torch.tensor(make(torch))
    got = ndgrad.tensor(make(ndgrad))
    assert str(got.dtype).replace("ndgrad", "torch") == str(want.dtype)
    assert got.tolist() == want.tolist()
    # NumPy remembers the bfloat16 case: a nested list of tensors still builds afterwards
    assert ndgrad.tensor([[ndgrad.tensor(1)], [ndgrad.tensor(2)]]).tolist() == [[1], [2]]
