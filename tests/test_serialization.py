"""ndgrad.save / ndgrad.load (PyTorch's file format, both directions), weights-only safety,
corrupted files, and safetensors files exchanged with safetensors' torch API."""

from __future__ import annotations

import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest
import torch
from safetensors.torch import load_file as torch_st_load
from safetensors.torch import save_file as torch_st_save

import ndgrad
from ndgrad.utils import safetensors as nst

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool", "complex64", "complex128"]


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    ndgrad.save(obj, buf)
    buf.seek(0)
    return ndgrad.load(buf, **kw)


@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_round_trips_and_torch_reads_it(name):
    x = ndgrad.arange(6).reshape(2, 3).to(getattr(ndgrad, name))
    y = _roundtrip(x)
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    buf = io.BytesIO()
    ndgrad.save(x, buf)
    buf.seek(0)
    t = torch.load(buf)
    assert str(t.dtype) == "torch." + name
    np.testing.assert_array_equal(t.float().numpy() if name == "bfloat16" else t.numpy(),
                                  x.float().numpy() if name == "bfloat16" else x.numpy())


def test_containers_and_metadata_round_trip():
    obj = {"od": collections.OrderedDict(w=ndgrad.ones(2)), "l": [1, 2.5, None, "s", b"xy"],
           "t": (ndgrad.tensor(3.0), ndgrad.zeros(0, 3)), "size": ndgrad.Size([2, 3]),
           "dtype": ndgrad.float64, "dev": ndgrad.device("cpu"), "set": {1, 2},
           "grad": ndgrad.ones(2, requires_grad=True)}
    out = _roundtrip(obj)
    assert isinstance(out["od"], collections.OrderedDict)
    assert out["l"] == [1, 2.5, None, "s", b"xy"]
    assert out["t"][0].item() == 3.0 and tuple(out["t"][1].shape) == (0, 3)
    assert out["size"] == ndgrad.Size([2, 3]) and isinstance(out["size"], ndgrad.Size)
    assert out["dtype"] is ndgrad.float64 and out["set"] == {1, 2}
    assert out["grad"].requires_grad and out["grad"].is_leaf


def test_views_and_shared_storage_survive():
    x = ndgrad.arange(12.0).reshape(3, 4)
    out = _roundtrip({"x": x, "view": x[1:, ::2], "t": x.t(), "other": ndgrad.ones(2)})
    assert np.shares_memory(out["x"].numpy(), out["view"].numpy())
    assert np.shares_memory(out["x"].numpy(), out["t"].numpy())
    assert not np.shares_memory(out["x"].numpy(), out["other"].numpy())
    out["x"][2, 0] = -1.0
    assert out["view"][1, 0].item() == -1.0
    buf = io.BytesIO()
    ndgrad.save({"x": x, "view": x[1:, ::2]}, buf)
    buf.seek(0)
    t = torch.load(buf)
    assert t["view"].untyped_storage().data_ptr() == t["x"].untyped_storage().data_ptr()
    assert t["view"].tolist() == [[4.0, 6.0], [8.0, 10.0]]


def test_torch_checkpoint_loads_into_ndgrad():
    x = torch.arange(6.0).reshape(2, 3)
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters())
    model(x).sum().backward()
    opt.step()
    buf = io.BytesIO()
    torch.save({"x": x, "row": x[1], "model": model.state_dict(), "opt": opt.state_dict(),
                "p": torch.nn.Parameter(torch.ones(2)), "size": x.shape}, buf)
    buf.seek(0)
    out = ndgrad.load(buf)
    np.testing.assert_array_equal(out["row"].numpy(), [3.0, 4.0, 5.0])
    assert np.shares_memory(out["x"].numpy(), out["row"].numpy())
    assert list(out["model"]) == ["weight", "bias"]
    np.testing.assert_array_equal(out["model"]["weight"].numpy(),
                                  model.weight.detach().numpy())
    assert out["opt"]["state"][0]["step"].item() == 1.0
    assert out["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert out["p"].requires_grad and out["size"] == ndgrad.Size([2, 3])


def test_optimizer_state_dict_round_trip():
    w = ndgrad.ones(3, requires_grad=True)
    opt = ndgrad.optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    sd = _roundtrip(opt.state_dict())
    opt2 = ndgrad.optim.Adam([ndgrad.ones(3, requires_grad=True)], lr=0.1)
    opt2.load_state_dict(sd)
    assert opt2.state_dict()["state"][0]["exp_avg"].tolist() == \
        opt.state_dict()["state"][0]["exp_avg"].tolist()


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


class _Plain:
    def __init__(self):
        self.value = 7


def test_weights_only_refuses_code_and_opt_in_loads_objects(tmp_path):
    marker = tmp_path / "ran"

    class Touch:
        def __reduce__(self):
            return (open, (str(marker), "w"))
    for payload in (_Evil(), Touch()):
        buf = io.BytesIO()
        torch.save(payload, buf)
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            ndgrad.load(buf)
    assert not marker.exists()
    buf = io.BytesIO()
    ndgrad.save(_Plain(), buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        ndgrad.load(buf)
    buf.seek(0)
    with pytest.warns(UserWarning, match="arbitrary code"):
        assert ndgrad.load(buf, weights_only=False).value == 7


def _rewrite(data: bytes, name: str, new: bytes) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n in src.namelist():
            z.writestr(n, new if n.endswith(name) else src.read(n))
    return out.getvalue()


def test_corrupted_files_give_clear_errors(tmp_path):
    buf = io.BytesIO()
    ndgrad.save({"x": ndgrad.arange(10.0)}, buf)
    data = buf.getvalue()
    for cut in (len(data) // 2, 10, 0):
        with pytest.raises(RuntimeError, match="failed reading zip archive"):
            ndgrad.load(io.BytesIO(data[:cut]))
    with pytest.raises(RuntimeError, match="truncated"):
        ndgrad.load(io.BytesIO(_rewrite(data, "data/0", b"\0" * 8)))
    with pytest.raises(RuntimeError, match="data.pkl"):
        ndgrad.load(io.BytesIO(_rewrite(data, "data.pkl", b"")))
    # a tensor claiming more elements than its storage holds
    y = ndgrad.arange(4.0)
    buf = io.BytesIO()
    ndgrad.save(y, buf)
    pkl = zipfile.ZipFile(io.BytesIO(buf.getvalue())).read("archive/data.pkl")
    bad = pkl.replace(b"K\x04\x85", b"K\x09\x85")
    assert bad != pkl
    with pytest.raises(RuntimeError, match="does not fit its storage"):
        ndgrad.load(io.BytesIO(_rewrite(buf.getvalue(), "data.pkl", bad)))
    path = tmp_path / "x.pt"
    path.write_bytes(b"not a checkpoint at all")
    with pytest.raises(RuntimeError, match="failed reading zip archive"):
        ndgrad.load(path)


def test_safetensors_both_ways(tmp_path):
    t = {"a": torch.randn(3, 4, dtype=torch.float64), "b": torch.ones(2, dtype=torch.bfloat16),
         "c": torch.arange(5), "d": torch.tensor([True, False])}
    torch_st_save(t, tmp_path / "t.safetensors")
    got = nst.load_file(tmp_path / "t.safetensors")
    assert set(got) == set(t)
    for k in t:
        assert str(got[k].dtype).split(".")[-1] == str(t[k].dtype).split(".")[-1]
        np.testing.assert_array_equal(got[k].float().numpy(), t[k].float().numpy())
    nd = {"x": ndgrad.arange(6.0).reshape(2, 3).t(), "bf": ndgrad.ones(2, dtype=ndgrad.bfloat16)}
    nst.save_file(nd, tmp_path / "n.safetensors", metadata={"format": "pt"})
    back = torch_st_load(tmp_path / "n.safetensors")
    np.testing.assert_array_equal(back["x"].numpy(), nd["x"].numpy())
    assert back["bf"].dtype == torch.bfloat16
    with pytest.raises(TypeError, match="expected a Tensor"):
        nst.save({"x": 1.0})
    with pytest.raises(ValueError, match="no safetensors code"):
        nst.save({"x": ndgrad.ones(1, dtype=ndgrad.complex64)})


def test_weights_only_loads_a_multisteplr_state_with_its_counter():
    # MultiStepLR keeps its milestones in a collections.Counter: torch's weights-only loader
    # allows that class, so a checkpoint holding the scheduler's state loads with the default
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[3, 6, 6], gamma=0.5)
    buf = io.BytesIO()
    torch.save({"sched": sched.state_dict()}, buf)
    buf.seek(0)
    got = ndgrad.load(buf)["sched"]
    assert type(got["milestones"]) is collections.Counter
    assert got["milestones"] == collections.Counter({3: 1, 6: 2})
    nopt = ndgrad.optim.SGD([ndgrad.zeros(1, requires_grad=True)], lr=0.1)
    nsched = ndgrad.optim.lr_scheduler.MultiStepLR(nopt, milestones=[1])
    buf = io.BytesIO()
    ndgrad.save(nsched.state_dict(), buf)
    buf.seek(0)
    assert torch.load(buf)["milestones"] == collections.Counter({1: 1})
    buf.seek(0)
    assert ndgrad.load(buf)["milestones"] == collections.Counter({1: 1})
