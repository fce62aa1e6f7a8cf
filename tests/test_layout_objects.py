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
