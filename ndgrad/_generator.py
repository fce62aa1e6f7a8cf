"""``Generator``: a seedable random-number generator with torch's CPU engine.

Note [Random streams]
torch's CPU generator is a 32-bit Mersenne Twister (MT19937) seeded with the low 32 bits of the
seed by the reference initialisation; NumPy's ``MT19937`` reproduces that engine exactly
(``_legacy_seeding``). ndgrad's ``Generator`` owns one such engine and draws from it the way
torch does, so the same seed and the same calls give torch's numbers:

- ``randperm``: Fisher-Yates with ``random() % (n - i)``; ``randint``: ``random() % range +
  low`` (64-bit draws for ranges of 2**32 or more); the int64 seed a sampler draws: one 64-bit
  value (high word first); ``random_()`` without bounds: one draw per element modulo the
  dtype's range (``random_full_array``). Hence ``RandomSampler``, ``DataLoader(shuffle=True)`` and
  ``random_split`` visit torch's order.
- uniform floats (``rand``, ``uniform_``): 53 bits of a 64-bit draw for float64 (then a fused
  multiply-add), else 24 bits of one 32-bit draw, scaled in double: bit-identical, so a layer's
  default initialisation gives torch's weights.
- normal floats (``randn``, ``normal_``): Box-Muller on those uniforms, 16 at a time for tensors
  of 16 or more elements, else one pair at a time with the second value kept for the next call:
  bit-identical in float64 and float32 (Note [Float32 Box-Muller]); float16/bfloat16 tensors of
  16 or more elements differ.

- bernoulli: one uniform per element, 1 where it is below ``p``: a float64 uniform for a
  number ``p`` (``bernoulli_(0.3)``, hence dropout's masks: ``bernoulli_(1 - p)``), a uniform of
  ``p``'s dtype for a tensor of probabilities (``torch.bernoulli(probs)``): bit-identical.

- exponential: ``-1/lambd * log1p(-u)`` on float64 uniforms (bit-identical for ``lambd=1``,
  within two units in the last place otherwise); ``multinomial``: for one sample or without
  replacement, the indices of the largest ``p / q`` with ``q`` exponential(1) draws of ``p``'s
  shape; with replacement, per row a binary search of float64 uniforms in the normalized
  cumulative sums (accumulated in ``p``'s dtype): bit-identical.
- rrelu's slopes in training: one float64 uniform per element that is not positive, in
  row-major order (ops/nn_activation.py ``_rrelu_noise``): bit-identical.

- cauchy, geometric: ``median + sigma * tan(pi * (u - 0.5))`` and ``ceil(log(u) / log1p(-p))``
  on float64 uniforms; log_normal: ``exp`` of one-at-a-time Box-Muller normals (as small
  ``randn``): bit-identical up to the last place of ``tan``/``log``/``exp``.

- gamma (``Gamma``, ``Chi2``, ``Dirichlet``, ``Beta`` ... draws): Marsaglia-Tsang per element on
  those float64 uniforms and one-at-a-time normals (``gamma_array``, Note [Fast gamma
  draws]); a NaN or too negative alpha gives the smallest normal number, as torch's.

Other distributions are drawn by NumPy's algorithms from the same engine (``Generator._np``):
reproducible within ndgrad, not torch's numbers.

Example:
    >>> import ndgrad
    >>> g = ndgrad.Generator().manual_seed(42)
    >>> ndgrad.randperm(6, generator=g)
    tensor([0, 3, 2, 4, 1, 5])
"""

from __future__ import annotations

from typing import Any, Optional

import math

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["Generator", "default_generator"]

_DEFAULT_SEED = 67280421310721
# Note [Generator state layout]
# get_state returns torch's CPU generator state byte for byte (5056 bytes, x86-64 layout of
# torch's CPUGeneratorImplState): the seed (u64), ``left`` (i32: draws until the engine
# regenerates its 624-word key, plus one), ``seeded`` (i32), ``next`` (u64: the key index read
# next), the key widened to 624 u64 words, three doubles of which the second is the cached
# normal sample, an i32 saying it is valid, 4 bytes of padding, a cached float normal and its
# bool (unused by ndgrad: 0 and false), 3 bytes of padding. NumPy's MT19937 keeps one read
# position ``pos`` (624: regenerate first); torch's ``left = 625 - pos`` and ``next = pos``,
# except that a freshly seeded engine reads as ``next = 0`` where one that has used its whole
# key reads ``next = 624`` (both ``pos = 624``): the generator remembers the key it was seeded
# (or restored) with at ``pos = 624`` to tell them apart. States round-trip between torch and
# ndgrad.
_STATE_BYTES = 5056
_KEY_AT, _NORMAL_AT, _FLOAT_AT = 24, 5016, 5048


class Generator:
    """A random generator (``ndgrad.Generator().manual_seed(0)``): pass it as ``generator=``
    to random functions, samplers and ``random_split``."""

    _mt: np.random.MT19937
    _np: np.random.Generator

    def __init__(self, device: Any = "cpu") -> None:
        self._device = str(device)
        self.manual_seed(_DEFAULT_SEED)

    @property
    def device(self) -> Any:
        from .tensor import device as _device  # local import: tensor.py is a sibling module
        return _device("cpu")

    def manual_seed(self, seed: int) -> "Generator":
        """Seed the engine (returns the generator, so ``Generator().manual_seed(1)`` chains).
        The seed must be a Python int, as torch's method requires (``ndgrad.manual_seed``
        converts with ``int()`` first, as torch's function does)."""
        if seed.__class__ is not int:
            if isinstance(seed, np.integer):
                raise TypeError("an integer is required")
            if isinstance(seed, bool) or not isinstance(seed, int):
                name = "Tensor" if seed.__class__.__name__ == "Tensor" else type(seed).__name__
                raise RuntimeError(f"manual_seed expected a long, but got {name}")
            seed = int(seed)
        if seed < 0:
            if seed < -(2 ** 63):
                raise ValueError("Overflow when unpacking long long")
            seed += 2 ** 64
        elif seed >= 2 ** 64:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed
        fresh = np.random.MT19937(0)
        fresh._legacy_seeding(seed & 0xFFFFFFFF)
        if hasattr(self, "_mt"):
            self._mt.state = fresh.state     # keep the objects: ``_np`` may be held elsewhere
        else:
            self._mt = fresh
            self._np = np.random.Generator(self._mt)
        self._next_normal: Optional[float] = None
        self._fresh_key: Optional[np.ndarray] = self._mt.state["state"]["key"].copy()
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed."""
        entropy = np.random.SeedSequence().entropy
        assert isinstance(entropy, int)      # drawn from the OS when none is given
        s = int(entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed last set."""
        return self._seed

    def clone_state(self) -> "Generator":
        """A new generator in this one's state.

        >>> g = Generator().manual_seed(3)
        >>> g.clone_state().initial_seed()
        3
        """
        g = Generator()
        g.set_state(self.get_state())
        return g

    def graphsafe_get_state(self) -> "Generator":
        """CUDA graphs' state handling: not for the CPU generator (torch's error)."""
        raise NotImplementedError("graphsafe_get_state is not supported in this Generator")

    def graphsafe_set_state(self, state: Any) -> "Generator":
        """CUDA graphs' state handling: not for the CPU generator (torch's error)."""
        raise NotImplementedError("graphsafe_set_state is not supported in this Generator")

    def get_state(self) -> Any:
        """The engine's state as a uint8 tensor in torch's layout (Note [Generator state
        layout]), for ``set_state``."""
        from ._creation import tensor  # local import: _creation imports this module
        st = self._mt.state["state"]
        key, pos = st["key"], int(st["pos"])
        nxt = pos
        if pos >= 624:
            fresh = self._fresh_key
            nxt = 0 if fresh is not None and np.array_equal(fresh, key) else 624
        buf = np.zeros(_STATE_BYTES, np.uint8)
        head = np.array([self._seed], np.uint64).view(np.uint8)
        buf[0:8] = head
        buf[8:16] = np.array([625 - pos, 1], np.int32).view(np.uint8)
        buf[16:24] = np.array([nxt], np.uint64).view(np.uint8)
        buf[_KEY_AT:_NORMAL_AT] = key.astype(np.uint64).view(np.uint8)
        cached = 0.0 if self._next_normal is None else self._next_normal
        buf[_NORMAL_AT:_NORMAL_AT + 24] = np.array([0.0, cached, 0.0]).view(np.uint8)
        buf[_NORMAL_AT + 24:_NORMAL_AT + 28] = np.array(
            [self._next_normal is not None], np.int32).view(np.uint8)
        return tensor(buf)

    def set_state(self, new_state: Any) -> "Generator":
        """Restore a state from ``get_state`` (ndgrad's or torch's: the same bytes)."""
        from .tensor import Tensor  # local import: tensor.py is a sibling module
        if not isinstance(new_state, Tensor):
            kind = type(new_state)
            name = kind.__name__ if kind.__module__ == "builtins" else \
                f"{kind.__module__.split('.')[0]}.{kind.__name__}"
            raise TypeError(f"expected a torch.ByteTensor, but got {name}")
        if new_state._data.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        arr = np.ascontiguousarray(new_state._data).reshape(-1)
        if arr.size != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but "
                               f"found the input RNG state size to be {arr.size}")
        seed = int(arr[0:8].view(np.uint64)[0])
        left, seeded = (int(v) for v in arr[8:16].view(np.int32))
        nxt = int(arr[16:24].view(np.uint64)[0])
        if not seeded or not 0 < left <= 624 or nxt > 624:
            raise RuntimeError("Invalid mt19937 state")
        key = arr[_KEY_AT:_NORMAL_AT].view(np.uint64).astype(np.uint32)
        pos = 624 if left == 1 else nxt
        st = self._mt.state
        st["state"] = {"key": key, "pos": pos}
        self._mt.state = st
        self._fresh_key = key.copy() if pos == 624 and nxt == 0 else None
        self._seed = seed
        normal_y = float(arr[_NORMAL_AT + 8:_NORMAL_AT + 16].view(np.float64)[0])
        valid = int(arr[_NORMAL_AT + 24:_NORMAL_AT + 28].view(np.int32)[0])
        self._next_normal = normal_y if valid else None
        return self

    def random32(self, n: int) -> np.ndarray:
        """``n`` raw 32-bit outputs of the engine (torch's ``random()``)."""
        return self._mt.random_raw(n).astype(np.uint64)

    def random64(self) -> int:
        """One 64-bit value from two 32-bit outputs, high word first (torch's
        ``random64()``)."""
        hi, lo = (int(v) for v in self._mt.random_raw(2))
        return (hi << 32) | lo

    def __repr__(self) -> str:
        return f"<ndgrad.Generator object at {hex(id(self))}>"


default_generator = Generator()
default_generator.seed()


# Note [Draws in traced functions]
# Random numbers drawn outside the op table (dropout's noise, ``rand``/``randn``/``randint``
# and their ``*_like`` forms, ``randperm``, ``multinomial``, ``normal`` of numbers, rrelu's
# slopes) go through ``draw(fn, *args)``: eagerly it is ``fn(*args)``; while a function is
# traced, ndgrad/jit/random_nodes.py installs a hook in ``TRACE_HOOK`` that also records a
# graph node running ``fn`` again at run time, so a compiled call draws what eager draws.
# ``fn`` is a module-level function of static arguments (shapes, dtypes, probabilities,
# generators) and Tensors (read at run time: the ``*_like`` layouts, multinomial's weights),
# returning an ndarray or a tuple of ndarrays. ``TRACE_HOOK[1]`` runs before an op of the table
# draws (``ops/sampling.py``), to check that nothing drew unrecorded before it.
TRACE_HOOK: list = [None, None]


def draw(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, recorded as a graph node while tracing (Note [Draws in traced
    functions])."""
    hook = TRACE_HOOK[0]
    if hook is None:
        return fn(*args)
    return hook(fn, args)


def numpy_generator(generator: Optional[Generator]) -> np.random.Generator:
    """The NumPy generator to draw from: ``generator``'s, or the default one's."""
    return (generator if generator is not None else default_generator)._np


def randint_array(low: int, high: int, shape: tuple, generator: Optional[Generator]
                  ) -> np.ndarray:
    """Integers in ``[low, high)`` drawn as torch draws them (Note [Random streams]):
    ``random() % range`` for ranges below 2**32, else ``random64() % range``."""
    g = generator if generator is not None else default_generator
    n = int(np.prod(shape, dtype=np.int64))
    span = int(high) - int(low)
    if span < 2 ** 32:
        vals = (g.random32(n) % np.uint64(span)).astype(np.int64) + int(low)
    else:
        raw = g._mt.random_raw(2 * n).astype(np.uint64).reshape(n, 2)
        v64 = (raw[:, 0] << np.uint64(32)) | raw[:, 1]
        vals = np.array([int(v) % span + int(low) for v in v64.tolist()], dtype=np.int64)
    return vals.reshape(shape)


# ``random_()`` with no bounds: one draw per element reduced modulo the dtype's range (the
# largest exactly representable integer plus one for floating types, max + 1 for integers),
# 64-bit draws for float64 and int64, ``& 1`` for bool (Note [Random streams]).
_FULL_RANGE = {"float64": 2 ** 53 + 1, "float32": 2 ** 24 + 1, "float16": 2 ** 11 + 1,
               "bfloat16": 2 ** 8 + 1, "int64": 2 ** 63, "int32": 2 ** 31, "int16": 2 ** 15,
               "int8": 2 ** 7, "uint8": 2 ** 8, "bool": 2}


def random_full_array(shape: tuple, dtype_name: str, generator: Optional[Generator]
                      ) -> np.ndarray:
    """``random_()``'s integers for a tensor of ``dtype_name`` (as uint64, in element order),
    drawn as torch draws them (Note [Random streams])."""
    g = generator if generator is not None else default_generator
    n = int(np.prod(shape, dtype=np.int64))
    if dtype_name in ("float64", "int64"):
        raw = g._mt.random_raw(2 * n).astype(np.uint64).reshape(n, 2)
        vals = (raw[:, 0] << np.uint64(32)) | raw[:, 1]
    else:
        vals = g.random32(n)
    return (vals % np.uint64(_FULL_RANGE[dtype_name])).reshape(shape)


_DIGITS = {"float64": 53}      # every other floating type: 24 bits of one 32-bit draw


def uniform_bits(g: Generator, n: int, dtype: DTypeLike) -> np.ndarray:
    """``n`` uniforms in [0, 1) as float64, from the engine as torch draws them for ``dtype``
    (Note [Random streams])."""
    digits = _DIGITS.get(str(np.dtype(dtype)), 24)
    if digits == 53:
        raw = g._mt.random_raw(2 * n).astype(np.uint64).reshape(n, 2)
        vals = (raw[:, 0] << np.uint64(32)) | raw[:, 1]
    else:
        vals = g._mt.random_raw(n).astype(np.uint64)
    return (vals & np.uint64((1 << digits) - 1)).astype(np.float64) * 2.0 ** -digits


def uniform_array(shape: tuple, low: float, high: float, dtype: np.dtype,
                  generator: Optional[Generator]) -> np.ndarray:
    """Uniform samples in ``[low, high)`` of ``dtype``, torch's numbers for the seed."""
    g = generator if generator is not None else default_generator
    n = int(np.prod(shape, dtype=np.int64))
    dtype = np.dtype(dtype)
    x = uniform_bits(g, n, dtype)
    if dtype == np.float64:     # torch computes fma(x, high - low, low)
        return _fma(x, high - low, float(low)).reshape(shape)
    # the bounds in float32 (torch's accumulation type below float64), their difference too,
    # then x * range + low in double, rounded to float32 and then to the tensor's type; a
    # value that rounds up to ``high`` becomes ``low`` (the range is half-open)
    lo, hi = np.float32(low), np.float32(high)
    out = (x * float(hi - lo) + float(lo)).astype(np.float32).astype(dtype)
    if dtype != np.float32:
        out[out == dtype.type(hi)] = dtype.type(lo)
    return out.reshape(shape)


def memory_order(arr: np.ndarray) -> Optional[list]:
    """``arr``'s dimensions from outermost to innermost in memory when it is dense and
    non-overlapping (torch's ``empty_like`` keeps such strides, and a fill visits memory in
    order), else None: row-major order."""
    if arr.ndim < 2 or arr.flags.c_contiguous:
        return None
    perm = sorted(range(arr.ndim), key=lambda d: -arr.strides[d])
    step = arr.itemsize
    for d in reversed(perm):
        if arr.shape[d] != 1 and arr.strides[d] != step:
            return None
        step *= arr.shape[d]
    return perm


def bernoulli_array(shape: tuple, p: Any, generator: Optional[Generator],
                    like: Optional[np.ndarray] = None, perm: Optional[Any] = None
                    ) -> np.ndarray:
    """A bool array of ``shape``, True with probability ``p`` (a number, or an array of
    probabilities broadcast to ``shape``), drawn as torch draws it (Note [Random streams]);
    ``like``: an array of ``shape`` whose memory order the draws follow (or that order,
    ``memory_order(like)``, given as ``perm``)."""
    g = generator if generator is not None else default_generator
    n = int(np.prod(shape, dtype=np.int64))
    if like is not None:
        perm = memory_order(like)
    if isinstance(p, np.ndarray):
        u = uniform_bits(g, n, p.dtype if p.dtype.kind == "f" else np.dtype(np.float32))
    else:
        u = uniform_bits(g, n, np.float64)
    if perm is None:
        u = u.reshape(shape)
    else:
        u = u.reshape([shape[d] for d in perm]).transpose(np.argsort(perm))
    return u < (np.broadcast_to(p, shape) if isinstance(p, np.ndarray) else float(p))


def exponential_array(shape: tuple, lambd: float, generator: Optional[Generator]
                      ) -> np.ndarray:
    """float64 samples of the exponential distribution of rate ``lambd``, drawn as torch
    draws them (Note [Random streams]); the caller casts to the tensor's dtype."""
    g = generator if generator is not None else default_generator
    n = int(np.prod(shape, dtype=np.int64))
    return (-1.0 / lambd * np.log1p(-uniform_bits(g, n, np.float64))).reshape(shape)


def cauchy_array(shape: tuple, median: float, sigma: float, generator: Optional[Generator]
                 ) -> np.ndarray:
    """float64 Cauchy samples ``median + sigma * tan(pi * (u - 0.5))`` on float64 uniforms,
    as torch draws them (Note [Random streams]); the caller casts."""
    g = generator if generator is not None else default_generator
    n = int(np.prod(shape, dtype=np.int64))
    u = uniform_bits(g, n, np.float64)
    return (median + sigma * np.tan(np.pi * (u - 0.5))).reshape(shape)


def geometric_array(shape: tuple, p: float, generator: Optional[Generator]) -> np.ndarray:
    """float64 geometric samples ``ceil(log(u) / log1p(-p))`` on float64 uniforms, as torch
    draws them (Note [Random streams]); the caller casts."""
    g = generator if generator is not None else default_generator
    n = int(np.prod(shape, dtype=np.int64))
    with np.errstate(divide="ignore"):
        return np.ceil(np.log(uniform_bits(g, n, np.float64)) / np.log1p(-p)).reshape(shape)


def log_normal_array(shape: tuple, mean: float, std: float, generator: Optional[Generator]
                     ) -> np.ndarray:
    """float64 samples ``exp(mean + std * z)`` with ``z`` from torch's one-at-a-time Box-Muller
    (the second value of each pair kept for the next draw, as ``normal_array`` does for small
    tensors), whatever the size (Note [Random streams]); the caller casts."""
    g = generator if generator is not None else default_generator
    n = int(np.prod(shape, dtype=np.int64))
    z = np.empty(n, np.float64)
    start = 0
    if n and g._next_normal is not None:
        z[0], g._next_normal = g._next_normal, None
        start = 1
    m = n - start
    if m:
        u = uniform_bits(g, 2 * ((m + 1) // 2), np.float64).reshape(-1, 2)
        r = np.sqrt(-2.0 * np.log1p(-u[:, 1]))
        theta = 2.0 * np.pi * u[:, 0]
        pairs = np.stack([r * np.cos(theta), r * np.sin(theta)], 1).reshape(-1)
        z[start:] = pairs[:m]
        if m % 2:
            g._next_normal = pairs[m]
    return np.exp(z * std + mean).reshape(shape)


_F32_THIRD = float(np.float32(1.0) / np.float32(3.0))     # torch's 1.0f / 3.0f
_F32_SQUEEZE = float(np.float32(0.0331))                  # and 0.0331f


_GAMMA_AHEAD = 2.2        # uniforms drawn ahead per element (one per normal pair and 1 to accept)


# Note [Fast gamma draws]
# torch draws gamma variates one element after another from one stream: an optional boost
# uniform (alpha < 1), a normal (the cached second value of the last Box-Muller pair, else a new
# pair of uniforms), an acceptance uniform, and again on rejection (about 1 element in 30 near
# alpha = 1), so where an element's draws start depends on every rejection before it: the
# acceptance loop stays a loop. What made it slow was the engine read one uniform at a time
# (a NumPy call each, ~15 us per element); ``gamma_array`` draws the uniforms ahead in blocks
# (``uniform_bits``), computes each element's constants with NumPy, runs the loop on Python
# floats with the C library's ``log``/``log1p``/``cos``/``sin``/``pow`` (torch's values; NumPy's
# vectorized ``log``/``log1p``/``pow`` differ in the last place for some arguments), then sets
# the engine to just after the uniforms read: ~1 us per element, torch's numbers bit for bit.
# (Guessing every element accepted and computing whole blocks with NumPy, redoing from the
# first rejection, measured 5 us per element near alpha = 1: the blocks are too short.)
def gamma_array(alpha: np.ndarray, generator: Optional[Generator]) -> np.ndarray:
    """Gamma(alpha, 1) samples of ``alpha``'s shape and dtype, drawn as torch draws them: per
    element in memory order, Marsaglia and Tsang's squeeze-and-reject method on torch's float64
    uniforms and one-at-a-time Box-Muller normals, alpha < 1 boosted by ``u ** (1 / alpha)``,
    with torch's single-precision constants and, for float32 alpha, its float32 arithmetic on
    alpha (Note [Random streams], Note [Fast gamma draws]).

    >>> g = Generator().manual_seed(0)
    >>> gamma_array(np.array([0.5, 2.0, 7.5]), g).round(4).tolist()
    [0.0008, 0.6315, 7.6046]
    """
    g = generator if generator is not None else default_generator
    single = alpha.dtype != np.float64
    ft = np.float32 if single else np.float64
    a = np.ascontiguousarray(alpha).reshape(-1).astype(ft)
    n = a.size
    with np.errstate(all="ignore"):
        zero = a == 0
        boost = (a < 1) & ~zero
        expo = (ft(1.0) / a).astype(np.float64)
        a2 = np.where(boost, (a + ft(1.0)).astype(ft), a)
        d = (a2 - np.float32(_F32_THIRD)).astype(np.float64) if single else a2 - _F32_THIRD
        c = 1.0 / np.sqrt(9.0 * d)
    saved = g._mt.state
    cache = g._next_normal
    ahead = int(_GAMMA_AHEAD * (n - int(zero.sum())) + int(boost.sum())) + 64
    U = uniform_bits(g, ahead, np.float64).tolist()
    limit = len(U) - 4                     # an iteration reads at most 3 uniforms
    pos = 0
    out = [0.0] * n
    log, log1p, sqrt, cos, sin = math.log, math.log1p, math.sqrt, math.cos, math.sin
    two_pi, squeeze = 2.0 * math.pi, _F32_SQUEEZE
    for i, (z, b, e, di, ci) in enumerate(zip(zero.tolist(), boost.tolist(), expo.tolist(),
                                              d.tolist(), c.tolist())):
        if z:
            continue
        scale = 1.0
        if b:
            if pos > limit:
                U += uniform_bits(g, len(U), np.float64).tolist()
                limit = len(U) - 4
            scale *= (1.0 - U[pos]) ** e
            pos += 1
        while True:
            while True:
                if pos > limit:
                    U += uniform_bits(g, len(U), np.float64).tolist()
                    limit = len(U) - 4
                if cache is not None:
                    x, cache = cache, None
                else:
                    r = sqrt(-2.0 * log1p(-U[pos + 1]))
                    theta = two_pi * U[pos]
                    pos += 2
                    cache = r * sin(theta)
                    x = r * cos(theta)
                y = 1.0 + ci * x
                if not y <= 0:
                    break
            v = y * y * y
            u = 1.0 - U[pos]
            pos += 1
            xx = x * x
            if u < 1.0 - squeeze * xx * xx or log(u) < 0.5 * xx + di * (1.0 - v + log(v)):
                out[i] = scale * di * v
                break
    g._mt.state = saved                    # the engine just after the uniforms read
    if pos:
        g._mt.random_raw(2 * pos)          # two 32-bit draws per float64 uniform
    g._next_normal = cache
    with np.errstate(invalid="ignore"):    # torch's max(min, x): NaN becomes min too
        res = np.fmax(np.array(out, np.float64).astype(ft), np.finfo(ft).tiny)
    return res.astype(alpha.dtype).reshape(alpha.shape)


def multinomial_rows(rows: np.ndarray, num_samples: int, replacement: bool,
                     generator: Optional[Generator], top: Any = None) -> np.ndarray:
    """Category indices drawn from each row of weights ``rows`` (2-d, checked by the caller),
    as torch draws them (Note [Random streams]). Without replacement torch takes the
    ``num_samples`` largest weight/Exp(1) keys with its ``topk``: ``top(keys, k)`` gives those
    positions (ops/_selection_orders.py; a stable order of the keys when None)."""
    if not replacement or num_samples == 1:
        with np.errstate(divide="ignore"):
            keys = rows / exponential_array(rows.shape, 1.0, generator).astype(rows.dtype)
        if num_samples == 1:
            return np.argmax(keys, axis=-1)[:, None]
        if top is not None:          # torch's topk of the keys (its choice among equal ones)
            return top(keys, num_samples)
        return np.argsort(-keys, axis=-1, kind="stable")[:, :num_samples]
    g = generator if generator is not None else default_generator
    acc = rows.dtype if rows.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for i, w in enumerate(rows):
        cum = np.cumsum(w, dtype=acc)
        cum = (cum / cum[-1]).astype(np.float64)
        idx = np.searchsorted(cum, uniform_bits(g, num_samples, np.float64), side="left")
        out[i] = np.minimum(idx, w.shape[0] - 1)
    return out


def _fma(a: np.ndarray, b: float, c: float) -> np.ndarray:
    """``a * b + c`` with one rounding, for float64 (an exact product by Veltkamp splitting,
    then exact sums; equal to a fused multiply-add except in rare double-rounding ties)."""
    p = a * b
    split = 134217729.0                       # 2**27 + 1
    ah = a * split
    ah = ah - (ah - a)
    al = a - ah
    bh = b * split
    bh = bh - (bh - b)
    bl = b - bh
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl     # a*b == p + err exactly
    s = p + c
    bb = s - p
    sum_err = (p - (s - bb)) + (c - bb)                      # p + c == s + sum_err exactly
    return s + (sum_err + err)


def _box_muller_16(blocks: np.ndarray) -> np.ndarray:
    """Rows of 16 uniforms -> rows of 16 normals: the first 8 feed the radius, the last 8 the
    angle; cosines fill the first half, sines the second."""
    u1, u2 = 1 - blocks[:, :8], blocks[:, 8:16]
    r = np.sqrt(-2 * np.log(u1))
    theta = 2 * np.pi * u2
    return np.concatenate([r * np.cos(theta), r * np.sin(theta)], axis=1)


# Note [Float32 Box-Muller]
# torch's float32 kernel for 16 or more normals computes the logarithm, sine and cosine of its
# Box-Muller step in single precision with the Cephes polynomials of its vectorized math header
# (the logarithm: the exponent split off and the mantissa reduced to [sqrt(1/2), sqrt(2)), a
# degree-8 polynomial, the exponent added back in two parts; sine and cosine: reduction by
# multiples of pi/4 in three parts, degree-3 polynomials on the reduced argument), built with
# fused multiply-adds, and ends with ``fma(n, std, mean)``. The functions below evaluate the
# same polynomials with the same fused steps in float32; each fused multiply-add is the float64
# product and sum rounded once to float32 (exact product; a double rounding of the sum could
# only differ in a tie, which none of torch's 2**24 possible uniforms hits for the logarithm).
# Checked bit for bit against torch.randn on millions of draws (tests/test_random.py).
_F32 = np.float32
_LOG_P = tuple(_F32(c) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1,
                                 -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
                                 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))
_LOG_Q1, _LOG_Q2 = _F32(-2.12194440e-4), _F32(0.693359375)
_SQRT_HALF_F32 = _F32(0.707106781186547524)
_PI4_PARTS = (_F32(-0.78515625), _F32(-2.4187564849853515625e-4),
              _F32(-3.77489497744594108e-8))
_FOUR_OVER_PI = _F32(1.27323954473516)
_COS_C = (_F32(2.443315711809948e-5), _F32(-1.388731625493765e-3), _F32(4.166664568298827e-2))
_SIN_C = (_F32(-1.9515295891e-4), _F32(8.3321608736e-3), _F32(-1.6666654611e-1))
_SIGN = np.int32(-2 ** 31)


def _fma32(a: Any, b: Any, c: Any) -> np.ndarray:
    """``a * b + c`` rounded once to float32 (float32 operands: the product is exact in
    float64)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64)
            + np.asarray(c, np.float64)).astype(_F32)


def _log_f32(x: np.ndarray) -> np.ndarray:
    """Natural logarithm of positive normal float32 numbers (Note [Float32 Box-Muller])."""
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_F32) + _F32(1)
    m = ((bits & np.int32(~0x7F800000)) | _F32(0.5).view(np.int32)).view(_F32)   # [0.5, 1)
    low = m < _SQRT_HALF_F32
    m = (m - _F32(1)) + np.where(low, m, _F32(0))
    e = e - low.astype(_F32)
    z = m * m
    y = _fma32(_LOG_P[0], m, _LOG_P[1])
    for c in _LOG_P[2:]:
        y = _fma32(y, m, c)
    y = _fma32(y * m, z, e * _LOG_Q1)
    y = _fma32(z, _F32(-0.5), y)
    return _fma32(e, _LOG_Q2, m + y)


def _sincos_f32(x: np.ndarray) -> tuple:
    """Sine and cosine of float32 numbers (Note [Float32 Box-Muller])."""
    sign_sin = x.view(np.int32) & _SIGN
    x = np.abs(x)
    j = ((x * _FOUR_OVER_PI).astype(np.int32) + 1) & ~np.int32(1)
    y = j.astype(_F32)
    sign_sin = sign_sin ^ ((j & 4) << 29)
    sign_cos = (~(j - 2) & 4) << 29
    use_sin_poly = (j & 2) == 0
    for part in _PI4_PARTS:
        x = _fma32(y, part, x)
    z = x * x
    yc = _fma32(_fma32(_COS_C[0], z, _COS_C[1]), z, _COS_C[2]) * z
    yc = _fma32(yc, z, -(z * _F32(0.5))) + _F32(1)
    ys = _fma32(_fma32(_SIN_C[0], z, _SIN_C[1]), z, _SIN_C[2]) * z
    ys = _fma32(ys, x, x)
    sin = np.where(use_sin_poly, ys, yc).view(np.int32) ^ sign_sin
    cos = np.where(use_sin_poly, yc, ys).view(np.int32) ^ sign_cos
    return sin.view(_F32), cos.view(_F32)


def _box_muller_16_f32(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    """``_box_muller_16`` in float32 as torch's kernel computes it, then ``fma(n, std,
    mean)``."""
    u1, u2 = _F32(1) - blocks[:, :8], blocks[:, 8:16]
    r = np.sqrt(_F32(-2) * _log_f32(u1))
    sin, cos = _sincos_f32(_F32(2 * np.pi) * u2)
    n = np.concatenate([r * cos, r * sin], axis=1)
    return _fma32(n, _F32(std), _F32(mean))


def normal_array(shape: tuple, mean: float, std: float, dtype: np.dtype,
                 generator: Optional[Generator]) -> np.ndarray:
    """Normal samples of ``dtype`` drawn as torch draws them (Note [Random streams])."""
    g = generator if generator is not None else default_generator
    n = int(np.prod(shape, dtype=np.int64))
    dtype = np.dtype(dtype)
    work = np.float64 if dtype == np.float64 else np.float32
    if n >= 16 and dtype == np.float32:
        out = uniform_bits(g, n, dtype).astype(_F32)
        full = n // 16 * 16
        out[:full] = _box_muller_16_f32(out[:full].reshape(-1, 16), mean, std).reshape(-1)
        if n % 16:      # the last 16 values again, from 16 fresh uniforms
            tail = uniform_bits(g, 16, dtype).astype(_F32)
            out[n - 16:] = _box_muller_16_f32(tail[None], mean, std)[0]
        return out.reshape(shape)
    if n >= 16:
        out = uniform_bits(g, n, dtype).astype(work)
        full = n // 16 * 16
        out[:full] = _box_muller_16(out[:full].reshape(-1, 16)).reshape(-1)
        if n % 16:      # the last 16 values again, from 16 fresh uniforms
            tail = uniform_bits(g, 16, dtype).astype(work)
            out[n - 16:] = _box_muller_16(tail[None])[0]
        return (out * std + mean).astype(dtype).reshape(shape)
    out = np.empty(n, np.float64)
    for i in range(n):
        if g._next_normal is not None:
            out[i], g._next_normal = g._next_normal, None
            continue
        u1, u2 = uniform_bits(g, 2, np.float64)
        r = np.sqrt(-2.0 * np.log1p(-u2))
        theta = 2.0 * np.pi * u1
        g._next_normal = r * np.sin(theta)
        out[i] = r * np.cos(theta)
    return (out * std + mean).astype(dtype).reshape(shape)


def randperm_array(n: int, generator: Optional[Generator]) -> np.ndarray:
    """A random permutation of ``range(n)`` drawn as torch draws it (Note [Random
    streams])."""
    g = generator if generator is not None else default_generator
    r = np.arange(n, dtype=np.int64)
    if n > 1:
        raw = g.random32(n - 1)
        # Fisher-Yates with z_i = raw_i mod (n - i), vectorised: the z_i are all known up
        # front, the swaps must still run in order.
        z = (raw % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64) + np.arange(n - 1)
        for i, j in enumerate(z.tolist()):
            r[i], r[j] = r[j], r[i]
    return r
