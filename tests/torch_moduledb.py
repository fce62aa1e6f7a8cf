"""ndgrad.nn against PyTorch's own module database (``torch.testing``'s ModuleInfo ``module_db``).

For every ModuleInfo whose class ndgrad ships (``ndgrad.nn.<Name>``), the entry's own samples
(``module_inputs_func``) build torch's module and ndgrad's with the same constructor arguments
(tensors, dtypes, torch functions and torch modules in them converted), torch's ``state_dict`` is
loaded into ndgrad's module (``load_state_dict``, strict: names and shapes must agree), and these
checks compare the two:

``forward``   outputs (values, shapes, dtypes, nested tuples), ``state_dict`` keys in order,
              ``named_parameters`` / ``named_buffers`` names and shapes, ``repr``, the module's
              class after the call (lazy modules become their eager class), buffers after the
              call
``grad``      gradients of every input and parameter that requires grad, for a random cotangent
``gradgrad``  the gradient differentiated again (entries that support it; a small cap)
``noncontig`` outputs and gradients when every forward tensor is a non-contiguous view (every
              other element of a twice-as-long last dim), against torch's contiguous call
``variants``  constructor arguments the samples leave out (``padding_mode``, ``padding="same"``,
              ``bias=False``, ``inplace=True``, ``return_indices`` ...: ``VARIANTS``), laid over
              a few samples: refused alike, or compared as ``grad`` with parameters after
``errors``    each ``module_error_inputs_func`` input raises torch's exception type with a
              message matching torch's pattern, at construction or in forward as torch does
``float32``   forward values of a few samples at float32 tolerance
``mixed``     a float32 module called with float64 inputs: torch's refusal or values
``factory``   the constructor's ``device=`` / ``dtype=`` keywords (where torch's takes them):
              the parameters and buffers get the dtype torch's get

Entries with ``train_and_eval_differ`` run in both modes (all but ``mixed``, ``errors`` and
``factory`` per mode), the others in training mode, the default of a new module. A module whose
forward draws random numbers in training mode (a dropout with ``p > 0`` inside a Transformer
layer, say) cannot equal torch's values: its training samples compare shapes and dtypes only,
and the check's result says so (``ok (shapes only: ...)``); FractionalMaxPool samples pass
``_random_samples``, so they are compared exactly.

Wherever torch refuses (a constructor, a lazy module's first call, a forward), ndgrad must refuse
with the same exception type and the first words of torch's message (``same_refusal``).

A check is ``ok``, ``n/a`` or a failure message; samples are capped per check (``CAPS``, spread
evenly over the entry's list). ``python -m tests.torch_moduledb [NAME ...]`` prints a table
(names with or without the ``nn.`` prefix); ``tests/test_torch_moduledb.py`` runs every shipped
entry against ``KNOWN`` (tests/torch_moduledb_known.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import re
import sys
import types
import warnings
from typing import Any, Callable, Optional

import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import ndgrad

try:                                   # under pytest tests/ is on sys.path
    import torch_opdb as _op
except ImportError:                    # python -m tests.torch_moduledb
    from tests import torch_opdb as _op

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal import common_modules as _cm

CHECKS = ("forward", "grad", "gradgrad", "noncontig", "variants", "errors", "float32",
          "mixed", "factory")
CAPS = {"forward": 8, "grad": 4, "gradgrad": 2, "noncontig": 3, "errors": 20, "float32": 2,
        "mixed": 2}
# Entries out of scope, with the reason.
EXCLUDED: dict = {}

Mismatch = _op.Mismatch


class BothRaise(Exception):
    """torch and ndgrad both refuse a constructor variant (same exception type)."""


Missing = _op.Missing
compare = _op.compare


def entry_id(info: Any) -> str:
    return info.name


ENTRIES = [m for m in _cm.module_db if entry_id(m) not in EXCLUDED]
BY_ID = {entry_id(m): m for m in ENTRIES}


def nd_class(info: Any) -> Any:
    """ndgrad's class for the entry (raises Missing)."""
    cls = getattr(ndgrad.nn, info.module_cls.__name__, None)
    if cls is None:
        raise Missing(f"ndgrad.nn has no {info.module_cls.__name__}")
    return cls


def shipped(info: Any) -> bool:
    return getattr(ndgrad.nn, info.module_cls.__name__, None) is not None


# ---------------------------------------------------------------------------- samples
_CTOR = "_moduledb_ctor"


@contextlib.contextmanager
def _recording_constructors():
    """While samples are generated, every module_db class records its constructor arguments on
    the instance, so a torch module passed as an argument (TransformerEncoder's layer) can be
    rebuilt in ndgrad."""
    saved = {}
    for info in _cm.module_db:
        cls = info.module_cls
        if cls in saved or "__init__" not in vars(cls):
            continue
        saved[cls] = vars(cls)["__init__"]

        def init(self, *args, __orig=saved[cls], **kwargs):
            if not hasattr(self, _CTOR):
                object.__setattr__(self, _CTOR, (args, dict(kwargs)))
            __orig(self, *args, **kwargs)
        cls.__init__ = init
    try:
        yield
    finally:
        for cls, f in saved.items():
            cls.__init__ = f


@functools.lru_cache(maxsize=8)
def _all_samples(name: str, dtype: Any, training: bool) -> tuple:
    """The entry's samples, generated once (each check clones their tensors before use)."""
    info = BY_ID[name]
    torch.manual_seed(0)
    with _op._quiet(), _recording_constructors():
        return tuple(info.module_inputs_func(info, device="cpu", dtype=dtype,
                                             requires_grad=True, training=training))


def samples(info: Any, dtype: Any, training: bool, cap: int) -> list:
    """At most ``cap`` of the entry's samples, spread evenly over its list."""
    s = list(_all_samples(entry_id(info), dtype, training))
    if len(s) <= cap:
        return s
    idx = np.unique(np.linspace(0, len(s) - 1, cap).round().astype(int))
    return [s[i] for i in idx]


def modes(info: Any) -> tuple:
    return (True, False) if info.train_and_eval_differ else (True,)


# ---------------------------------------------------------------------------- conversions
def _nd_fn(f: Any) -> Any:
    """A torch function passed as an argument (``activation=F.gelu``) as ndgrad's."""
    name = getattr(f, "__name__", None)
    for ns in (ndgrad.nn.functional, ndgrad):
        g = getattr(ns, name, None) if name else None
        if g is not None:
            return g
    raise Missing(f"no ndgrad function for {f!r}")


def to_nd(obj: Any, requires_grad: bool = True) -> Any:
    """Constructor or forward arguments of torch's side as ndgrad's."""
    if isinstance(obj, torch.Tensor):
        return _op._nd_tensor(obj, obj.requires_grad and requires_grad)
    if isinstance(obj, torch.nn.Module):
        if not hasattr(obj, _CTOR):
            return _op._nd_module(obj)
        args, kwargs = getattr(obj, _CTOR)
        m = getattr(ndgrad.nn, type(obj).__name__)(*to_nd(args), **to_nd(kwargs))
        load_from(m, obj)
        return m
    if isinstance(obj, (types.BuiltinFunctionType, types.FunctionType)):
        return _nd_fn(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = getattr(ndgrad.nn, type(obj).__name__, None)     # LinearCrossEntropyOptions
        if cls is None:
            raise Missing(f"ndgrad.nn has no {type(obj).__name__}")
        return cls(**{f.name: to_nd(getattr(obj, f.name)) for f in dataclasses.fields(obj)})
    if isinstance(obj, tuple) and not hasattr(obj, "_fields") \
            and not isinstance(obj, torch.Size):
        return tuple(to_nd(x, requires_grad) for x in obj)
    if isinstance(obj, list):
        return [to_nd(x, requires_grad) for x in obj]
    if isinstance(obj, dict):
        return {k: to_nd(v, requires_grad) for k, v in obj.items()}
    return _op.tree_map(obj, lambda t: _op._nd_tensor(t, requires_grad))


def _fresh(obj: Any) -> Any:
    """torch's forward arguments with fresh leaves (no graph shared between calls)."""
    return _op._torch_map(obj, lambda t: t.detach().clone().requires_grad_(t.requires_grad))


def load_from(nm: Any, tm: Any) -> None:
    """torch module ``tm``'s state into ndgrad module ``nm`` (strict load)."""
    sd = {k: _op._nd_tensor(v, False) for k, v in tm.state_dict().items()}
    nm.load_state_dict(sd)


def _nd_dtype(dtype: Any) -> Any:
    return _op._ND_DTYPE[dtype]


def _is_lazy(m: Any) -> bool:
    return any(isinstance(p, torch.nn.parameter.UninitializedTensorMixin)
               for p in list(m.parameters()) + list(m.buffers()))


def same_refusal(nexc: BaseException, texc: BaseException, what: str) -> None:
    """ndgrad's exception is torch's type (or a subclass) and holds the first words of torch's
    message (names ``torch.`` / ``ndgrad.`` dropped); else Mismatch."""
    if not isinstance(nexc, _op._error_type(type(texc))):
        raise Mismatch(f"{what}: {type(nexc).__name__}: {str(nexc)[:100]}; torch "
                       f"{type(texc).__name__}: {str(texc)[:100]}")
    # (torch's argument parser says "(position N)" for a positional argument: call style)
    words = " ".join(re.sub(r" \(position \d+\)", "", str(texc)).replace("torch.", "")
                     .split()[:4])
    if words not in " ".join(str(nexc).replace("ndgrad.", "").split()):
        raise Mismatch(f"{what}: message {str(nexc)[:100]!r}; torch's {str(texc)[:100]!r}")


def _overlaid(cls: type, args: tuple, kwargs: dict, overlay: dict) -> tuple:
    """Constructor arguments with ``overlay`` replacing the same parameters, positional or
    keyword (a name the constructor does not take is passed as a keyword, to be refused)."""
    if not overlay:
        return tuple(args), dict(kwargs)
    sig = inspect.signature(cls)
    bound = sig.bind_partial(*args, **kwargs)
    extra = {}
    for k, v in overlay.items():
        if k in sig.parameters and sig.parameters[k].kind is not inspect.Parameter.VAR_KEYWORD:
            bound.arguments[k] = v
        else:
            extra[k] = v
    return tuple(bound.args), {**bound.kwargs, **extra}


class Pair:
    """torch's and ndgrad's module for one sample, with the same state."""

    def __init__(self, info: Any, sample: Any, dtype: Any, training: bool,
                 overlay: Optional[dict] = None, module_dtype: Any = None) -> None:
        self.info, self.sample, self.training = info, sample, training
        self.overlay = overlay or {}
        ci = sample.constructor_input
        args, kwargs = _overlaid(info.module_cls, ci.args, ci.kwargs, self.overlay)
        cls = nd_class(info)
        dtype = dtype if module_dtype is None else module_dtype
        try:
            with _op._quiet():
                self.tm = info.module_cls(*args, **kwargs).to(dtype)
        except Exception as e:    # noqa: BLE001
            try:
                with _op._quiet():
                    cls(*to_nd(args, False), **to_nd(kwargs, False))
            except Exception as ne:    # noqa: BLE001
                same_refusal(ne, e, f"{self.what()}: constructor")
                raise BothRaise(str(e)) from None
            raise Mismatch(f"{self.what()}: constructor returns where torch raises "
                           f"{type(e).__name__}: {str(e)[:100]}") from None
        with _op._quiet():
            self.nm = cls(*to_nd(args, False), **to_nd(kwargs, False)).to(_nd_dtype(dtype))
        self.tm.train(training)
        self.nm.train(training)
        fi = sample.forward_input
        if _is_lazy(self.tm):
            # materialize both with a first call, as a lazy module does
            texc = None
            try:
                with torch.no_grad(), _op._quiet():
                    self.tm(*_fresh(fi.args), **_fresh(fi.kwargs))
            except Exception as e:    # noqa: BLE001
                texc = e
            try:
                with ndgrad.no_grad(), _op._quiet():
                    self.nm(*to_nd(fi.args, False), **to_nd(fi.kwargs, False))
            except Exception as e:    # noqa: BLE001
                if texc is None:
                    raise Mismatch(f"{self.what()}: first call raises {type(e).__name__}: "
                                   f"{str(e)[:100]}") from None
                same_refusal(e, texc, f"{self.what()}: first call")
                raise BothRaise(str(e)) from None
            if texc is not None:
                raise Mismatch(f"{self.what()}: first call returns where torch raises "
                               f"{texc!r:.100}")
        self.structure()
        load_from(self.nm, self.tm)

    def structure(self) -> None:
        t, n = self.tm, self.nm
        if type(n).__name__ != type(t).__name__:
            raise Mismatch(f"module class {type(n).__name__}, torch {type(t).__name__}")
        if repr(n) != repr(t):
            raise Mismatch(f"repr {repr(n)[:150]!r}, torch {repr(t)[:150]!r}")
        tk, nk = list(t.state_dict()), list(n.state_dict())
        if tk != nk:
            raise Mismatch(f"state_dict keys {nk}, torch {tk}")
        for what in ("named_parameters", "named_buffers"):
            tw = [(k, tuple(v.shape)) for k, v in getattr(t, what)()]
            nw = [(k, tuple(v.shape)) for k, v in getattr(n, what)()]
            if tw != nw:
                raise Mismatch(f"{what} {nw}, torch {tw}")

    def run(self, noncontig: bool = False, nonleaf: bool = False) -> tuple:
        """(torch_out, nd_out, torch_inputs, nd_inputs); raises Mismatch when exactly one
        library raises, returns Nones when both do. ``noncontig``: ndgrad's tensors are
        non-contiguous views; ``nonleaf``: the module gets ``leaf * 1`` (an in-place module
        may write it), the returned inputs are the leaves."""
        fi = self.sample.forward_input
        targs, tkw = _fresh(fi.args), _fresh(fi.kwargs)
        nargs, nkw = to_nd(fi.args), to_nd(fi.kwargs)
        if noncontig:
            nargs, nkw = _nd_map(nargs, _noncontig), _nd_map(nkw, _noncontig)
        tcall, ncall = (targs, tkw), (nargs, nkw)
        if nonleaf:
            tcall = _op._torch_map(tcall, lambda t: t * 1 if t.requires_grad else t)
            ncall = _nd_map(ncall, lambda t: t * 1 if t.requires_grad else t)
        tout = nout = texc = nexc = None
        try:
            # torch's math attention backend: its CPU flash kernel has no second derivative
            with _op._quiet(), sdpa_kernel(SDPBackend.MATH):
                tout = self.tm(*tcall[0], **tcall[1])
        except Exception as e:    # noqa: BLE001
            texc = e
        try:
            with _op._quiet():
                nout = self.nm(*ncall[0], **ncall[1])
        except (Missing, Mismatch):
            raise
        except Exception as e:    # noqa: BLE001
            nexc = e
        what = self.what()
        if texc is not None and nexc is None:
            raise Mismatch(f"{what}: ndgrad returns where torch raises "
                           f"{type(texc).__name__}: {str(texc)[:100]}")
        if nexc is not None and texc is None:
            raise Mismatch(f"{what}: {type(nexc).__name__}: {str(nexc)[:160]}")
        if nexc is not None:
            same_refusal(nexc, texc, what)
        return tout, nout, (targs, tkw), (nargs, nkw)

    def what(self) -> str:
        d = self.sample.desc or "sample"
        extra = "".join(f", {k}={v!r}" for k, v in self.overlay.items())
        return f"{d} ({'train' if self.training else 'eval'}{extra})"

    def random(self) -> Optional[str]:
        """Why this module's values are random in this mode, or None."""
        if not self.training:
            return None
        for m in self.tm.modules():
            if isinstance(m, torch.nn.MultiheadAttention) and m.dropout > 0 or \
                    isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0 or \
                    isinstance(m, torch.nn.RNNBase) and m.dropout > 0 and m.num_layers > 1:
                return "dropout in training"
        return None


def _nd_map(obj: Any, f: Callable) -> Any:
    if isinstance(obj, ndgrad.Tensor):
        return f(obj)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_nd_map(x, f) for x in obj)
    if isinstance(obj, dict):
        return {k: _nd_map(v, f) for k, v in obj.items()}
    return obj


def _noncontig(t: Any) -> Any:
    """``t``'s values as a view with stride 2 in its last dim (of a leaf when ``t`` requires
    grad)."""
    if t.dim() == 0 or t.numel() == 0:
        return t
    a = np.repeat(t.detach().numpy(), 2, axis=-1)
    big = ndgrad.tensor(a, dtype=t.dtype)
    if t.requires_grad:
        big.requires_grad_(True)
    v = big[..., ::2]
    assert not v.is_contiguous()
    return v


def _diff(out: Any) -> list:
    return [t for t in _op._flat_out(out) if isinstance(t, (torch.Tensor, ndgrad.Tensor))
            and t.dtype.is_floating_point and t.requires_grad]


def _grad_leaves(pair: Pair, tin: Any, nin: Any) -> tuple:
    ti = [t for t in _op.tensors_of(tin) if t.requires_grad]
    ni = [t for t in _op.tensors_of(nin) if t.requires_grad]
    tp = [p for _, p in pair.tm.named_parameters() if p.requires_grad]
    np_ = [p for _, p in pair.nm.named_parameters() if p.requires_grad]
    return ti + tp, ni + np_


# ---------------------------------------------------------------------------- checks
def _for_modes(info: Any, cap: int, dtype: Any, body: Callable) -> str:
    """Run ``body(pair)`` for the capped samples in each mode; 'ok (shapes only ...)' when
    some sample was compared by shape only."""
    done, shapes = 0, set()
    for training in modes(info):
        for s in samples(info, dtype, training, cap):
            pair = Pair(info, s, dtype, training)
            r = body(pair)
            if r == "n/a":
                continue
            done += 1
            if r:
                shapes.add(r)
    if not done:
        return "n/a"
    return f"ok (shapes only: {', '.join(sorted(shapes))})" if shapes else "ok"


def check_forward(info: Any) -> str:
    def body(pair: Pair) -> Optional[str]:
        tout, nout, _, _ = pair.run()
        if tout is None and nout is None:
            return "n/a"
        rnd = pair.random()
        compare(nout, tout, f"{pair.what()} output", random=rnd is not None)
        pair.structure()
        tb = [b for _, b in pair.tm.named_buffers()]
        nb = [b for _, b in pair.nm.named_buffers()]
        compare(nb, tb, f"{pair.what()} buffers after forward", random=rnd is not None)
        return rnd
    return _for_modes(info, CAPS["forward"], torch.float64, body)


def _grads(pair: Pair, create_graph: bool = False, noncontig: bool = False,
           nonleaf: bool = False) -> Optional[tuple]:
    """(torch grads, ndgrad grads, torch leaves, nd leaves) or None; with ``create_graph``
    the cotangents are leaves too (appended to the leaves), so the second order covers them."""
    tout, nout, tin, nin = pair.run(noncontig, nonleaf)
    if nonleaf and tout is not None:
        compare(nout, tout, f"{pair.what()} output")
    if noncontig and tout is not None:
        compare(nout, tout, f"{pair.what()} output (non-contiguous inputs)")
    if tout is None and nout is None:
        return None
    to, no = _diff(tout), _diff(nout)
    if len(to) != len(no):
        raise Mismatch(f"{pair.what()}: {len(no)} differentiable outputs, torch {len(to)}")
    tl, nl = _grad_leaves(pair, tin, nin)
    if not to or not tl:
        return None
    if len(tl) != len(nl):
        raise Mismatch(f"{pair.what()}: {len(nl)} leaves requiring grad, torch {len(tl)}")
    rng = _op._rng(pair.info.name, pair.sample.desc)
    cts = [rng.standard_normal(tuple(o.shape)) for o in to]
    tct = [torch.tensor(c, dtype=o.dtype, requires_grad=create_graph) for c, o in zip(cts, to)]
    nct = [ndgrad.tensor(c, dtype=o.dtype) for c, o in zip(cts, no)]
    if create_graph:
        for c in nct:
            c.requires_grad_(True)
    ng = ndgrad.autograd.grad(no, nl, nct, allow_unused=True, create_graph=create_graph)
    try:
        tg = torch.autograd.grad(to, tl, tct, allow_unused=True, create_graph=create_graph)
    except RuntimeError:
        if all(o.numel() == 0 for o in to):
            # torch's adaptive pools refuse to differentiate an empty output; ndgrad's
            # gradient is zero (tests/test_nn_pool.py), nothing to compare with
            if any(g is not None and g.abs().sum().item() for g in ng):
                raise Mismatch(f"{pair.what()}: nonzero gradient of an empty output") from None
            return None
        raise
    if create_graph:
        return tg, ng, tl + tct, nl + nct
    return tg, ng, tl, nl


def check_grad(info: Any) -> str:
    def body(pair: Pair) -> Optional[str]:
        if pair.random():
            return "n/a"
        r = _grads(pair)
        if r is None:
            return "n/a"
        compare(list(r[1]), list(r[0]), f"{pair.what()} grads")
        return None
    return _for_modes(info, CAPS["grad"], torch.float64, body)


def check_noncontig(info: Any) -> str:
    def body(pair: Pair) -> Optional[str]:
        if pair.random():
            return "n/a"
        r = _grads(pair, noncontig=True)
        if r is None:
            return None             # compared the outputs (no gradient to take)
        compare(list(r[1]), list(r[0]), f"{pair.what()} grads (non-contiguous inputs)")
        return None
    return _for_modes(info, CAPS["noncontig"], torch.float64, body)


# Constructor variants the entries' samples do not cover, by class name (``Lazy`` dropped,
# matched by prefix): each is laid over the keyword arguments of a few samples. A variant torch
# refuses must be refused alike (same exception type); one it accepts is compared as ``grad``
# does, with the module's parameters after the call (Embedding's max_norm renormalizes in
# place) and the inputs passed as non-leaves (in-place modules write them).
_PAD = [{"padding_mode": m, "padding": 1} for m in ("reflect", "replicate", "circular")]
_INPLACE = [{"inplace": True}]
_BAD_POOL = [{"stride": 0}, {"kernel_size": 0}, {"padding": -1}]
_LOSS = [{"reduction": "bad"}, {"reduction": "none"}, {"reduction": "sum"}]
VARIANTS = {
    "Conv": _PAD + [{"bias": False}, {"padding": "same", "dilation": 2}, {"padding": "valid"},
                    {"padding": "same", "stride": 2}, {"padding_mode": "zeros", "padding": 2},
                    {"groups": 2}, {"padding_mode": "bad"}, {"padding": -1}, {"stride": 0},
                    {"dilation": 0}, {"groups": 0}, {"padding": "bad"},
                    {"padding": "same", "padding_mode": "reflect"},
                    {"padding": "same", "padding_mode": "circular", "dilation": 2},
                    {"padding_mode": "circular", "padding": 2}],
    "ConvTranspose": [{"bias": False}, {"stride": 2, "output_padding": 1}, {"dilation": 2},
                      {"padding_mode": "reflect"}, {"stride": 2, "output_padding": 2},
                      {"padding": 1, "stride": 3, "output_padding": 2}, {"output_padding": 1},
                      {"groups": 0}, {"padding": -1}, {"padding": "same"}],
    "Linear": [{"bias": False}], "Bilinear": [{"bias": False}],
    "BatchNorm": [{"affine": False}, {"track_running_stats": False}, {"momentum": None},
                  {"momentum": 0.5, "eps": 1e-3}, {"eps": 0.0}],
    "InstanceNorm": [{"affine": True, "track_running_stats": True}, {"affine": True},
                     {"track_running_stats": True, "momentum": None}],
    "GroupNorm": [{"affine": False}, {"eps": 0.5}, {"num_groups": 7}],
    "LayerNorm": [{"elementwise_affine": False}, {"bias": False}, {"normalized_shape": 7}],
    "RMSNorm": [{"elementwise_affine": False}, {"eps": None}, {"normalized_shape": 7}],
    "Embedding": [{"padding_idx": 0}, {"padding_idx": -1}, {"max_norm": 1.0},
                  {"max_norm": 1.0, "norm_type": 1.0}, {"scale_grad_by_freq": True},
                  {"padding_idx": 9}, {"max_norm": 1.0, "padding_idx": 0}],
    "AvgPool": [{"ceil_mode": True}, {"count_include_pad": False, "padding": 1},
                {"divisor_override": 3}, {"padding": 5}, {"divisor_override": 0}] + _BAD_POOL,
    "MaxPool": [{"ceil_mode": True}, {"dilation": 2}, {"return_indices": True},
                {"padding": 1, "ceil_mode": True}, {"dilation": 0}] + _BAD_POOL,
    "LPPool": [{"ceil_mode": True}, {"norm_type": 1.0}, {"stride": 1}, {"kernel_size": 0}],
    "AdaptiveMaxPool": [{"return_indices": True}, {"output_size": 0}, {"output_size": -1}],
    "AdaptiveAvgPool": [{"output_size": 0}, {"output_size": -1}],
    "FractionalMaxPool": [{"output_ratio": 1.5, "output_size": None},
                          {"output_size": 100, "output_ratio": None}],
    "Softplus": [{"beta": 2.0, "threshold": 1.0}], "Softmax": [{"dim": 0}, {"dim": 5}],
    "LogSoftmax": [{"dim": 0}, {"dim": 5}], "Softmin": [{"dim": 0}, {"dim": 5}],
    "ReLU": _INPLACE, "ReLU6": _INPLACE, "LeakyReLU": _INPLACE + [{"negative_slope": -1.0}],
    "ELU": _INPLACE + [{"alpha": -1.0}], "CELU": _INPLACE + [{"alpha": 0.0}, {"alpha": -2.0}],
    "SELU": _INPLACE, "Hardtanh": _INPLACE + [{"min_val": 1.0, "max_val": 0.0}],
    "Hardswish": _INPLACE, "SiLU": _INPLACE, "Mish": _INPLACE,
    "Threshold": _INPLACE + [{"threshold": float("nan")}, {"value": float("inf")}],
    "GELU": [{"approximate": "tanh"}, {"approximate": "bad"}],
    "PReLU": [{"init": 0.5}, {"num_parameters": 2}],
    "Hardshrink": [{"lambd": -1.0}, {"lambd": 0.0}], "Softshrink": [{"lambd": -1.0}],
    "GLU": [{"dim": 0}, {"dim": 5}],
    "MultiheadAttention": [{"kdim": 2, "vdim": 5}, {"bias": False}, {"num_heads": 5}],
    "RNN": [{"nonlinearity": "relu"}, {"nonlinearity": "bad"}, {"dropout": 0.5},
            {"num_layers": 0}, {"dropout": 1.5}, {"hidden_size": 0}],
    "GRU": [{"bias": False}, {"num_layers": 0}, {"dropout": -0.1}],
    "LSTM": [{"proj_size": 1}, {"proj_size": -1}, {"proj_size": 9}],
    "RNNCell": [{"nonlinearity": "bad"}, {"bias": False}], "GRUCell": [{"bias": False}],
    "LSTMCell": [{"bias": False}],
    "TransformerEncoderLayer": [{"activation": "gelu"}, {"activation": "bad"},
                                {"layer_norm_eps": 0.1}, {"nhead": 3}],
    "TransformerDecoderLayer": [{"activation": "gelu"}, {"nhead": 3}],
    "Transformer": [{"activation": "gelu"}, {"nhead": 3}, {"custom_encoder": None}],
    "LocalResponseNorm": [{"size": 1}, {"k": 0.5, "beta": 1.0}],
    "ReflectionPad": [{"padding": 9}], "ReplicationPad": [{"padding": 9}],
    "CircularPad": [{"padding": 9}], "ConstantPad": [{"value": 2.5}, {"padding": -1}],
    "ZeroPad": [{"padding": -1}],
    "CrossEntropyLoss": _LOSS + [{"label_smoothing": 0.3}, {"ignore_index": 0},
                                 {"label_smoothing": -0.1}],
    "NLLLoss": _LOSS + [{"ignore_index": 0}],
    "MSELoss": _LOSS + [{"size_average": False}, {"reduce": False}],
    "L1Loss": _LOSS, "SmoothL1Loss": _LOSS + [{"beta": 0.0}, {"beta": -1.0}],
    "HuberLoss": _LOSS + [{"delta": 0.0}, {"delta": -1.0}],
    "KLDivLoss": _LOSS + [{"log_target": True}, {"reduction": "batchmean"}],
    "PoissonNLLLoss": _LOSS + [{"full": True}, {"log_input": False}],
    "GaussianNLLLoss": _LOSS + [{"full": True}, {"eps": 0.5}],
    "BCELoss": _LOSS, "BCEWithLogitsLoss": _LOSS, "SoftMarginLoss": _LOSS,
    "MultiLabelSoftMarginLoss": _LOSS, "MultiLabelMarginLoss": _LOSS,
    "HingeEmbeddingLoss": _LOSS + [{"margin": 2.0}],
    "MultiMarginLoss": _LOSS + [{"p": 2}, {"p": 3}, {"margin": 0.5}],
    "CosineEmbeddingLoss": _LOSS + [{"margin": 0.5}],
    "MarginRankingLoss": _LOSS + [{"margin": 0.5}],
    "CTCLoss": _LOSS + [{"zero_infinity": True}],      # (blank: the samples' targets use
                                                       # every label, a blank one is invalid)
    "LinearCrossEntropyLoss": [{"reduction": "bad"}, {"bias": True}],
}
CAPS["variants"] = 2


def variants(info: Any) -> list:
    name = info.module_cls.__name__.removeprefix("Lazy")
    key = max((k for k in VARIANTS if name.startswith(k)), key=len, default=None)
    return VARIANTS.get(key, []) if key else []


def check_variants(info: Any) -> str:
    over = variants(info)
    if not over:
        return "n/a"
    done = 0
    for ov, training in ((ov, tr) for ov in over for tr in modes(info)):
        for s in samples(info, torch.float64, training, CAPS["variants"]):
            try:
                pair = Pair(info, s, torch.float64, training, overlay=ov)
            except BothRaise:
                done += 1
                continue
            if pair.random():
                continue
            r = _grads(pair, nonleaf=True)
            if r is not None:
                compare(list(r[1]), list(r[0]), f"{pair.what()} grads")
            tp = [p for _, p in pair.tm.named_parameters()]
            np_ = [p for _, p in pair.nm.named_parameters()]
            compare(np_, tp, f"{pair.what()} parameters after the call")
            compare([b for _, b in pair.nm.named_buffers()],
                    [b for _, b in pair.tm.named_buffers()], f"{pair.what()} buffers")
            done += 1
    return "ok" if done else "n/a"


# Samples whose second derivative torch does not compute (documented), by entry.
NO_TORCH_GRADGRAD = {
    # the chunked path (options given) consumes precomputed gradients: no higher-order AD
    "nn.LinearCrossEntropyLoss": lambda s: s.constructor_input.kwargs.get("options") is not None,
}


def check_gradgrad(info: Any) -> str:
    """The first gradients weighted by a random tensor, differentiated w.r.t. the inputs, the
    parameters and the cotangent. A gradient that does not require grad in one library (a
    piecewise linear module's gradient w.r.t. its input) enters as a constant: its derivative
    is zero either way."""
    if not info.supports_gradgrad:
        return "n/a"

    def body(pair: Pair) -> Optional[str]:
        skip = NO_TORCH_GRADGRAD.get(pair.info.name)
        if pair.random() or skip is not None and skip(pair.sample):
            return "n/a"
        r = _grads(pair, create_graph=True)
        if r is None:
            return "n/a"
        tg, ng, tl, nl = r
        keep = [k for k, g in enumerate(tg) if g is not None]
        if not keep:
            return "n/a"
        rng = _op._rng(pair.info.name, "gradgrad")
        vs = [rng.standard_normal(tuple(tg[k].shape)) for k in keep]
        for k in keep:
            if ng[k] is None:
                raise Mismatch(f"{pair.what()}: gradient {k} is None in ndgrad, torch a tensor")
        tsum = sum((tg[k] * torch.tensor(v)).sum() for k, v in zip(keep, vs))
        nsum = sum((ng[k] * ndgrad.tensor(v)).sum() for k, v in zip(keep, vs))
        if not tsum.requires_grad:
            return "n/a"
        try:
            tgg = torch.autograd.grad(tsum, tl, allow_unused=True)
        except RuntimeError as e:
            if "not implemented" in str(e):
                return "n/a"          # torch has no second derivative (ctc, margin losses)
            raise
        if not nsum.requires_grad:
            raise Mismatch(f"{pair.what()}: ndgrad's gradients do not require grad")
        ngg = ndgrad.autograd.grad(nsum, nl, allow_unused=True)
        compare(list(ngg), list(tgg), f"{pair.what()} gradgrad")
        return None
    return _for_modes(info, CAPS["gradgrad"], torch.float64, body)


def check_mixed(info: Any) -> str:
    """A float32 module called with the float64 samples: torch's outcome (most layers refuse
    the mix, losses and parameterless layers compute in the inputs' dtype)."""
    def body(pair: Pair) -> Optional[str]:
        tout, nout, _, _ = pair.run()
        if tout is not None:
            compare(nout, tout, f"{pair.what()} output (float32 module, float64 input)",
                    tol=1e-5, random=pair.random() is not None)
        return None
    if torch.float32 not in info.dtypes:
        return "n/a"
    done = 0
    for s in samples(info, torch.float64, True, CAPS["mixed"]):
        try:
            pair = Pair(info, s, torch.float64, True, module_dtype=torch.float32)
        except BothRaise:
            continue
        body(pair)
        done += 1
    return "ok" if done else "n/a"


def check_float32(info: Any) -> str:
    def body(pair: Pair) -> Optional[str]:
        tout, nout, _, _ = pair.run()
        if tout is None and nout is None:
            return "n/a"
        rnd = pair.random()
        compare(nout, tout, f"{pair.what()} float32 output", tol=1e-4, random=rnd is not None)
        return rnd
    if torch.float32 not in info.dtypes:
        return "n/a"
    return _for_modes(info, CAPS["float32"], torch.float32, body)


def check_errors(info: Any) -> str:
    f = info.module_error_inputs_func
    if f is None:
        return "n/a"
    with _op._quiet():
        eis = list(f(info, device="cpu", dtype=torch.float64, requires_grad=True,
                     training=True))[:CAPS["errors"]]
    done = 0
    for k, ei in enumerate(eis):
        mi = ei.module_error_input
        ci, fi = mi.constructor_input, mi.forward_input
        at_ctor = ei.error_on == _cm.ModuleErrorEnum.CONSTRUCTION_ERROR
        nexc = None
        try:
            with _op._quiet():
                nm = nd_class(info)(*to_nd(ci.args, False), **to_nd(ci.kwargs, False))
            if not at_ctor:              # as torch's test: the module as constructed
                with _op._quiet():
                    nm(*to_nd(fi.args), **to_nd(fi.kwargs))
        except (Missing, Mismatch):
            raise
        except Exception as e:    # noqa: BLE001
            nexc = e
        desc = f"error input {k} ({'constructor' if at_ctor else 'forward'})"
        if nexc is None:
            raise Mismatch(f"{desc}: ndgrad returns where torch raises "
                           f"{ei.error_type.__name__}({ei.error_regex!r})")
        if not isinstance(nexc, _op._error_type(ei.error_type)):
            raise Mismatch(f"{desc}: {type(nexc).__name__}: {str(nexc)[:100]}; torch "
                           f"{ei.error_type.__name__}({ei.error_regex!r})")
        if ei.error_regex and not re.search(ei.error_regex,
                                            str(nexc).replace("ndgrad.", "torch.")):
            raise Mismatch(f"{desc}: message {str(nexc)[:120]!r} does not match torch's "
                           f"{ei.error_regex!r}")
        done += 1
    return "ok" if done else "n/a"


def check_factory(info: Any) -> str:
    """Construct with ``device="cpu", dtype=torch.float64`` (no ``.to``): parameter and buffer
    dtypes as torch's."""
    params = inspect.signature(info.module_cls.__init__).parameters
    if "dtype" not in params:
        return "n/a"
    s = samples(info, torch.float64, True, 1)
    if not s:
        return "n/a"
    ci = s[0].constructor_input
    kw = dict(ci.kwargs)
    kw.update(device="cpu", dtype=torch.float64)
    with _op._quiet():
        tm = info.module_cls(*ci.args, **kw)
        nkw = to_nd(dict(ci.kwargs), False)
        nkw.update(device="cpu", dtype=ndgrad.float64)
        nm = nd_class(info)(*to_nd(ci.args, False), **nkw)
    for what in ("named_parameters", "named_buffers"):
        tw = [(k, str(v.dtype).split(".")[-1]) for k, v in getattr(tm, what)()]
        nw = [(k, str(v.dtype).split(".")[-1]) for k, v in getattr(nm, what)()]
        if tw != nw:
            raise Mismatch(f"{what} dtypes {nw}, torch {tw}")
    return "ok"


_CHECK_FNS = {"forward": check_forward, "grad": check_grad, "gradgrad": check_gradgrad,
              "noncontig": check_noncontig, "variants": check_variants,
              "mixed": check_mixed,
              "errors": check_errors, "float32": check_float32, "factory": check_factory}


def run_entry(info: Any, checks: tuple = CHECKS) -> dict:
    """``{check: "ok" | "ok (shapes only: ...)" | "n/a" | failure message}`` for one entry."""
    out = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)    # tiny tensors: torch's thread pool only costs (10 ms a call)
    try:
        for c in checks:
            out[c] = _run_check(info, c)
    finally:
        torch.set_num_threads(threads)
    return out


def _run_check(info: Any, c: str) -> str:
    try:
        with _op._quiet():
            return _CHECK_FNS[c](info)
    except Missing as e:
        return f"missing: {e}"
    except Mismatch as e:
        return str(e)
    except Exception as e:    # noqa: BLE001
        return f"harness: {type(e).__name__}: {str(e)[:200]}"


def passed(r: str) -> bool:
    return r == "n/a" or r == "ok" or r.startswith("ok (")


def failures(result: dict) -> dict:
    return {c: r for c, r in result.items() if not passed(r)}


def _main(argv: list) -> None:
    if "--all" in argv:                     # every sample (slow): for exploring
        for c in CAPS:
            CAPS[c] = 10 ** 6
    names = [a if a.startswith("nn.") else "nn." + a for a in argv if not a.startswith("-")]
    ids = names or sorted(BY_ID)
    w = max(len(i) for i in ids)
    print(f"{'entry':<{w}}  " + "  ".join(f"{c:<8}" for c in CHECKS))
    bad = 0
    for eid in ids:
        info = BY_ID[eid]
        if not shipped(info):
            print(f"{eid:<{w}}  not shipped")
            continue
        r = run_entry(info)
        cells = ["ok" if passed(v) and v.startswith("ok") else "n/a" if v == "n/a" else "FAIL"
                 for v in (r[c] for c in CHECKS)]
        print(f"{eid:<{w}}  " + "  ".join(f"{c:<8}" for c in cells))
        for c, m in failures(r).items():
            bad += 1
            print(f"    {c}: {m}")
        for c, v in r.items():
            if v.startswith("ok ("):
                print(f"    {c}: {v}")
    print(f"{bad} failing checks")


if __name__ == "__main__":
    _main(sys.argv[1:])
