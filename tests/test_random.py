"""ndgrad's random numbers against torch's for the same seed (Note [Random streams] in
ndgrad/_generator.py): bit-identical permutations, integers, uniforms and normals (float32's
vectorized Box-Muller: Note [Float32 Box-Muller]); generator state, forking and seeding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad


def _calls(lib):
    lib.manual_seed(7)
    return [lib.rand(5), lib.randn(3), lib.randn(3, dtype=lib.float64), lib.randn(40),
            lib.rand(2, 3, dtype=lib.float64), lib.randn(1), lib.randn(17, dtype=lib.float64),
            lib.randn(4, dtype=lib.complex64), lib.rand(3, dtype=lib.complex128),
            lib.randint(0, 5, (4,)), lib.randint(-3, 2 ** 40, (3,)), lib.randperm(7),
            lib.rand(20, dtype=lib.float16), lib.randn(5, dtype=lib.bfloat16)]


def test_sequence_of_calls_matches_torch():
    for t, n in zip(_calls(torch), _calls(ndgrad)):
        t = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
        n = n.float().numpy() if n.dtype == ndgrad.bfloat16 else n.numpy()
        assert t.dtype == n.dtype and t.shape == n.shape
        np.testing.assert_array_equal(n, t)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("bounds", [(-1 / 3, 0.7), (0.0, 1.0), (2.5, 1000.0)])
def test_uniform_is_bit_identical(dtype, bounds):
    torch.manual_seed(3)
    t = torch.empty(500, dtype=getattr(torch, dtype)).uniform_(*bounds).float().numpy()
    ndgrad.manual_seed(3)
    n = ndgrad.nn.init.uniform_(ndgrad.empty(500, dtype=getattr(ndgrad, dtype)), *bounds)
    np.testing.assert_array_equal(n.float().numpy(), t)


@pytest.mark.parametrize("n", [5, 40])
def test_normal_matches(n):
    for dtype, tol in (("float64", 0), ("float32", 0)):
        g1 = torch.Generator().manual_seed(9)
        g2 = ndgrad.Generator().manual_seed(9)
        t = torch.empty(n, dtype=getattr(torch, dtype)).normal_(1.5, 0.5, generator=g1)
        m = ndgrad.nn.init.normal_(ndgrad.empty(n, dtype=getattr(ndgrad, dtype)), 1.5, 0.5,
                                   generator=g2)
        np.testing.assert_allclose(m.numpy(), t.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("size,mean,std", [((16,), 0.0, 1.0), ((1000, 17), 0.0, 1.0),
                                           ((250003,), 0.0, 1.0), ((77,), -2.5, 0.01),
                                           ((64, 3), 1e3, 7.0)])
def test_float32_box_muller_is_bit_identical(size, mean, std):
    # Note [Float32 Box-Muller]: Cephes log/sincos in float32 with torch's fused steps
    torch.manual_seed(11)
    t = torch.empty(size).normal_(mean, std).numpy()
    ndgrad.manual_seed(11)
    n = ndgrad.nn.init.normal_(ndgrad.empty(size), mean, std).numpy()
    np.testing.assert_array_equal(n, t)


def test_state_seed_and_fork():
    g = ndgrad.Generator().manual_seed(5)
    assert g.initial_seed() == 5
    state = g.get_state()
    a = ndgrad.rand(4, generator=g)
    g.set_state(state)
    assert (ndgrad.rand(4, generator=g) == a).all()
    ndgrad.manual_seed(2)
    with ndgrad.random.fork_rng():
        ndgrad.randn(10)
    assert (ndgrad.rand(3) == ndgrad.rand(3, generator=ndgrad.Generator().manual_seed(2))).all()
    assert ndgrad.initial_seed() == 2 and isinstance(ndgrad.manual_seed(1), ndgrad.Generator)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):   # as torch 2.13
        ndgrad.Generator().manual_seed(2 ** 64)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        ndgrad.manual_seed(-2 ** 63 - 1)
    g = ndgrad.Generator().manual_seed(5)
    c = g.clone_state()
    assert c is not g and c.initial_seed() == 5 and ndgrad.equal(c.get_state(), g.get_state())
    with pytest.raises(NotImplementedError, match="graphsafe_get_state is not supported"):
        g.graphsafe_get_state()
    with pytest.raises(NotImplementedError, match="graphsafe_set_state is not supported"):
        g.graphsafe_set_state(c)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ndgrad.randperm(-1)


def test_state_keeps_the_cached_normal_sample():
    """A small randn keeps its second Box-Muller value for the next call (as torch does);
    get_state/set_state carry it, so a restored generator continues identically."""
    g = ndgrad.Generator().manual_seed(3)
    ndgrad.randn(1, generator=g)            # leaves a cached sample
    state = g.get_state()
    a = ndgrad.randn(3, generator=g)
    g.set_state(state)
    assert (ndgrad.randn(3, generator=g) == a).all()


def test_state_bytes_are_torchs_and_round_trip():
    # Note [Generator state layout]: the same 5056 bytes as torch after each kind of draw
    # (a fresh seed, mid-key, a cached normal, a whole key used), loadable across libraries
    def states(m):
        g = m.Generator().manual_seed(123)
        out = [g.get_state().numpy().copy()]
        for draw in (lambda: m.rand(3, generator=g),
                     lambda: m.randn(1, generator=g, dtype=m.float64),
                     lambda: m.randn(1, generator=g),
                     lambda: m.rand(617, generator=g),       # exactly the rest of the key
                     lambda: m.randint(0, 5, (700,), generator=g)):
            draw()
            out.append(g.get_state().numpy().copy())
        return out

    for a, b in zip(states(torch), states(ndgrad)):
        np.testing.assert_array_equal(a, b)
    tg = torch.Generator().manual_seed(5)
    torch.randn(3, generator=tg)            # leaves a cached normal sample
    ng = ndgrad.Generator().set_state(ndgrad.tensor(tg.get_state().numpy()))
    np.testing.assert_array_equal(ndgrad.randn(5, generator=ng).numpy(),
                                  torch.randn(5, generator=tg).numpy())
    assert ndgrad.get_rng_state().shape == torch.get_rng_state().shape


def test_set_state_errors_match_torch():
    def errors(m):
        out = []
        for bad in (np.zeros(5056, np.uint8), [0] * 3, m.zeros(5056),
                    m.zeros(10, dtype=m.uint8), m.zeros(5056, dtype=m.uint8)):
            with pytest.raises((TypeError, RuntimeError)) as e:
                m.Generator().set_state(bad)
            out.append((e.type, str(e.value)))
        return out

    assert errors(ndgrad) == errors(torch)


@pytest.mark.parametrize("value", ["3", 1.5, None, np.int64(3), True, 7])
def test_generator_manual_seed_argument_as_torch(value):
    def run(lib, v):
        try:
            return lib.Generator().manual_seed(v).initial_seed()
        except (RuntimeError, TypeError) as e:
            return type(e), str(e)
    assert run(ndgrad, value) == run(torch, value)
    if value is not None:                  # the function converts with int() first
        assert ndgrad.manual_seed(value).initial_seed() == torch.manual_seed(value).initial_seed()
