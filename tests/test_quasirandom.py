"""ndgrad.quasirandom.SobolEngine (Note [Sobol' sequences]) against torch's: the same points,
bit for bit, plain and scrambled, in float32 and float64, through draw, draw_base2,
fast_forward and reset, the same state tensors, repr and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad


def _run(m):
    out = []
    for dim, scramble, seed in ((3, False, None), (5, True, 0), (40, True, 7), (1, True, 3)):
        e = m.quasirandom.SobolEngine(dim, scramble=scramble, seed=seed)
        out += [repr(e), e.draw(5).numpy(), e.draw(7, dtype=m.float64).numpy(), e.quasi.numpy()]
        e.fast_forward(9)
        out.append(e.draw(3).numpy())
        e.reset()
        out += [e.draw_base2(3, dtype=m.float64).numpy(), e.sobolstate.numpy(),
                e.shift.numpy()]
    dt = m.get_default_dtype()
    m.set_default_dtype(m.float64)
    try:
        e = m.quasirandom.SobolEngine(4, scramble=True, seed=11)  # first point: float64
        out += [e.draw(1).numpy(), e.draw(1).numpy()]
    finally:
        m.set_default_dtype(dt)
    e = m.quasirandom.SobolEngine(4, scramble=True, seed=11)
    e.fast_forward(1)
    out.append(e.draw(2, dtype=m.float64).numpy())
    return out


def test_points_match_torch():
    for got, want in zip(_run(ndgrad), _run(torch)):
        if isinstance(want, str):
            assert got == want
        else:
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_errors_match_torch():
    def errors(m):
        out = []
        cases = [lambda: m.quasirandom.SobolEngine(0), lambda: m.quasirandom.SobolEngine(21202),
                 lambda: m.quasirandom.SobolEngine(2).draw(3, dtype=m.int64),
                 lambda: m.quasirandom.SobolEngine(2).draw(0)]
        e = m.quasirandom.SobolEngine(2)
        e.draw(3)
        cases.append(lambda: e.draw_base2(2))
        for c in cases:
            with pytest.raises(Exception) as err:
                c()
            out.append((err.type, str(err.value)))
        return out

    assert errors(ndgrad) == errors(torch)
