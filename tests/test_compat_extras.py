"""The names outside the top level (compat, session 22): ``nn.init.eye``/``dirac``,
``utils.data.DistributedSampler``, ``func.functionalize``,
``func.replace_all_batch_norm_modules_``, ``autograd.is_tensor_like`` and
``nn.utils.convert_conv2d_weight_memory_format``, against torch."""

import numpy as np
import pytest
import torch

import ndgrad


@pytest.mark.parametrize("name,shape", [("eye", (3, 4)), ("dirac", (4, 2, 3, 3))])
def test_deprecated_init_aliases(name, shape):
    res = []
    for m in (torch, ndgrad):
        x = m.empty(*shape)
        with pytest.warns(FutureWarning, match=f"nn.init.{name}` is now deprecated"):
            getattr(m.nn.init, name)(x)
        res.append(x.tolist())
    assert res[0] == res[1]


@pytest.mark.parametrize("kw", [dict(num_replicas=3, rank=1), dict(num_replicas=3, rank=2,
                                seed=5), dict(num_replicas=3, rank=1, shuffle=False,
                                              drop_last=True), dict(num_replicas=4, rank=0)])
def test_distributed_sampler_matches_torch(kw):
    res = []
    for m in (torch, ndgrad):
        s = m.utils.data.DistributedSampler(range(10), **kw)
        out = [list(s), len(s)]
        s.set_epoch(3)
        out.append(list(s))
        res.append(out)
    assert res[0] == res[1]
    for m in (torch, ndgrad):
        with pytest.raises(ValueError, match="Invalid rank 3"):
            m.utils.data.DistributedSampler(range(10), num_replicas=3, rank=3)


def test_functionalize_same_results_and_checks():
    def f(x):
        y = x.clone()
        y.mul_(2)
        x.add_(1)
        return y.sin()
    # torch.func.functionalize traces f (seconds per call); its contract is f's results and
    # effects, so the reference is torch running f itself
    # (torch.func.grad's first call costs seconds too: torch's gradient comes from autograd)
    x = torch.tensor([0.5, 1.5], dtype=torch.float64)
    xg = x.clone().requires_grad_()
    ref = (f(x).tolist(), x.tolist(), torch.autograd.grad((xg * xg).sin().sum(), xg)[0].tolist())
    y = ndgrad.tensor([0.5, 1.5], dtype=ndgrad.float64)
    out = ndgrad.func.functionalize(f)(y)
    g = ndgrad.func.grad(ndgrad.func.functionalize(lambda u: (u * u).sin().sum()))(
        ndgrad.tensor([0.5, 1.5], dtype=ndgrad.float64))
    assert ref == (out.tolist(), y.tolist(), g.tolist())
    for m in (torch, ndgrad):
        with pytest.raises(RuntimeError, match="received invalid argument for remove=x"):
            m.func.functionalize(f, remove="x")
    ndgrad.func.functionalize(f, remove="mutations_and_views")


def test_replace_all_batch_norm_modules():
    res = []
    for m in (torch, ndgrad):
        net = m.nn.Sequential(m.nn.BatchNorm1d(3), m.nn.Sequential(m.nn.BatchNorm2d(2)),
                              m.nn.Linear(2, 2))
        assert m.func.replace_all_batch_norm_modules_(net) is net
        bn = net[1][0]
        res.append((net[0].running_mean, net[0].running_var, bn.num_batches_tracked,
                    bn.track_running_stats, net[2].weight.shape[0]))
        net.eval()
        x = m.tensor(np.arange(12.0).reshape(4, 3), dtype=m.float32)
        res.append(net[0](x).detach().numpy().round(5).tolist())
    assert res[0] == res[2] and res[1] == res[3]


def test_is_tensor_like():
    class Wrapper:
        @classmethod
        def __torch_function__(cls, *args, **kwargs):
            return NotImplemented

    for m in (torch, ndgrad):
        f = m.autograd.is_tensor_like
        assert f(m.ones(1)) and f(m.Tensor) and f(Wrapper()) and f(Wrapper)
        assert not f(3) and not f(np.ones(2)) and not f([m.ones(1)])


def test_convert_conv_weight_memory_format():
    for m in (torch, ndgrad):
        net = m.nn.Sequential(m.nn.Conv2d(2, 3, 3), m.nn.Sequential(m.nn.ConvTranspose2d(3, 2, 2)),
                              m.nn.Conv1d(2, 2, 1), m.nn.Conv3d(1, 2, 2))
        w0 = net[0].weight.detach().clone()
        out = m.nn.utils.convert_conv2d_weight_memory_format(net, m.channels_last)
        assert out is net
        assert net[0].weight.is_contiguous(memory_format=m.channels_last)
        assert not net[0].weight.is_contiguous()
        assert net[1][0].weight.is_contiguous(memory_format=m.channels_last)
        assert net[0].weight.tolist() == w0.tolist()
        assert isinstance(net[0].weight, m.nn.Parameter) and net[0].weight.requires_grad
        m.nn.utils.convert_conv3d_weight_memory_format(net, m.channels_last_3d)
        assert net[3].weight.is_contiguous(memory_format=m.channels_last_3d)
