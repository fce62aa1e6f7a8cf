"""Tensor: a NumPy ndarray plus autograd state.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> y = (x * x).sum()
    >>> y.backward()
    >>> x.grad
    tensor([2., 4., 6.])
"""

from __future__ import annotations

import re
import threading
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence, SupportsIndex

import numpy as np

from . import _dlpack, _dtype, _layout, _numpy_protocol
from ._meta import MetaArray as _MetaArray
from ._aligned import AlignedBlock
from ._dtype import dtype as _dtype_cls
from ._format import format_tensor
from .autograd import grad_mode as _grad_mode
from .autograd.hooks import HookDict, RemovableHandle, add_hook

__all__ = ["Tensor", "Size", "device", "check_device", "set_default_device",
           "get_default_device"]

_new = object.__new__
# Set by ndgrad.func (Note [Vectorized vmap] in func/_vmap.py): called by ``item`` and
# ``__bool__`` with the tensor and "item"/"bool"; it raises while a vmapped function runs.
_vmap_check: Any = None
# How many grad/vjp/jvp transform calls are live, in all threads (Note [Captured tensors] in
# ops/views_inplace.py), kept by ``ops._dispatch.enter_transform``/``exit_transform``: the hot
# paths test only this. The innermost live call of the running thread is
# ``_transform_local.tid`` (0: none); the tensors a thread creates meanwhile carry it as
# ``_tborn``.
_TRANSFORM = 0


class _TransformLocal(threading.local):
    tid = 0


_transform_local = _TransformLocal()
CAPTURED_INPLACE_MSG = (
    "During a grad (vjp, jvp, grad, etc) transform, the function provided attempted to call "
    "in-place operation ({}) that would mutate a captured Tensor. This is not supported; "
    "please rewrite the function being transformed to explicitly accept the mutated Tensor(s) "
    "as inputs.")


def refuse_captured(op: str) -> None:
    """Raise torch.func's error for an in-place ``op`` on a captured tensor (the caller checked
    ``_TRANSFORM and t._tborn != _transform_local.tid``), unless this thread runs none."""
    if not _transform_local.tid:
        return
    raise RuntimeError(CAPTURED_INPLACE_MSG.format(op))


# Set by ndgrad.func: whether a vmapped function runs in this thread (Note [Vectorized vmap]).
_vmap_running: Any = None
# torch.func refuses requires_grad_() inside any of its transforms, vmap included.
REQUIRES_GRAD_IN_TRANSFORM_MSG = (
    "You are attempting to call Tensor.requires_grad_() (or perhaps using "
    "torch.autograd.functional.* APIs) inside of a function being transformed by a functorch "
    "transform. This is unsupported, please attempt to use the functorch transforms (e.g. "
    "grad, vjp, jacrev, jacfwd, hessian) or call requires_grad_() outside of a function being "
    "transformed instead.")


# Tensor(...): set by ndgrad.legacy_tensor_types at import.
_legacy_init: Any = None
_ndarray = np.ndarray
_FROM_NP = _dtype._FROM_NP


class Size(tuple):
    """A tensor's shape: a tuple of ints (``ndgrad.Size([2, 3])``)."""

    def __repr__(self) -> str:
        return f"ndgrad.Size({list(self)})"

    def numel(self) -> int:
        """Product of the sizes (the element count of a tensor of this shape)."""
        n = 1
        for s in self:
            n *= s
        return n

    # slices, concatenation and repetition stay Sizes, as torch's (print(x.shape[1:]) shows
    # torch.Size([...]), not a tuple)
    def __getitem__(self, i: Any) -> Any:
        r = tuple.__getitem__(self, i)
        return Size(r) if type(i) is slice else r

    def __add__(self, other: Any) -> Size:
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to "
                            "torch.Size")
        return Size(tuple.__add__(self, other))

    def __radd__(self, other: Any) -> Size:
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n: Any) -> Size:
        if not hasattr(n, "__index__"):
            raise TypeError(f"can't multiply sequence by non-int of type '{type(n).__name__}'")
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__


# The device types PyTorch's device strings may name (the order of its error message).
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                 "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")
_DEVICE_RE = re.compile(r"([a-zA-Z_]+)(?::(0|[1-9][0-9]*))?")


class device:
    """A device, as ``torch.device``: ``device("cpu")``, ``device("cpu", 0)``, ``device("cpu:0")``.

    Any of PyTorch's device types can be named (code may build ``device("cuda")`` before it
    checks ``ndgrad.cuda.is_available()``), but tensors live on the cpu only: creating or moving
    a tensor to another device raises PyTorch's error for a build without that backend.

    >>> import ndgrad
    >>> ndgrad.zeros(2).device == ndgrad.device("cpu"), ndgrad.device("cpu:0")
    (True, device(type='cpu', index=0))
    """

    __slots__ = ("type", "index")
    type: str
    index: Optional[int]

    def __init__(self, type: Any, index: Optional[int] = None) -> None:  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif isinstance(type, str):
            m = _DEVICE_RE.fullmatch(type)
            if m is None:
                raise RuntimeError(f"Invalid device string: '{type}'")
            if m.group(1) not in _DEVICE_TYPES:
                raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at "
                                   f"start of device string: {type}")
            if m.group(2) is not None:
                if index is not None:
                    raise RuntimeError("type (string) must not include an index because index "
                                       f"was passed explicitly: {type}")
                index = int(m.group(2))
            type = m.group(1)
        elif isinstance(type, int) and not isinstance(type, bool):
            raise RuntimeError("Cannot access accelerator device when none is available.")
        else:
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({_builtin_type(type).__name__}), but expected one of: (device "
                            "device) or (str type, int index = -1)")
        if index is not None:
            index = int(index)
            if index < 0:
                raise RuntimeError("Device index must not be negative")
        self.type = type
        self.index = index

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        # As in PyTorch, a device equals only a device of the same type and index (not a str).
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self) -> tuple:
        return (device, (self.type,) if self.index is None else (self.type, self.index))

    # As torch's: ``with ndgrad.device("meta"):`` makes the factories (and nn modules' parameters)
    # default to that device in this thread; contexts nest; a device object can be entered again.
    def __enter__(self) -> "device":
        _dev_local.stack = _dev_local.stack + (self,)
        _dev_local.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        st = _dev_local.stack
        _dev_local.stack = st[:-1]
        _dev_local.active = bool(st[:-1]) or _dev_local.default is not None


_builtin_type = type


def check_device(d: Any, moving: bool = False) -> device:
    """``d`` (a device, a device string or an index) as a cpu ``device``, or PyTorch's error for
    a device this build has no backend for (``moving``: as ``Tensor.to`` words it)."""
    if type(d) is device:
        dev = d
    else:
        dev = device(d)
    t = dev.type
    if t == "cpu" or t == "meta":
        return dev
    if t in ("cuda", "xpu", "mtia"):
        raise AssertionError(f"ndgrad not compiled with {t.upper()} enabled")
    if moving and t in ("mps", "xla", "ipu") and dev.index is not None:
        # with an index, torch gets past the link check and fails allocating on the backend
        kernel = "empty_strided" if t == "mps" else "empty.memory_format"
        raise NotImplementedError(
            f"Could not run 'aten::{kernel}' with arguments from the '{t.upper()}' backend. "
            "This could be because the operator doesn't exist for this backend, or was omitted "
            "during the selective/custom build process (if using custom build).")
    if moving and t in ("mps", "xla", "vulkan", "ipu"):
        raise RuntimeError(f"ndgrad is not linked with support for {t} devices")
    raise NotImplementedError(f"ndgrad cannot create tensors on the '{t}' device: it has only "
                              "the cpu backend")


_CPU = device("cpu")
_META = device("meta")


class _DeviceLocal(threading.local):
    """The running thread's default device and entered device contexts (thread-local, as
    torch's); ``active``: either is set (the factories' one test when given no device)."""
    default: Any = None
    stack: tuple = ()
    active = False


_dev_local = _DeviceLocal()


def set_default_device(device: Any) -> None:
    """Set the device factory functions use when given none, in this thread (as torch's): the
    cpu, ``"meta"`` (Note [Meta arrays] in _meta.py), or None to reset; another device raises
    PyTorch's error for a build without its backend.

    >>> import ndgrad
    >>> ndgrad.set_default_device("meta"); ndgrad.empty(2)
    tensor(..., device='meta', size=(2,))
    >>> ndgrad.set_default_device(None); ndgrad.get_default_device()
    device(type='cpu')
    """
    _dev_local.default = None if device is None else check_device(device)
    _dev_local.active = _dev_local.default is not None or bool(_dev_local.stack)


def get_default_device() -> device:
    """The device factory functions use when given none: the innermost ``with device(...)``
    of this thread, else ``set_default_device``'s, else the cpu."""
    st = _dev_local.stack
    if st:
        return st[-1]
    return _dev_local.default or _CPU


def factory_device(d: Any) -> Optional[device]:
    """The device a factory given ``device=d`` creates on (None: the cpu); raises for devices
    without a backend."""
    if d is None:
        if not _dev_local.active:
            return None
        d = get_default_device()
    dev = check_device(d)
    return dev if dev.type == "meta" else None


def is_meta_data(arr: Any) -> bool:
    """Whether ``arr`` is a meta tensor's storage (Note [Meta arrays])."""
    return type(arr) is _MetaArray

META_COPY_MSG = "Cannot copy out of meta tensor; no data!"
NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information.")


def _wrap(arr: np.ndarray) -> "Tensor":
    """Fast internal constructor: a new Tensor around ``arr`` with no autograd state."""
    if type(arr) is not _ndarray and type(arr) is not _MetaArray:
        arr = np.asarray(arr)
    t = _new(Tensor)
    t._data = arr
    if _TRANSFORM:
        t._tborn = _transform_local.tid
    return t


def _zeros_meta(shape: tuple, np_dtype: Any) -> "Tensor":
    return _wrap(np.zeros(shape, dtype=np_dtype))


if TYPE_CHECKING:
    # The methods bound at import (_tensor_methods.py, _signatures.install), as a type checker
    # sees them: a generated stub (Note [Typed API] in types.py). At run time the base is object.
    from ._tensor_api import _TensorMethods
else:
    _TensorMethods = object


class Tensor(_TensorMethods):
    """An n-dimensional array with autograd state, behaving like ``torch.Tensor``.

    Build tensors with :func:`ndgrad.tensor`, :func:`ndgrad.zeros` and friends; ``Tensor(data)``
    makes a float tensor from ``data`` like PyTorch's legacy constructor.

    >>> import ndgrad
    >>> ndgrad.Tensor([1, 2])
    tensor([1., 2.])
    """

    # Note [Tensor attributes are class defaults]
    # Creating a tensor sets only ``_data``; every other attribute falls back to these class
    # defaults until it is assigned. This keeps the dispatcher's hot path (ops/_dispatch.py) to
    # one allocation and one attribute store per result.
    # (Typed Any where the value is None until set: the invariants are in the Notes named.)
    _data: np.ndarray
    _requires_grad = False
    _grad_fn: Any = None
    _output_nr = 0
    _grad: Any = None
    _grad_acc: Any = None       # weakref to this leaf's AccumulateGrad
    _version_counter: Any = None  # [int], shared by a tensor, its views and detached aliases
    _base: Any = None           # the tensor this one is a view of
    _hooks: Any = None          # tensor hooks of a leaf (dict id -> fn)
    _post_acc_hooks: Any = None
    _retains_grad = False
    _view_steps: tuple = ()     # view ops from the root base (ops/views_inplace.py)
    _view_version = 0           # shared version when the view's grad_fn was last computed
    _view_creation: Any = None  # no_grad / multi-output / inference view (in-place checks)
    _inference = False          # created in inference_mode
    _fw_grads: Any = None       # {level: tangent} (Note [Forward AD], autograd/forward_ad.py)
    _blevel = 0                 # batch level id (Note [Batched backward], autograd/batching.py)
    _bproxy: Any = None         # on a logical proxy: the batched tensor it stands for
    _unbounded = False          # a clamp bound standing for "none" (ops/pointwise.py)
    _tborn = 0                  # transform call it was created in (Note [Captured tensors])
    _tleaf = 0                  # a reverse transform's input node (Note [Transform leaves])
    __array_priority__ = 1000   # ndarray <op> Tensor defers to Tensor

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # PyTorch's legacy constructor: Tensor(2, 3), Tensor([1, 2]), Tensor(other), Tensor()
        # (bound at import: ndgrad/legacy_tensor_types.py; internal code never calls it)
        _legacy_init(self, *args, **kwargs)

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        """The size of each dim, as a ``Size``."""
        return Size(self._data.shape)

    def size(self, dim: Optional[int] = None) -> Any:
        """The shape, or the size of dimension ``dim``."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> _dtype_cls:
        """The element type, as an ``ndgrad`` dtype."""
        return _FROM_NP[self._data.dtype]

    @property
    def device(self) -> device:
        """Where the data lives: the cpu, or ``meta`` (no data, Note [Meta arrays])."""
        return _META if type(self._data) is _MetaArray else _CPU

    @property
    def is_meta(self) -> bool:
        """Whether this is a meta tensor (shape, dtype and strides, no data)."""
        return type(self._data) is _MetaArray

    @property
    def is_cpu(self) -> bool:
        return type(self._data) is not _MetaArray

    @property
    def is_cuda(self) -> bool:
        return False

    def get_device(self) -> int:
        """The device index: -1, as PyTorch reports for cpu tensors."""
        return -1

    def cuda(self, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> "Tensor":
        """Raises: ndgrad has no CUDA backend (check ``ndgrad.cuda.is_available()`` first)."""
        check_device("cuda")
        return self

    @property
    def ndim(self) -> int:
        """Number of dims."""
        return self._data.ndim

    def dim(self) -> int:
        """Number of dims (same as ``ndim``)."""
        return self._data.ndim

    def ndimension(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        """Total number of elements."""
        return self._data.size

    def nelement(self) -> int:
        return self._data.size

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element (``element_size()``)."""
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the elements the tensor views (``numel() * itemsize``)."""
        return self._data.size * self._data.itemsize

    def is_pinned(self, device: Any = None) -> bool:
        """False: there is no accelerator to pin host memory for."""
        return False

    def pin_memory(self, device: Any = None) -> "Tensor":
        """PyTorch's error on a build without an accelerator."""
        raise RuntimeError("Cannot access accelerator device when none is available.")

    def stride(self, dim: Optional[int] = None) -> Any:
        """Strides in elements, as PyTorch reports them."""
        item = self._data.itemsize
        strides = tuple(s // item for s in self._data.strides)
        if dim is None:
            return strides
        return strides[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        """Offset in elements of the first element from the start of the underlying buffer."""
        arr = self._data
        return (_ptr(arr) - _ptr(_storage_root(arr))) // arr.itemsize

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the data is laid out in C (row-major) order, or in ``memory_format``."""
        if memory_format is None:
            return bool(self._data.flags.c_contiguous)
        return _layout.is_contiguous(self._data, _layout.check(memory_format, "is_contiguous"))

    def data_ptr(self) -> int:
        """Address of the first element of the data (0 for a meta tensor, as torch's)."""
        if type(self._data) is _MetaArray:
            return 0
        return _ptr(self._data)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def layout(self) -> "_layout.layout":
        return _layout.strided

    @property
    def _version(self) -> int:
        if self._inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        vc = self._version_counter
        return vc[0] if vc is not None else 0

    def is_inference(self) -> bool:
        """True for tensors created in ``inference_mode`` (see ``ndgrad.inference_mode``)."""
        return self._inference

    def _vc(self) -> list:
        vc = self._version_counter
        if vc is None:
            vc = self._version_counter = [0]
        return vc

    def _bump_version(self) -> None:
        vc = self._version_counter
        if vc is None:
            self._version_counter = [1]
        else:
            vc[0] += 1

    def _is_view(self) -> bool:
        return self._base is not None

    def _alias(self) -> "Tensor":
        t = _new(Tensor)
        t._data = self._data
        if self._tborn:
            t._tborn = self._tborn
        return t

    # ------------------------------------------------------------------ autograd state
    @property
    def requires_grad(self) -> bool:
        """Whether autograd records operations on this tensor (true for a view
        whose base requires grad)."""
        if self._base is not None:   # a view of a base that requires grad does (as PyTorch)
            return self._requires_grad or self._base._requires_grad
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        # PyTorch's attribute setter words its errors differently from requires_grad_().
        if self._grad_fn is not None and value:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if value and _FROM_NP[self._data.dtype]._category < _dtype._FLOAT:
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients")
        self._set_requires_grad(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` on a leaf in place and return it."""
        if (_TRANSFORM and _transform_local.tid) or (_vmap_running is not None
                                                      and _vmap_running()):
            raise RuntimeError(REQUIRES_GRAD_IN_TRANSFORM_MSG)
        return self._set_requires_grad(requires_grad)

    def _set_requires_grad(self, requires_grad: bool = True) -> "Tensor":
        """``requires_grad_`` without the functorch-transform refusal (ndgrad.func's own
        leaves)."""
        if self._grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if requires_grad and _FROM_NP[self._data.dtype]._category < _dtype._FLOAT:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._inference and not _grad_mode._state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad_fn(self) -> Any:
        """The graph node that produced this tensor, or None for a leaf."""
        if self._base is not None:
            _refresh_view(self)
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        """True when the tensor was not produced by a recorded operation."""
        if self._base is not None:
            _refresh_view(self)
        return self._grad_fn is None

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for leaves)."""
        return self._output_nr

    @property
    def grad(self) -> Optional["Tensor"]:
        """The gradient accumulated by backward (warns on a non-leaf that does not
        retain its grad and has none, as torch's does)."""
        if self._grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Optional["Tensor"]) -> None:
        if value is None:
            self._grad = None
            return
        if not isinstance(value, Tensor):
            raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type(value).__name__}")
        if value is self:
            raise RuntimeError("can't assign Variable as its own grad")
        if value._data.dtype != self._data.dtype:
            raise RuntimeError(
                f"attempting to assign a gradient with dtype '{_c_name(value.dtype)}' to a tensor "
                f"with grad_dtype '{_FROM_NP[self._data.dtype]._torch_name}'. The gradient must "
                "match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the "
                "tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. "
                "Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient "
                "may break downstream systems that assume they match.")
        if value._data.shape != self._data.shape:
            raise RuntimeError(
                f"attempting to assign a gradient of size '{list(value._data.shape)}' to a tensor "
                f"of size '{list(self._data.shape)}'. Please ensure that the gradient and the "
                "tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    def retain_grad(self) -> None:
        """Make a non-leaf tensor keep its ``.grad`` during backward (no-op on leaves)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        import weakref
        ref = weakref.ref(self)

        def retain_grad_hook(grad: Tensor) -> None:
            var = ref()
            if var is None:
                return
            if var._grad is None:
                var._grad = _wrap(np.array(grad._data, order="C", copy=True)) \
                    if not _grad_mode._state.enabled else grad.clone()
            else:
                var._grad = var._grad + grad

        fn = self._grad_fn
        if fn._retains_grad_hooks is None:
            fn._retains_grad_hooks = {}
        fn._retains_grad_hooks[self._output_nr] = retain_grad_hook
        fn._has_hooks = True
        self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        """Whether ``retain_grad()`` was called on this non-leaf."""
        return self._retains_grad

    def register_hook(self, hook: Callable[["Tensor"], Optional["Tensor"]]) -> RemovableHandle:
        """Register ``hook(grad)`` called with this tensor's gradient during backward; it may
        return a replacement gradient. Returns a handle with ``remove()``.

        >>> import ndgrad
        >>> x = ndgrad.ones(2, requires_grad=True)
        >>> _ = x.register_hook(lambda g: g * 10)
        >>> x.sum().backward(); x.grad
        tensor([10., 10.])
        """
        if self._base is not None:
            _refresh_view(self)      # a stale view's hook belongs on its regenerated node
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is None:
            if self._hooks is None:
                self._hooks = HookDict()
            acc = self._grad_acc() if self._grad_acc is not None else None
            if acc is not None:
                acc._has_hooks = True   # its engine fast path must now run the hooks
            return add_hook(self._hooks, hook)
        return self._grad_fn._add_tensor_pre_hook(self._output_nr, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[["Tensor"], None]) \
            -> RemovableHandle:
        """Register ``hook(tensor)`` called on a leaf after its ``.grad`` was accumulated."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = HookDict()
        return add_hook(self._post_acc_hooks, hook)

    def detach(self) -> "Tensor":
        """A new tensor sharing data and version counter, with no history."""
        t = _new(Tensor)
        t._data = self._data
        if self._tborn:                # the same storage: captured or not as self
            t._tborn = self._tborn
        if self._inference:            # an alias of an inference tensor is one (no version)
            t._inference = True
            return t
        t._version_counter = self._vc()
        return t

    def detach_(self) -> "Tensor":
        """Detach this tensor from the graph in place, making it a leaf."""
        if self._base is not None and not self.is_inference():   # any view, as torch's
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using DistributedD"
                "ataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
                "gradients are views of DDP buckets, and hence detach_() cannot be called on "
                "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                "function in torch/optim/optimizer.py as the solution.")
        if _TRANSFORM and self._tborn != _transform_local.tid:
            refuse_captured("aten::detach_")
        self._grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        if self._fw_grads:
            self._fw_grads = None      # forward AD tangents go too, as with detach()
        return self

    @property
    def data(self) -> "Tensor":
        """A tensor sharing this one's data, without history or version tracking."""
        t = _wrap(self._data)
        if _TRANSFORM:                 # the same storage: captured or not as self
            t._tborn = self._tborn
        return t

    @data.setter
    def data(self, value: "Tensor") -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        self._data = value._data

    # ------------------------------------------------------------------ conversion
    def item(self) -> Any:
        """The single element of a one-element tensor as a Python number."""
        if _vmap_check is not None:
            _vmap_check(self, "item")
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        if type(self._data) is _MetaArray:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self._data.reshape(()).item()

    def __format__(self, format_spec: str) -> str:
        # as PyTorch: a 0-d tensor formats as its number (f"{loss:.4f}", f"{loss}"), any
        # other as its str (a format spec is then Python's TypeError)
        if self._data.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def tolist(self) -> Any:
        """The data as (nested) Python lists of Python numbers."""
        if type(self._data) is _MetaArray:
            raise NotImplementedError(META_COPY_MSG)
        return self._data.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A new ndarray sharing the tensor's memory (Note [NumPy views of a tensor]). A tensor
        that requires grad refuses while grad mode is on (its history would be lost silently):
        use ``detach().numpy()``, or ``force=True``.

        >>> import ndgrad
        >>> x = ndgrad.ones(2, requires_grad=True)
        >>> with ndgrad.no_grad():
        ...     x.numpy()
        array([1., 1.], dtype=float32)
        """
        if not force:
            _check_numpy(self)
        return self._data.view()

    # Note [NumPy views of a tensor]
    # ``t.numpy()`` and ``np.asarray(t)`` return a new ndarray object on each call, a view of the
    # tensor's ``_data`` (so it does not own its data, as torch's arrays do not): writes show
    # through both ways, but setting the array's ``shape``, ``strides``, ``dtype`` or
    # ``flags.writeable`` changes only that array, never the tensor. torch's arrays keep their
    # tensor as ``base``; ndgrad's keep the tensor's ndarray.
    def __array__(self, dtype: Any = None) -> np.ndarray:
        _check_numpy(self)          # np.asarray(t) is t.numpy(), as in PyTorch
        # (Note [NumPy protocol] in ndgrad/_numpy_protocol.py). No ``copy`` argument, as
        # torch's: NumPy copies for ``np.array(t)`` and refuses ``np.array(t, copy=False)``.
        if dtype is not None and dtype != self._data.dtype:
            return self._data.astype(dtype)
        return self._data.view()

    def __array_wrap__(self, array: np.ndarray, context: Any = None,
                       return_scalar: bool = False) -> Tensor:
        return _wrap(_numpy_protocol.result_array(array))     # Note [NumPy protocol]

    # Note [DLPack and NumPy]
    # A tensor is its ndarray (``_data``) plus autograd state, so exchange is zero copy: the
    # ndarray's own DLPack export (ndgrad/_dlpack.py) and ``np.asarray(t)`` hand out the same
    # memory, and ``from_numpy``/``from_dlpack`` wrap the producer's memory. Writes show through
    # both ways; each side bumps only its own version counter. PyTorch's refusals carry over
    # (a tensor that requires grad is not exported); ndgrad has no lazy conjugate or negative
    # views, so there is nothing to resolve on export.
    def __dlpack__(self, *, stream: Any = None, max_version: Optional[tuple] = None,
                   dl_device: Optional[tuple] = None, copy: Optional[bool] = None) -> Any:
        """A DLPack capsule sharing this tensor's memory (``copy=True``: of a copy), for
        ``np.from_dlpack``, ``torch.from_dlpack`` and any other consumer. A versioned capsule
        (DLPack 1.x) when the consumer passes ``max_version`` with major 1 or more.

        >>> import numpy as np, ndgrad
        >>> t = ndgrad.zeros(3)
        >>> a = np.from_dlpack(t)
        >>> a[0] = 5.0
        >>> t
        tensor([5., 0., 0.])
        """
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if stream is not None and stream != -1:
            raise AssertionError("stream should be None on cpu.")
        kwargs: dict = {}
        if max_version is not None:
            kwargs["max_version"] = tuple(max_version)
        if dl_device is not None:
            kwargs["dl_device"] = tuple(dl_device)
        if copy is not None:
            kwargs["copy"] = copy
        return _dlpack.export_array(self._data, **kwargs)

    def __dlpack_device__(self) -> tuple:
        """``(DLDeviceType.kDLCPU, 0)``: ndgrad tensors live in CPU memory."""
        return (_dlpack.DLDeviceType.kDLCPU, 0)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if _vmap_check is not None:
            _vmap_check(self, "bool")
        if type(self._data) is _MetaArray:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()))

    def __float__(self) -> float:
        if not _float_warned and self.requires_grad and _grad_mode.is_grad_enabled():
            _warn_float()
        _one_element(self)
        return float(self.item().real if self.is_complex() else self.item())

    def __int__(self) -> int:
        _one_element(self)
        return int(self.item())

    def __index__(self) -> int:
        if type(self._data) is _MetaArray:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if self._data.size != 1 or _FROM_NP[self._data.dtype]._category > _dtype._INT:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._data.reshape(()))

    def __complex__(self) -> complex:
        _one_element(self)
        return complex(self.item())

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return format_tensor(self)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple:
        return (_rebuild, (self._data, self._requires_grad))

    def __deepcopy__(self, memo: dict) -> "Tensor":
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.  If you were attempting to "
                               "deepcopy a module, this may be because of a torch.nn.utils."
                               "weight_norm usage, see https://github.com/pytorch/pytorch/pull/"
                               "103001")
        t = _wrap(self._data.copy())
        t._requires_grad = self._requires_grad
        if self._grad is not None:
            t._grad = _wrap(self._grad._data.copy())
        memo[id(self)] = t
        return t


_float_warned = False


def _warn_float() -> None:
    """``float(t)`` on a tensor that requires grad warns once per process, as in PyTorch."""
    global _float_warned
    _float_warned = True
    warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
                  "behavior.\nConsider using tensor.detach() first.", UserWarning, stacklevel=3)


def _one_element(t: Tensor) -> None:
    """``float(t)``/``int(t)``/``complex(t)`` need one element: PyTorch's ValueError (``.item()``
    raises a RuntimeError with other words)."""
    if type(t._data) is _MetaArray and t._data.size == 1:
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")
    if t._data.size != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")


def _check_numpy(t: Tensor) -> None:
    """PyTorch's condition for ``numpy()``: grad mode on and the tensor requires grad; never
    for a meta tensor."""
    if type(t._data) is _MetaArray:
        raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() to "
                        "copy the tensor to host memory first.")
    if (t._requires_grad or t._base is not None and t.requires_grad) and \
            _grad_mode.is_grad_enabled():
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                           "tensor.detach().numpy() instead.")


# Regenerating a stale view's history is view tracking, part of the op table (a layer above,
# Note [Layers] in autograd/__init__.py): ops/views_inplace.py registers its ``refresh_view``
# here when it is imported.
_refresh_view: Callable[[Tensor], Any] = None  # type: ignore[assignment]


def _rebuild(data: np.ndarray, requires_grad: bool) -> Tensor:
    t = _wrap(data)
    t._requires_grad = requires_grad
    return t


def _c_name(d: _dtype_cls) -> str:
    return {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char"}.get(
        d.name, d.name)


def _ptr(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


def _storage_root(arr: np.ndarray) -> np.ndarray:
    """The array at the end of ``arr``'s chain of bases: its storage (Note [Storage] in
    ops/shape.py)."""
    root = arr
    while True:
        b = root.base
        if b.__class__ is AlignedBlock:     # Note [Aligned arrays] in _aligned.py
            return root
        if not isinstance(b, np.ndarray):
            # NumPy's stride tricks (and as_strided views) hold their source through a wrapper
            b = getattr(b, "base", None)
            if not isinstance(b, np.ndarray):
                return root
        root = b


def _storage_nbytes(root: np.ndarray) -> int:
    """Bytes from the first element of the storage ``root`` to the end of its memory."""
    if root.size == 0:
        return 0
    return sum((n - 1) * s for n, s in zip(root.shape, root.strides) if s > 0) + root.itemsize


def _wrap_dim(dim: int, ndim: int) -> int:
    """Normalize a possibly negative dimension, with PyTorch's error when out of range."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def is_tensor(obj: Any) -> bool:
    """True if ``obj`` is an ndgrad Tensor."""
    return isinstance(obj, Tensor)


def _as_shape(args: Sequence[Any]) -> tuple:
    """Accept ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` shapes."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        args = args[0]
    return tuple(int(a) for a in args)


def typename(obj: Any) -> str:
    """PyTorch's ``torch.typename``: ``'torch.FloatTensor'`` for a tensor, else the qualified
    type name."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    if not isinstance(qualname, str) or not hasattr(obj, "__qualname__"):
        qualname = type(obj).__qualname__
        module = type(obj).__module__ or ""
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"
