"""``ndgrad.strided``/``sparse_coo`` ... as torch's layout objects: what ``Tensor.layout``
returns, compared by identity, printed and pickled as torch's; ``newaxis``."""

import io
import pickle

import pytest
import torch

import ndgrad

NAMES = ["strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc",
         "jagged"]


@pytest.mark.parametrize("name", NAMES)
def test_layout_constants(name):
    ours, theirs = getattr(ndgrad, name), getattr(torch, name)
    assert isinstance(ours, ndgrad.layout) and isinstance(theirs, torch.layout)
    assert repr(ours).replace("ndgrad", "torch") == repr(theirs) == str(theirs)
    assert pickle.loads(pickle.dumps(ours)) is ours
    with pytest.raises(TypeError):
        ndgrad.layout()


def test_tensor_layouts_match_torch():
    for lib in (torch, ndgrad):
        t = lib.zeros(2, 3)
        s = t.to_sparse()
        assert t.layout is lib.strided and s.layout is lib.sparse_coo
        assert t.layout != lib.sparse_coo and (t.layout == lib.strided)
        assert s.to_dense().layout is lib.strided
        assert lib.zeros(2)[lib.newaxis].shape == (1, 2)
    buf = io.BytesIO()
    ndgrad.save(ndgrad.eye(2).to_sparse(), buf)
    buf.seek(0)
    assert ndgrad.load(buf).layout is ndgrad.sparse_coo


# Factories' layout= and pin_memory= keywords (Note [Layout and pinned-memory arguments]):
# each call made on both libraries; a result compares by layout, shape, dtype, values and
# requires_grad, an error by type and message (ndgrad names its own layouts).
FACTORY_CALLS = [
    "zeros(2, 3, layout=L.strided)", "zeros(2, 3, layout=L.sparse_coo)",
    "empty(2, 2, layout=L.sparse_coo)", "zeros(2, layout=L.sparse_coo, requires_grad=True)",
    "ones(2, layout=L.sparse_coo)", "full((2,), 1.0, layout=L.sparse_coo)",
    "zeros(2, layout='strided')", "zeros(2, pin_memory=True)", "zeros(2, pin_memory=None)",
    "zeros(2, pin_memory=1)", "arange(3, pin_memory=True)", "arange(3, pin_memory=False)",
    "linspace(0, 1, 3, layout=L.strided, pin_memory=False)", "eye(2, layout=L.strided)",
    "rand(2, pin_memory=False).shape", "randn(2, layout=L.strided).shape",
    "randint(3, (2,), layout=L.strided, pin_memory=False).shape",
    "randperm(3, layout=L.strided, pin_memory=False).shape",
    "zeros_like(L.ones(2), layout=L.sparse_coo)", "empty_like(L.ones(2), pin_memory=False).shape",
    "ones_like(L.ones(2), layout=None)", "full_like(L.ones(2), 2.0, pin_memory=False)",
    "tensor([1.0], pin_memory=False)", "tensor([1.0], pin_memory=True)",
    "ones(2).new_zeros(3, layout=L.sparse_coo)", "ones(2).new_ones(3, pin_memory=True)",
    "ones(2).new_full((2,), 3.0, layout=L.strided)", "ones(2).new_empty(2, foo=1)",
    "scalar_tensor(2.0, layout=L.strided, pin_memory=False)",
    "empty_strided((2,), (1,), pin_memory=False).shape",
    "logspace(0, 1, 2, layout=L.strided, pin_memory=False)",
    "fft.fftfreq(3, layout=L.strided, pin_memory=False)",
    "hann_window(3, layout=L.strided, pin_memory=False)",
]


def _outcome(lib, call):
    try:
        r = eval("L." + call, {"L": lib})  # noqa: S307
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e), str(e).split("\n")[0]
    if isinstance(r, tuple):
        return tuple(r)
    values = [round(v, 6) for v in r.to_dense().reshape(-1).tolist()]
    return (str(r.layout).split(".")[1], tuple(r.shape), str(r.dtype).split(".")[1], values,
            r.requires_grad)


@pytest.mark.parametrize("call", FACTORY_CALLS)
def test_factory_layout_and_pin_memory_keywords(call):
    ours, theirs = _outcome(ndgrad, call), _outcome(torch, call)
    if isinstance(theirs[0], type) and issubclass(theirs[0], Exception):
        assert ours[0] is theirs[0], (ours, theirs)
        assert ours[1].replace("ndgrad", "torch") == theirs[1] or (
            "torch.layout" in theirs[1] and "must be layout" in ours[1]), (ours, theirs)
    else:
        assert ours == theirs


def test_factory_layouts_torch_cannot_make_are_refused_clearly():
    # torch dispatches these to sparse kernels that do not exist; ndgrad says what it makes
    for call in (lambda: ndgrad.randn(2, layout=ndgrad.sparse_csr),
                 lambda: ndgrad.eye(2, layout=ndgrad.sparse_coo),
                 lambda: ndgrad.randint(3, (2,), layout=ndgrad.sparse_coo)):
        with pytest.raises(NotImplementedError, match="layout=ndgrad.sparse_"):
            call()


def test_sparse_printing_matches_torch():
    def shown(lib):
        lib.manual_seed(0)
        a = lib.tensor([[0, 1.0]], requires_grad=True).to_sparse()
        items = [lib.zeros(2, layout=lib.sparse_coo, requires_grad=True),
                 lib.tensor([[0, 1.0]], dtype=lib.float64).to_sparse(), a, a * 2,
                 lib.tensor([[0, 1]]).to_sparse(), lib.randn(3, 12).to_sparse()]
        return "\n".join(repr(x) for x in items).replace(lib.__name__ + ".", "L.")
    assert shown(ndgrad) == shown(torch)
