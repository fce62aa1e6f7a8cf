"""Factories called the ways torch allows (sizes by keyword, randint's forms) and tensors made
from NumPy arrays in lists or read-only arrays, against torch."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad import _warn


def _outcome(fn):
    try:
        r = fn()
    except TypeError as e:
        return TypeError, str(e).split("\n")[0]
    return tuple(r.shape) if hasattr(r, "shape") else r


SIZE_CALLS = {
    "kw tuple": lambda f: f(size=(2, 3)),
    "kw list": lambda f: f(size=[2]),
    "kw empty": lambda f: f(size=()),
    "kw int": lambda f: f(size=2),
    "kw float": lambda f: f(size=(2.5,)),
    "positional": lambda f: f(2, 3),
    "sequence": lambda f: f((2, 3)),
}


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
@pytest.mark.parametrize("call", list(SIZE_CALLS))
def test_size_keyword_as_torch(name, call):
    ours = _outcome(lambda: SIZE_CALLS[call](getattr(ndgrad, name)))
    theirs = _outcome(lambda: SIZE_CALLS[call](getattr(torch, name)))
    assert ours == theirs


def test_size_keyword_with_dtype_and_both_forms():
    assert ndgrad.zeros(size=(2,), dtype=ndgrad.float64).dtype == ndgrad.float64
    with pytest.raises(TypeError, match=r"zeros\(\) got multiple values for argument 'size'"):
        ndgrad.zeros(2, size=(2,))
    import inspect
    assert str(inspect.signature(ndgrad.ones)).startswith("(*size: ")


@pytest.mark.parametrize("method", ["new_zeros", "new_ones", "new_empty"])
def test_new_factories_and_view_take_size_keyword(method):
    x = ndgrad.ones(2, dtype=ndgrad.float64)
    r = getattr(x, method)(size=(3,))
    assert r.shape == (3,) and r.dtype == ndgrad.float64
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        getattr(x, method)(2, size=(3,))
    assert ndgrad.ones(6).view(size=(2, 3)).shape == (2, 3)
    assert ndgrad.ones(6).view(dtype=ndgrad.int32).dtype == ndgrad.int32


NEW_FULL_CALLS = {
    "positional": lambda x: x.new_full((2,), 1.5),
    "list": lambda x: x.new_full([2, 1], 1.5),
    "fill_value by keyword": lambda x: x.new_full((2,), fill_value=1.5),
    "all by keyword": lambda x: x.new_full(size=(2,), fill_value=1.5),
    "size an int": lambda x: x.new_full(2, 1.5),
    "no fill_value": lambda x: x.new_full((2,)),
    "nothing": lambda x: x.new_full(),
    "size twice": lambda x: x.new_full((2,), fill_value=1, size=(3,)),
}


@pytest.mark.parametrize("call", list(NEW_FULL_CALLS))
def test_new_full_forms_as_torch(call):
    ours = _outcome(lambda: NEW_FULL_CALLS[call](ndgrad.ones(2)))
    theirs = _outcome(lambda: NEW_FULL_CALLS[call](torch.ones(2)))
    assert ours == theirs
    if not isinstance(ours, tuple) or ours[0] is not TypeError:
        np.testing.assert_array_equal(NEW_FULL_CALLS[call](ndgrad.ones(2)).numpy(),
                                      NEW_FULL_CALLS[call](torch.ones(2)).numpy())


def test_new_full_value_first_with_size_keyword_is_refused():
    # torch reads the value as the size (its words differ: the type of the size first)
    for t in (torch, ndgrad):
        with pytest.raises(TypeError):
            t.ones(2).new_full(1.5, size=(2,))


@pytest.mark.parametrize("dtype", [None, 3, "float32"])
def test_view_dtype_keyword_refuses_a_non_dtype_as_torch(dtype):
    # torch's TypeError, not an internal AttributeError
    with pytest.raises(TypeError) as theirs:
        torch.ones(2).view(dtype=dtype)
    with pytest.raises(TypeError) as ours:
        ndgrad.ones(2).view(dtype=dtype)
    assert str(ours.value) == str(theirs.value)


RANDINT_CALLS = {
    "high size": lambda t: t.randint(3, (2,)),
    "low high size": lambda t: t.randint(1, 3, (2,)),
    "size by keyword": lambda t: t.randint(3, size=(2,)),
    "high and size by keyword": lambda t: t.randint(high=3, size=(2,)),
    "all by keyword": lambda t: t.randint(low=1, high=3, size=(2,)),
    "size an int": lambda t: t.randint(3, 2),
    "Size": lambda t: t.randint(3, t.Size([2])),
}


@pytest.mark.parametrize("call", list(RANDINT_CALLS))
def test_randint_forms_as_torch(call):
    torch.manual_seed(0)
    ndgrad.manual_seed(0)
    ours = _outcome(lambda: RANDINT_CALLS[call](ndgrad))
    theirs = _outcome(lambda: RANDINT_CALLS[call](torch))
    assert ours == theirs


def test_list_of_arrays_dtype_as_torch():
    cases = [[np.ones(2, np.float32), np.ones(2)], [np.ones(2, np.float32), [1.0, 2.0]],
             [np.ones(2, np.int32), [1, 2]], [np.ones(2, np.int32), np.ones(2, np.int16)],
             [[np.ones(2, np.int32)]], [np.ones(2, np.float16)], [np.ones(3000), np.ones(3000)],
             [np.ones(2, np.complex64)]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for data in cases:
            assert str(ndgrad.tensor(data).dtype).split(".")[1] == \
                str(torch.tensor(data).dtype).split(".")[1]
            assert str(ndgrad.as_tensor(data).dtype).split(".")[1] == \
                str(torch.as_tensor(data).dtype).split(".")[1]
        assert ndgrad.tensor([np.ones(2, np.float32)], dtype=ndgrad.float64).dtype == \
            ndgrad.float64
        assert ndgrad.Tensor([np.ones(2), np.ones(2)]).dtype == ndgrad.float32


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in ws if w.filename == __file__]


def test_list_of_arrays_warns_once():
    message = ("Creating a tensor from a list of numpy.ndarrays is extremely slow. Please "
               "consider converting the list to a single numpy.ndarray with numpy.array() "
               "before converting to a tensor.")
    _warn._warned_once.discard(message)
    assert _warnings_of(lambda: ndgrad.tensor([np.ones(2), np.ones(2)])) == [message]
    assert _warnings_of(lambda: ndgrad.tensor([np.ones(2), np.ones(2)])) == []


@pytest.mark.parametrize("make", ["from_numpy", "as_tensor", "asarray", "Tensor"])
def test_read_only_array_warns_once(make):
    ro = np.arange(3.0)
    ro.flags.writeable = False
    for m in list(_warn._warned_once):
        if m.startswith("The given NumPy array is not writable"):
            _warn._warned_once.discard(m)
    got = _warnings_of(lambda: getattr(ndgrad, make)(ro))
    assert len(got) == 1 and got[0].startswith(
        "The given NumPy array is not writable, and PyTorch does not support non-writable "
        "tensors.")
    assert _warnings_of(lambda: getattr(ndgrad, make)(ro)) == []


def test_read_only_array_copied_by_tensor_does_not_warn_as_torch():
    # torch.tensor copies (no warning, even the first time); its legacy constructor reads the
    # array in place (the warning). torch's warn-once state is per process: a fresh one.
    code = ("import warnings, numpy as np, torch\n"
            "ro = np.arange(3.0); ro.flags.writeable = False\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    torch.tensor(ro); torch.tensor(np.broadcast_to(ro, (2, 3)))\n"
            "    n = len(w); torch.Tensor(ro)\n"
            "print(n, len(w))\n")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.split() == ["0", "1"]
    ro = np.arange(3.0)
    ro.flags.writeable = False
    for m in list(_warn._warned_once):
        if m.startswith("The given NumPy array is not writable"):
            _warn._warned_once.discard(m)
    assert _warnings_of(lambda: ndgrad.tensor(ro)) == []
    assert _warnings_of(lambda: ndgrad.tensor(np.broadcast_to(ro, (2, 3)))) == []
    assert len(_warnings_of(lambda: ndgrad.Tensor(ro))) == 1


def test_multinomial_without_replacement_draws_zero_weights_as_torch():
    # torch 2.13 no longer refuses rows with too few positive weights: its topk of
    # weight / Exp(1) keys orders the zero ones (ties) its way
    rows = [[1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0, 1.0],
            [[0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]], [0.0] * 3 + [1.0] + [0.0] * 70]
    for lib in (ndgrad, torch):
        lib.manual_seed(0)
    for p in rows:
        n = len(p[0]) if isinstance(p[0], list) else len(p)
        for k in range(2, min(n, 6) + 1):
            assert ndgrad.multinomial(ndgrad.tensor(p), k).tolist() == \
                torch.multinomial(torch.tensor(p), k).tolist()


@pytest.mark.parametrize("args,kwargs", [((), {}), ((), {"size": 2}), ((), {"size": None}),
                                         ((2.5,), {}), ((2, 3), {}), (((2,),), {}),
                                         ((), {"size": [3]}), (((),), {})])
def test_new_factory_size_forms_as_torch(args, kwargs):
    def run(lib):
        try:
            return tuple(lib.ones(2).new_zeros(*args, **kwargs).shape)
        except TypeError as e:
            return str(e).split(" (position")[0].split(", not")[0]
    assert run(ndgrad) == run(torch)
