"""``nn.DataParallel`` against torch's CPU-only build: the wrapper keeps the module, prefixes the
state dict with ``module.``, passes forward arguments through (positional and keyword), prints
the same repr, records a ``DataParallel.forward`` range; ``data_parallel`` raises as torch's."""

import numpy as np
import pytest
import torch

import ndgrad


class TwoArgs:
    """A module whose forward takes a keyword argument, built on either library."""

    @staticmethod
    def make(L):
        class M(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = L.nn.Linear(3, 2)
                self.register_buffer("scale", L.ones(2) * 2)

            def forward(self, x, shift=0.0):
                return self.lin(x) * self.scale + shift

        return M()


def test_wrapper_state_dict_repr_and_attributes_match_torch():
    out = []
    for L in (torch, ndgrad):
        L.manual_seed(0)
        inner = TwoArgs.make(L)
        dp = L.nn.DataParallel(inner, device_ids=None, output_device=None, dim=0)
        names = [n for n, _ in dp.named_parameters()]
        out.append((repr(dp).replace("TwoArgs.make.<locals>.", ""), list(dp.state_dict()),
                    names, dp.device_ids, dp.module is inner, hasattr(dp, "output_device"),
                    hasattr(dp, "dim")))
    assert out[1] == out[0]
    assert out[0][1] == ["module.scale", "module.lin.weight", "module.lin.bias"]


def test_forward_and_backward_pass_through():
    res = []
    for L in (torch, ndgrad):
        L.manual_seed(0)
        dp = L.nn.DataParallel(TwoArgs.make(L))
        x = L.tensor(np.arange(12.0).reshape(4, 3), dtype=L.float32, requires_grad=True)
        y = dp(x, shift=1.5)
        y.sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy(),
                    dp.module.lin.weight.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-6)


def test_state_dict_round_trip_between_wrapped_and_plain():
    dp = ndgrad.nn.DataParallel(ndgrad.nn.Linear(2, 2))
    plain = ndgrad.nn.Linear(2, 2)
    plain.load_state_dict(dp.module.state_dict())
    assert ndgrad.equal(plain.weight, dp.module.weight)
    with pytest.raises(RuntimeError, match=r"Missing key\(s\) in state_dict"):
        dp.load_state_dict(plain.state_dict())


def test_forward_records_a_profiler_range():
    dp = ndgrad.nn.DataParallel(ndgrad.nn.Linear(2, 2))
    with ndgrad.profiler.profile() as prof:
        dp(ndgrad.ones(1, 2))
    with torch.profiler.profile() as tprof:
        torch.nn.DataParallel(torch.nn.Linear(2, 2))(torch.ones(1, 2))
    key = "DataParallel.forward"
    assert key in {e.key for e in tprof.key_averages()}
    assert key in {e.key for e in prof.key_averages()}


def test_data_parallel_function_raises_like_cpu_torch():
    for L in (torch, ndgrad):
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            L.nn.parallel.data_parallel(L.nn.Linear(2, 2), L.ones(1, 2))
    assert ndgrad.nn.parallel.DataParallel is ndgrad.nn.DataParallel
