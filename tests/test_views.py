"""Views against PyTorch: every view op shares memory with its base (writes show through both
ways), ``_base`` is the root base (a view of a view points at the root), one version counter is
shared by a base, its views and its ``detach()`` aliases, and ``.data`` gets a counter of its
own. Each test runs the same program with ``torch`` and ``ndgrad`` and compares."""

import numpy as np
import pytest
import torch

import ndgrad

LIBS = (torch, ndgrad)


def values(t):
    return np.asarray(t.detach().tolist())


def base3(L):
    return L.arange(24.0, dtype=L.float64).reshape(2, 3, 4).clone()   # not a view itself


# name -> the view op applied to a (2, 3, 4) float64 tensor
VIEW_OPS = {
    "view": lambda t: t.view(6, 4),
    "view_infer": lambda t: t.view(-1),
    "reshape_as_view": lambda t: t.reshape(4, 6),
    "transpose": lambda t: t.transpose(0, 2),
    "permute": lambda t: t.permute(2, 0, 1),
    "t": lambda t: t[0].t(),
    "T": lambda t: t[1].T,
    "expand": lambda t: t[:, :1].expand(2, 5, 4),
    "expand_new_dim": lambda t: t[0, 0].expand(3, 4),
    "squeeze": lambda t: t[:, :1].squeeze(1),
    "squeeze_all": lambda t: t[:1, :1].squeeze(),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "slice": lambda t: t[:, 1:],
    "slice_step": lambda t: t[:, :, ::2],
    "slice_negative": lambda t: t[-1, -2:],
    "int_index": lambda t: t[1],
    "ellipsis_none": lambda t: t[..., None, 2],
    "select": lambda t: t.select(1, 2),
    "select_negative": lambda t: t.select(-1, -1),
    "narrow": lambda t: t.narrow(2, 1, 2),
    "diagonal": lambda t: t.diagonal(),
    "diagonal_offset": lambda t: t.diagonal(1, 1, 2),
    "diagonal_negative_offset": lambda t: t[1].diagonal(-1),
    "as_strided": lambda t: t.as_strided((3, 2), (4, 1), 1),
    "unfold": lambda t: t.unfold(2, 2, 1),
    "unfold_step": lambda t: t.unfold(1, 2, 2),
    "split": lambda t: t.split(2, 2)[1],
    "split_sizes": lambda t: t.split([1, 3], 2)[1],
    "chunk": lambda t: t.chunk(3, 1)[2],
    "unbind": lambda t: t.unbind(0)[1],
    "view_of_view": lambda t: t[1].t()[1:],
    "view_of_view_of_view": lambda t: t[1:].reshape(3, 4)[::2].t().unsqueeze(1),
    "movedim": lambda t: t.movedim(0, 2),
    "flatten": lambda t: t.flatten(1),
    "view_as": lambda t: t.view_as(t.new_zeros(4, 6)),
    "expand_as": lambda t: t[:1].expand_as(t),
}
WRITABLE = [k for k in VIEW_OPS if not k.startswith(("expand", "unfold"))]


@pytest.mark.parametrize("name", VIEW_OPS)
def test_view_metadata_matches_torch(name):
    def run(L):
        x = base3(L)
        v = VIEW_OPS[name](x)
        # strides of size-1 dimensions are arbitrary (NumPy gives ``None`` dimensions 0)
        strides = [s for s, n in zip(v.stride(), v.shape) if n != 1]
        return (v._is_view(), v._base is x, v._version, tuple(v.shape), strides,
                v.storage_offset(), v.is_contiguous(), values(v).tolist())
    t, n = run(torch), run(ndgrad)
    assert t == n
    assert n[0] and n[1]          # every op above is a view whose _base is the root base


@pytest.mark.parametrize("name", VIEW_OPS)
def test_write_to_base_shows_in_view(name):
    def run(L):
        x = base3(L)
        v = VIEW_OPS[name](x)
        x.mul_(-1)
        x[1, 1] = 100.0
        return values(v), x._version, v._version
    (vt, xt, wt), (vn, xn, wn) = run(torch), run(ndgrad)
    np.testing.assert_array_equal(vt, vn)
    assert (xt, wt) == (xn, wn) == (2, 2)


@pytest.mark.parametrize("name", WRITABLE)
def test_write_to_view_shows_in_base(name):
    def run(L):
        x = base3(L)
        v = VIEW_OPS[name](x)
        v.mul_(-1)
        v.add_(0.5)
        return values(x), x._version, v._version
    (xt, at, bt), (xn, an, bn) = run(torch), run(ndgrad)
    np.testing.assert_array_equal(xt, xn)
    assert (at, bt) == (an, bn) == (2, 2)
    assert not np.array_equal(xn, values(base3(ndgrad)))


def test_reshape_that_must_copy_is_not_a_view():
    def run(L):
        x = base3(L)
        r = x.transpose(0, 1).reshape(-1)
        r.add_(1)
        return r._is_view(), r._base is None, values(x).sum(), x._version, r._version
    assert run(torch) == run(ndgrad) == (False, True, 276.0, 0, 1)


def test_view_of_view_points_at_root_base():
    def run(L):
        x = base3(L)
        a = x[1]
        b = a.t()
        c = b[1:].unsqueeze(0)
        return [v._base is x for v in (a, b, c)] + [a._base is a, c._base is b]
    assert run(torch) == run(ndgrad) == [True, True, True, False, False]


def test_view_of_a_non_leaf_and_of_a_leaf_requiring_grad():
    def run(L):
        x = base3(L).requires_grad_()
        y = x * 2
        v, w = x[0], y.transpose(1, 2)[1]
        return (v._base is x, w._base is y, v.is_leaf, w.is_leaf, v.requires_grad,
                v.grad_fn.name(), w.grad_fn.name())
    assert run(torch) == run(ndgrad)


@pytest.mark.parametrize("op", ["split", "chunk", "unbind"])
def test_multi_output_views_share_memory(op):
    def run(L):
        x = base3(L)
        outs = {"split": lambda: x.split(1, 1), "chunk": lambda: x.chunk(2, 2),
                "unbind": lambda: x.unbind(2)}[op]()
        with L.no_grad():
            outs[-1].fill_(-7.0)
        return ([o._base is x for o in outs], [o._version for o in outs], values(x),
                [tuple(o.shape) for o in outs])
    t, n = run(torch), run(ndgrad)
    assert t[0] == n[0] and t[1] == n[1] and t[3] == n[3]
    np.testing.assert_array_equal(t[2], n[2])


def test_real_and_imag_of_complex_are_views():
    def run(L):
        z = L.tensor([1 + 2j, 3 - 4j, -1j], dtype=L.complex128)
        re, im = z.real, z.imag
        re.mul_(10)
        im.add_(1)
        out = (re._base is z, im._base is z, re._is_view(), re.dtype == L.float64,
               z._version, re._version, im._version, values(re).tolist(), values(im).tolist())
        z.mul_(1j)               # writes to the complex base show in both views
        return out + (values(re).tolist(), values(im).tolist())
    assert run(torch) == run(ndgrad)


def test_real_of_a_real_tensor_is_itself():
    def run(L):
        x = L.ones(3)
        return x.real is x, x.real._is_view()
    assert run(torch) == run(ndgrad) == (True, False)


def test_imag_of_a_real_tensor_raises():
    msgs = []
    for L in LIBS:
        with pytest.raises(RuntimeError) as e:
            L.ones(3).imag
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    assert "imag is not implemented for tensors with non-complex dtypes" in msgs[1]


def test_detach_shares_memory_and_version_but_is_not_a_view():
    def run(L):
        x = base3(L).requires_grad_()
        y = x * 1
        d = y.detach()
        r = [d._is_view(), d._base is None, d.requires_grad, d.is_leaf]
        d[0, 0, 0] = -1.0                 # no autograd error: d has no history
        r += [y._version, d._version, values(y)[0, 0, 0]]
        y.add_(1)
        r += [d._version, values(d)[0, 0, 0]]
        v = d[1]                          # a view of the alias has the alias as base
        v.zero_()
        r += [v._base is d, y._version, values(y)[1].sum()]
        return r
    assert run(torch) == run(ndgrad)


def test_detach_of_a_view_is_not_a_view_and_shares_the_counter():
    def run(L):
        x = base3(L)
        v = x[1:]
        d = v.detach()
        d.mul_(2)
        return d._base is None, d._is_view(), x._version, v._version, d._version
    assert run(torch) == run(ndgrad) == (True, False, 1, 1, 1)


def test_data_shares_memory_but_not_the_version_counter():
    def run(L):
        x = base3(L).requires_grad_()
        y = x * 1
        d = y.data
        d.mul_(3)
        r = [y._version, d._version, values(y)[0, 0, 1], d.requires_grad, d._is_view()]
        y.add_(1)
        r += [y._version, d._version]
        xd = x.data
        xd.add_(1)                       # in-place on a leaf's .data: allowed, not tracked
        r += [x._version, xd._version, values(x)[0, 0, 0]]
        return r
    assert run(torch) == run(ndgrad) == [0, 1, 3.0, False, False, 1, 1, 0, 1, 1.0]


def test_version_counter_shared_by_base_views_and_aliases():
    def run(L):
        x = base3(L)
        views = [x[0], x[1].t(), x.view(-1), x.detach(), x[1].diagonal(), x.unsqueeze(0)]
        log = []
        for v in [x] + views:
            v.add_(1)
            log.append([w._version for w in [x] + views])
        with L.no_grad():
            views[2][3] = 0.0             # setitem bumps once
        log.append(x._version)
        return log
    assert run(torch) == run(ndgrad)


def test_version_bumped_once_per_inplace_op_and_not_by_reads():
    def run(L):
        x = base3(L)
        vs = [x._version]
        x.add_(1)
        vs.append(x._version)
        x.sum(), x[0], x.transpose(0, 1), x.view(-1), x.clone(), x.detach(), x.data
        vs.append(x._version)
        x[0, 0] = 5.0
        vs.append(x._version)
        x[x > 10] = 0.0
        vs.append(x._version)
        x.zero_().fill_(2).mul_(3)
        vs.append(x._version)
        return vs
    assert run(torch) == run(ndgrad) == [0, 1, 1, 2, 3, 6]


def test_view_with_incompatible_strides_raises_like_torch():
    msgs = []
    for L in LIBS:
        with pytest.raises(RuntimeError) as e:
            base3(L).transpose(0, 1).view(-1)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    assert "view size is not compatible with input tensor's size and stride" in msgs[1]


def test_views_of_integer_tensors():
    def run(L):
        x = L.arange(12).reshape(3, 4).clone()
        v = x[:, 1]
        v.mul_(10)
        return v._base is x, x._version, values(x).tolist(), v.dtype == L.int64
    assert run(torch) == run(ndgrad)


def test_views_created_in_no_grad_keep_their_base():
    def run(L):
        x = base3(L).requires_grad_()
        y = x * 1
        with L.no_grad():
            v = y[0]
        return (v._base is y, v.requires_grad, v.is_leaf, v.grad_fn is None,
                v._version == y._version)
    assert run(torch) == run(ndgrad) == (True, True, True, True, True)


def test_as_strided_and_unfold_views_read_through():
    def run(L):
        x = L.arange(12.0, dtype=L.float64)
        a = x.as_strided((2, 3), (3, 1), 2)
        u = x.unfold(0, 4, 3)
        x[5] = -1.0
        return values(a).tolist(), values(u).tolist(), a._base is x, u._base is x
    assert run(torch) == run(ndgrad)


@pytest.mark.parametrize("name", VIEW_OPS)
def test_view_of_tensor_requiring_grad_grad_fn_and_gradient(name):
    def run(L):
        x = base3(L).requires_grad_()
        y = x * 1
        v = VIEW_OPS[name](y)
        c = L.arange(v.numel(), dtype=L.float64).reshape(v.shape)
        (v * c).sum().backward()
        return (v.grad_fn.name(), v._base is y, v.requires_grad, v.is_leaf,
                values(x.grad).tolist())
    assert run(torch) == run(ndgrad)
