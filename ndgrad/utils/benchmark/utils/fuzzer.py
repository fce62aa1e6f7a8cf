"""``Fuzzer``: torch.utils.benchmark's generator of random benchmark inputs: parameters drawn
from ``FuzzedParameter`` distributions (resampled until every constraint holds) and tensors
(``FuzzedTensor``) shaped by them, optionally non-contiguous (a permuted layout, strided
slices).

Draws follow torch's: the same NumPy ``RandomState`` sequence, and ``ndgrad.manual_seed`` with
the same seed before the tensors are filled (ndgrad's generator gives torch's ``rand`` and
``randint``), so a ``Fuzzer`` with a given ``seed`` yields torch's parameters, layouts and
values.

Example:
    >>> from ndgrad.utils.benchmark import Fuzzer, FuzzedParameter, FuzzedTensor
    >>> fuzzer = Fuzzer(parameters=[FuzzedParameter("n", 2, 8, distribution="uniform")],
    ...                 tensors=[FuzzedTensor("x", size=("n", 3))], seed=0)
    >>> [(params["n"], tuple(tensors["x"].shape)) for tensors, _, params in fuzzer.take(2)]
    [(7, (7, 3)), (6, (6, 3))]
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from ndgrad import _dtype
from ndgrad._creation import manual_seed, rand, randint
from ndgrad._settings import finfo, iinfo

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A named parameter drawn from ``"loguniform"`` or ``"uniform"`` between ``minval`` and
    ``maxval`` (integers when both bounds are ints), or from a ``{value: probability}`` dict.
    A ``strict`` parameter keeps its first draw while the Fuzzer resamples the others."""

    def __init__(self, name: str, minval: Optional[Union[int, float]] = None,
                 maxval: Optional[Union[int, float]] = None,
                 distribution: Optional[Union[str, Dict[Any, float]]] = None,
                 strict: bool = False) -> None:
        self._name = name
        self._minval, self._maxval = minval, maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self) -> str:
        return self._name

    def _check_distribution(self, distribution: Any) -> Any:
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        if abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' must be None")
        if self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        return distribution

    def sample(self, state: np.random.RandomState) -> Any:
        """One draw, from the Fuzzer's ``RandomState``."""
        d = self._distribution
        uniform: Any = state.uniform       # (NumPy's stubs refuse None bounds; so does NumPy)
        if d == "loguniform":
            lo = None if self._minval is None else np.log2(self._minval)
            hi = None if self._maxval is None else np.log2(self._maxval)
            value = int(2 ** uniform(low=lo, high=hi))
            if self._minval is not None and value < self._minval:
                return self._minval
            if self._maxval is not None and value > self._maxval:
                return self._maxval
            return value
        if d == "uniform":
            if isinstance(self._minval, int) and isinstance(self._maxval, int):
                return int(state.randint(low=self._minval, high=self._maxval + 1))
            return uniform(low=self._minval, high=self._maxval)
        choice = state.choice(np.arange(len(d)), p=tuple(d.values()))
        return list(d)[choice]


class ParameterAlias:
    """A parameter value that is another parameter's (``{0.5: 1, 0.5: ParameterAlias("n")}``
    makes a dimension sometimes broadcast); chains are allowed, cycles are not."""

    def __init__(self, alias_to: str) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype: Any) -> int:
    """Bytes per element of ``dtype``."""
    if dtype == _dtype.bool:
        return 1
    if dtype.is_floating_point or dtype.is_complex:
        return int(finfo(dtype).bits / 8)
    return int(iinfo(dtype).bits / 8)


def prod(values: Sequence[Any], base: int = 1) -> int:
    """The product in Python integers (np.prod can overflow)."""
    return functools.reduce(lambda a, b: int(a) * int(b), values, base)


class FuzzedTensor:
    """A tensor of the Fuzzer's output: ``size`` (ints or parameter names), optional
    ``steps`` (allocate ``size * steps`` and slice every ``step``-th element),
    ``probability_contiguous`` (otherwise a permuted memory layout), element and allocation
    limits that reject parameter draws, ``dim_parameter`` (truncate or pad the size), ``dtype``
    and an optional ``tensor_constructor(size=, dtype=, **params)``."""

    def __init__(self, name: str, size: Tuple[Union[str, int], ...],
                 steps: Optional[Tuple[Union[str, int], ...]] = None,
                 probability_contiguous: float = 0.5, min_elements: Optional[int] = None,
                 max_elements: Optional[int] = None,
                 max_allocation_bytes: Optional[int] = None,
                 dim_parameter: Optional[str] = None, roll_parameter: Optional[str] = None,
                 dtype: Any = _dtype.float32, cuda: bool = False,
                 tensor_constructor: Optional[Callable] = None) -> None:
        self._name, self._size, self._steps = name, size, steps
        self._probability_contiguous = probability_contiguous
        self._min_elements, self._max_elements = min_elements, max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype, self._cuda = dtype, cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self) -> str:
        return self._name

    @staticmethod
    def default_tensor_constructor(size: Tuple[int, ...], dtype: Any, **kwargs: Any) -> Any:
        """Uniform [0, 1) values for floating dtypes, integers in [1, 127) otherwise."""
        if dtype.is_floating_point or dtype.is_complex:
            return rand(tuple(size), dtype=dtype, device="cpu")
        return randint(1, 127, tuple(size), dtype=dtype, device="cpu")

    def _shape(self, params: Dict[str, Any]) -> Tuple[tuple, tuple, tuple]:
        dim = params[self._dim_parameter] if self._dim_parameter is not None \
            else len(self._size)

        def concrete(values: Sequence[Any]) -> tuple:
            out = tuple(params.get(v, v) for v in values)[:dim]
            return out + (1,) * (dim - len(out))
        size = concrete(self._size)
        steps = concrete(self._steps or ())
        return size, steps, tuple(s * k for s, k in zip(size, steps))

    def _make_tensor(self, params: Dict[str, Any],
                     state: np.random.RandomState) -> Tuple[Any, Dict[str, Any]]:
        size, steps, alloc = self._shape(params)
        make = self._tensor_constructor or self.default_tensor_constructor
        raw = make(size=alloc, dtype=self._dtype, **params)
        if self._cuda:
            raw = raw.cuda()
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(int(i) for i in order)).contiguous()
            raw = raw.permute(tuple(int(i) for i in np.argsort(order)))
        tensor = raw[tuple(slice(0, s * k, k) for s, k in zip(size, steps))]
        return tensor, {"numel": int(tensor.numel()), "order": order, "steps": steps,
                        "is_contiguous": tensor.is_contiguous(),
                        "dtype": str(self._dtype).replace("ndgrad.", "torch.")}

    def satisfies_constraints(self, params: Dict[str, Any]) -> bool:
        """Whether the parameters give a tensor within the element and allocation limits."""
        size, _, alloc = self._shape(params)
        n = prod(size)
        if n < 0:
            raise AssertionError("Computed number of elements is negative")
        nbytes = prod(alloc, base=dtype_size(self._dtype))

        def above(a: Optional[int], b: Optional[int]) -> bool:
            return a is not None and b is not None and a > b
        return not (above(n, self._max_elements) or above(self._min_elements, n) or
                    above(nbytes, self._max_allocation_bytes))


class Fuzzer:
    """Yields ``(tensors, tensor_properties, params)`` triples (``take(n)``): parameters drawn
    until every constraint (``constraints`` callables of the params, and each tensor's limits)
    holds, then the tensors. ``seed`` makes the sequence reproducible."""

    def __init__(self, parameters: List[Union[FuzzedParameter, List[FuzzedParameter]]],
                 tensors: List[Union[FuzzedTensor, List[FuzzedTensor]]],
                 constraints: Optional[List[Callable]] = None,
                 seed: Optional[int] = None) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values: Sequence[Any], cls: type) -> tuple:
        return tuple(itertools.chain.from_iterable(
            [v] if isinstance(v, cls) else v for v in values))

    def take(self, n: int) -> Iterator[Tuple[Dict[str, Any], Dict[str, Any], Dict[str, Any]]]:
        """``n`` draws (a generator; the draws restart from ``seed`` on every call)."""
        state = np.random.RandomState(self._seed)
        manual_seed(int(state.randint(low=0, high=2 ** 63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state)
            yield tensors, properties, params

    @property
    def rejection_rate(self) -> float:
        """The share of parameter draws rejected by the constraints so far."""
        return self._rejections / self._total_generated if self._total_generated else 0.

    def _generate(self, state: np.random.RandomState) -> Dict[str, Any]:
        strict: Dict[str, Any] = {}
        for _ in range(1000):
            params: Dict[str, Any] = {}
            for p in self._parameters:
                if p.strict and p.name in strict:
                    params[p.name] = strict[p.name]
                else:
                    params[p.name] = p.sample(state)
                    if p.strict:
                        strict[p.name] = params[p.name]
            params = self._resolve_aliases(params)
            self._total_generated += 1
            if not all(f(params) for f in self._constraints) or \
                    not all(t.satisfies_constraints(params) for t in self._tensors):
                self._rejections += 1
                continue
            return params
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params: Dict[str, Any]) -> Dict[str, Any]:
        params = dict(params)
        pending = sum(isinstance(v, ParameterAlias) for v in params.values())
        while pending:
            for k in list(params):
                v = params[k]
                if isinstance(v, ParameterAlias):
                    params[k] = params[v.alias_to]
            now = sum(isinstance(v, ParameterAlias) for v in params.values())
            if now == pending:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            pending = now
        return params
