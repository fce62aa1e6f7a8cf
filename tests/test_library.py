"""ndgrad.library against torch.library: custom_op (schema inference and its errors, argument
checking, autograd through register_autograd with gradcheck, mutation, tensor lists),
Library/define/impl, ndgrad.ops.<ns> access, opcheck, the "Python custom operators" tutorial
(eager and under ndgrad.compile). Each scenario runs on both libraries and compares outcomes
(values, error types and messages up to the parts that name torch's C++ internals)."""

import itertools
import re
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pytest
import torch

import ndgrad

_COUNTER = itertools.count()


def _ns(T):
    # a fresh namespace per scenario and library (operators outlive a test)
    return f"t{'t' if T is torch else 'n'}{next(_COUNTER)}"


_CUT = ("\nCast error details", " (with implementation in", " If you are a Facebook",
        " Duplicate registration", "  (Error occurred", "\n Python error details",
        "  Previous registration of TORCH_LIBRARY")


def _norm(T, ns, r):
    if isinstance(r, T.Tensor):
        return ("tensor", r.detach().tolist(), str(r.dtype).split(".")[-1])
    if isinstance(r, (list, tuple)):
        return type(r).__name__, [_norm(T, ns, x) for x in r]
    if isinstance(r, dict):
        return {k: _norm(T, ns, v) for k, v in r.items()}
    if isinstance(r, str):
        r = re.sub(r"0x[0-9a-f]+", "0x", r).replace(ns, "NS")
        return r.replace("torch", "T").replace("ndgrad", "T")
    if r is None or isinstance(r, (bool, int, float)):
        return r
    return _norm(T, ns, str(r))


def _outcome(T, ns, fn):
    try:
        r = fn()
    except Exception as e:
        msg = str(e)
        for marker in _CUT:
            i = msg.find(marker)
            if i >= 0:
                msg = msg[:i]
        msg = re.sub(r" '[^']*' is only available for these backends: \[.*?\]\.", "", msg)
        msg = msg.replace("torch.Tensor", "Tensor").replace("ndgrad.tensor.Tensor", "Tensor")
        return type(e).__name__, _norm(T, ns, msg.strip())
    return "ok", _norm(T, ns, r)


def _warned(fn):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fn()
    return r, sorted({str(w.message).split(".")[0] for w in caught
                      if "autograd kernel was not registered" in str(w.message)})


def _compare(scenario):
    ns_t, ns_n = _ns(torch), _ns(ndgrad)
    theirs = [_outcome(torch, ns_t, f) for f in scenario(torch, ns_t)]
    ours = [_outcome(ndgrad, ns_n, f) for f in scenario(ndgrad, ns_n)]
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(theirs, ours)):
        assert b == a, f"step {i}"


def test_custom_op_schema_and_argument_errors():
    def scenario(T, ns):
        Tensor = T.Tensor

        @T.library.custom_op(f"{ns}::foo", mutates_args=())
        def foo(x: Tensor, y: float, n: int = 2, s: Optional[Tensor] = None,
                ls: Optional[Sequence[int]] = None, flag: bool = False,
                name: str = "a") -> Tensor:
            return x * y + n + (0 if ls is None else sum(ls)) + flag

        ops = getattr(T.ops, ns)
        x = T.ones(2)
        return [
            lambda: str(foo._opoverload._schema),
            lambda: (repr(ops.foo), repr(ops.foo.default), str(ops.foo.default),
                     ops.foo.overloads(), repr(foo), ops.foo.default.name()),
            lambda: foo(x, 2.0), lambda: foo(x, 2, 3, None, (1, 2), True),
            lambda: ops.foo(x, y=2.0, ls=[4]), lambda: ops.foo.default(x, 1.5, n=True),
            lambda: foo(1, 2.0), lambda: foo(x, "a"), lambda: foo(x),
            lambda: foo(x, 2.0, 3, None, [1, 2], True, "b", 5), lambda: foo(x, 2.0, zz=3),
            lambda: ops.foo(x, y=2.0, n=2.5), lambda: foo(x, 2.0, s=3),
            lambda: foo(x, 2.0, ls=3), lambda: foo(x, 2.0, name=1),
            lambda: ops.foo.bogus, lambda: ops.nothere,
        ]
    _compare(scenario)


def test_infer_schema_rules_and_errors():
    def scenario(T, ns):
        Tensor = T.Tensor

        def g(x: Tensor) -> Tensor:
            return x.clone()

        def varargs(x: Tensor, *args) -> Tensor:
            return x

        def untyped(x) -> Tensor:
            return x

        def no_return(x: Tensor):
            return x

        def mut_int(x: Tensor, n: int) -> Tensor:
            return x

        def two(x: Tensor) -> Tuple[Tensor, Tensor]:
            return x, x

        def one_tuple(x: Tensor) -> Tuple[Tensor]:
            return (x,)

        def many(x: Tensor, *, k: int = 3, dt: T.dtype = T.float32,
                 dev: T.device = T.device("cpu"), sc: float = 1.5,
                 ol: Optional[List[int]] = None, tl: Optional[Sequence[Optional[Tensor]]] = None,
                 s: str = "x", ot: Optional[Tensor] = None, fl: Optional[float] = None,
                 bl: List[bool] = None, neg: int = -1) -> List[Tensor]:
            return [x]

        def tup_arg(x: Tuple[int, int]) -> Tensor:
            return x

        def dict_arg(x: dict) -> Tensor:
            return x

        def dict_ret(x: Tensor) -> dict:
            return x

        def list_default(x: Tensor, ls: List[int] = [1]) -> Tensor:  # noqa: B006
            return x

        def string_hint(x: "Tensor", n: "Optional[int]" = None) -> "Tensor":
            return x

        def bad_string_hint(x: "NotAType") -> Tensor:  # noqa: F821
            return x

        co = T.library.custom_op
        infer = T.library.infer_schema
        return [
            lambda: co(f"{ns}::g3", mutates_args=("y",))(g),
            lambda: co(f"{ns}::g4", mutates_args="bad")(g),
            lambda: co("nonamespace", mutates_args=())(g),
            lambda: co(f"{ns}::v", mutates_args=())(varargs),
            lambda: co(f"{ns}::u", mutates_args=())(untyped),
            lambda: co(f"{ns}::r", mutates_args=())(no_return),
            lambda: co(f"{ns}::m", mutates_args=("n",))(mut_int),
            lambda: infer(two, mutates_args=()), lambda: infer(one_tuple, mutates_args=()),
            lambda: infer(many, mutates_args="unknown"),
            lambda: infer(many, mutates_args=(), op_name="many"),
            lambda: infer(g, mutates_args=["x"]),
            lambda: infer(tup_arg, mutates_args=()).split("The valid types")[0],
            lambda: infer(dict_arg, mutates_args=()).split("The valid types")[0],
            lambda: infer(dict_ret, mutates_args=()).split("The valid types")[0],
            lambda: infer(list_default, mutates_args=()),
            lambda: infer(string_hint, mutates_args=()),
            lambda: infer(bad_string_hint, mutates_args=()),
        ]
    # the long "valid types" listings name each library's classes: compare up to them
    _compare_cut(scenario, "The valid types are")


def _compare_cut(scenario, marker):
    global _CUT
    saved = _CUT
    _CUT = saved + (marker,)
    try:
        _compare(scenario)
    finally:
        _CUT = saved


def test_outputs_checked_and_mutation():
    def scenario(T, ns):
        Tensor = T.Tensor
        co = T.library.custom_op

        def same(x: Tensor) -> Tensor:
            return x

        def view(x: Tensor) -> Tensor:
            return x[:1]

        def not_tensor(x: Tensor) -> Tensor:
            return 3

        def lists(x: Tensor) -> List[Tensor]:
            return [x + 1, x * 2]

        def mixed(x: Tensor) -> Tuple[Tensor, int, float]:
            return x + 1, 3, 2.5

        @co(f"{ns}::msin", mutates_args={"out"}, device_types="cpu")
        def msin(inp: Tensor, out: Tensor) -> None:
            np.sin(inp.numpy(), out=out.numpy())

        @co(f"{ns}::unknown", mutates_args="unknown")
        def unknown(a: Tensor, b: Tensor) -> None:
            b.copy_(a * 3)

        a, o = T.tensor([0.5, 1.0, 2.0]), T.zeros(3)
        v0 = o._version
        b = T.zeros(3)

        def run_msin():
            msin(a, o)
            return o.tolist(), o._version - v0

        def run_unknown():
            unknown(a, b)
            return b.tolist(), str(unknown._opoverload._schema).replace(ns, "NS")

        return [
            lambda: co(f"{ns}::same", mutates_args=(), device_types="cpu")(same)(T.ones(1)),
            lambda: co(f"{ns}::view", mutates_args=())(view)(T.ones(2)),
            lambda: co(f"{ns}::nt", mutates_args=())(not_tensor)(T.ones(2)),
            lambda: co(f"{ns}::lists", mutates_args=())(lists)(T.ones(2)),
            lambda: co(f"{ns}::mixed", mutates_args=())(mixed)(T.ones(2)),
            lambda: co(f"{ns}::dev", mutates_args=(), device_types="gpu")(same),
            lambda: str(msin._opoverload._schema).replace(ns, "NS"),
            run_msin, lambda: msin(T.ones(3, requires_grad=True), o), run_unknown,
            lambda: msin.register_autograd(lambda ctx, g: g),
        ]
    _compare(scenario)


def _sin_op(T, ns, name="mysin"):
    @T.library.custom_op(f"{ns}::{name}", mutates_args=())
    def mysin(x: T.Tensor) -> T.Tensor:
        return T.from_numpy(np.sin(x.numpy()))
    return mysin


def test_register_autograd_matches_torch():
    def scenario(T, ns):
        mysin = _sin_op(T, ns)

        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.cos()

        x = T.tensor([0.1, 0.7, -2.0], dtype=T.float64, requires_grad=True)
        steps = [lambda: mysin(x).sum().backward()]          # no formula yet
        steps.append(lambda: mysin.register_autograd(backward, setup_context=setup_context))
        steps += [
            lambda: mysin(x).grad_fn.name().replace(ns, "NS"),
            lambda: T.autograd.gradcheck(mysin, (x,)),
            lambda: T.autograd.gradgradcheck(mysin, (x,)),
            lambda: T.autograd.grad(mysin(x * 2).sum(), x),
        ]
        with T.no_grad():
            steps.append(lambda: mysin(x).grad_fn)
        steps += [
            lambda: mysin.register_autograd(lambda ctx, g: (g, g), setup_context=setup_context),
            lambda: mysin(x).sum().backward(),
            lambda: mysin.register_autograd(lambda ctx, g: [g], setup_context=setup_context),
            lambda: mysin(x).sum().backward(),
            lambda: T.library.register_autograd(f"{ns}::nonexist", backward),
            lambda: T.library.register_autograd(f"{ns}::mysin", backward,
                                                setup_context=setup_context),
            lambda: T.autograd.grad(mysin(x).sum(), x),
        ]
        return steps
    _compare(scenario)


def test_autograd_tensor_lists_and_keyword_only():
    def scenario(T, ns):
        Tensor = T.Tensor

        @T.library.custom_op(f"{ns}::wsum", mutates_args=())
        def wsum(xs: List[Tensor], w: Tensor, *, scale: float = 1.0) -> List[Tensor]:
            return [x * w * scale for x in xs] + [w.clone()]

        seen = {}

        def setup_context(ctx, inputs, keyword_only_inputs, output):
            xs, w = inputs
            seen["kw"] = dict(keyword_only_inputs)
            ctx.save_for_backward(*xs, w)
            ctx.scale = keyword_only_inputs["scale"]
            ctx.n = len(xs)

        def backward(ctx, grads):
            *xs, w = ctx.saved_tensors
            gx = [g * w * ctx.scale for g in grads[:ctx.n]]
            gw = sum(g * x * ctx.scale for g, x in zip(grads[:ctx.n], xs)) + grads[ctx.n]
            seen["needs"] = ctx.needs_input_grad
            return gx, gw

        wsum.register_autograd(backward, setup_context=setup_context)
        a = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
        b = T.tensor([3.0, -1.0], dtype=T.float64, requires_grad=True)
        w = T.tensor([0.5, 4.0], dtype=T.float64, requires_grad=True)

        def grads():
            outs = wsum([a, b], w, scale=2.0)
            return T.autograd.grad(sum((o * (i + 1)).sum() for i, o in enumerate(outs)),
                                   (a, b, w))
        return [
            lambda: wsum([a, b], w, scale=2.0), grads,
            lambda: (seen["kw"], seen["needs"]),
            lambda: T.autograd.gradcheck(lambda p, q, r: wsum([p, q], r, scale=0.5), (a, b, w)),
        ]
    _compare(scenario)


def test_library_define_impl():
    def scenario(T, ns):
        L = T.library.Library
        lib = L(ns, "DEF")
        ops = getattr(T.ops, ns)
        xg = T.ones(2, requires_grad=True)
        steps = [
            lambda: lib.define("mul3(Tensor x, float s=3.0) -> Tensor"),
            lambda: ops.mul3(T.ones(2)),
            lambda: lib.impl("mul3", lambda x, s=3.0: x * s, "CPU"),
            lambda: ops.mul3(T.ones(2)), lambda: ops.mul3.default(T.ones(2), s=2.0),
            lambda: (ops.mul3(xg).requires_grad, ops.mul3(xg).grad_fn.name()),
            lambda: _warned(lambda: T.autograd.grad(ops.mul3(xg).sum(), xg)),
            lambda: lib.define("mul3(Tensor x) -> Tensor"),
            lambda: lib.define("bad schema"),
            lambda: L(ns, "DEF"), lambda: L(ns + "x", "BOGUS"),
            lambda: lib.impl("nothere", lambda x: x, "CPU"),
        ]
        frag = L(ns, "FRAGMENT")
        steps += [
            lambda: frag.define("add1(Tensor x) -> Tensor"),
            lambda: frag.define("add1.scalar(Tensor x, Scalar s) -> Tensor"),
            lambda: frag.impl("add1", lambda x: x + 1, "CompositeExplicitAutograd"),
            lambda: frag.impl("add1.scalar", lambda x, s: x + s, "CPU"),
            lambda: ops.add1(T.ones(2)), lambda: ops.add1(T.ones(2), 5),
            lambda: (ops.add1.overloads(), str(ops.add1.scalar._schema).replace(ns, "NS"),
                     ops.add1.scalar.name().replace(ns, "NS"), str(ops.add1.scalar)),
            lambda: ops.add1(T.ones(2), "s"),
            lambda: L(ns, "IMPL").define("zzz(Tensor x) -> Tensor"),
            lambda: T.library.define(f"{ns}::viaf", "(Tensor x) -> Tensor"),
            lambda: T.library.impl(f"{ns}::viaf", "cpu", lambda x: x * 10) and None,
            lambda: ops.viaf(T.ones(1)),
            lambda: T.library.register_fake(f"{ns}::nothere", lambda x: x),
            lambda: T.library.register_fake(3, lambda x: x),
            lambda: lib.impl("mul3", lambda x, s=3.0: (x * s).detach(), "CPU"),
            lambda: T.library.register_autograd(f"{ns}::mul3", lambda ctx, g: (g * 7, None)),
            lambda: T.autograd.grad(ops.mul3(xg).sum(), xg),
            lambda: lib.impl("mul3", lambda x, s=3.0: x - s, "CompositeImplicitAutograd"),
            lambda: lib.impl("mul3", lambda x, s=3.0: x - s, "CPU", allow_override=False),
        ]
        return steps
    _compare(scenario)


def test_library_lifetime():
    lib = ndgrad.library.Library("lifetime_ns", "DEF")
    lib.define("f(Tensor x) -> Tensor")
    lib.impl("f", lambda x: x + 1, "CPU")
    assert ndgrad.ops.lifetime_ns.f(ndgrad.zeros(1)).tolist() == [1.0]
    assert "f" in dir(ndgrad.ops.lifetime_ns)
    assert repr(ndgrad.ops.lifetime_ns) == "<module 'ndgrad.ops.lifetime_ns' from 'ndgrad.ops'>"
    lib._destroy()
    with pytest.raises(AttributeError, match="'_OpNamespace' 'lifetime_ns' object has no "
                                             "attribute 'f'"):
        ndgrad.ops.lifetime_ns.f
    again = ndgrad.library.Library("lifetime_ns", "DEF")       # the namespace is free again
    again.define("f(Tensor x) -> Tensor")
    del again
    with pytest.raises(AttributeError, match="module 'ndgrad.ops' has no attribute 'no_ns'"):
        ndgrad.ops.no_ns


def test_kernels_per_device_and_fake():
    @ndgrad.library.custom_op("kern_ns::f", mutates_args=(), device_types=None)
    def f(x: ndgrad.Tensor) -> ndgrad.Tensor:
        return x + 1

    @f.register_kernel("cpu")
    def _(x):
        return x + 2
    assert f(ndgrad.zeros(1)).tolist() == [2.0]
    with f.set_kernel_enabled("cpu", False):
        assert f(ndgrad.zeros(1)).tolist() == [1.0]
    assert f(ndgrad.zeros(1)).tolist() == [2.0]
    ndgrad.library.register_kernel("kern_ns::f", "cpu", lambda x: x + 5)
    assert ndgrad.ops.kern_ns.f(ndgrad.zeros(1)).tolist() == [5.0]

    @ndgrad.library.custom_op("kern_ns::g", mutates_args=(), device_types="cuda")
    def g(x: ndgrad.Tensor) -> ndgrad.Tensor:
        return x
    with pytest.raises(NotImplementedError, match="Could not run 'kern_ns::g' with arguments "
                                                  "from the 'CPU' backend"):
        g(ndgrad.ones(1))
    seen = []
    ndgrad.library.register_fake("kern_ns::f", lambda x: seen.append(x) or ndgrad.empty_like(x))
    assert ndgrad.library.opcheck(f, (ndgrad.ones(2),), test_utils="test_faketensor") == {
        "test_faketensor": "SUCCESS"}
    assert len(seen) == 1 and seen[0].shape == (2,)


def test_opcheck_matches_torch():
    def scenario(T, ns):
        Tensor = T.Tensor
        co = T.library.custom_op

        @co(f"{ns}::sneaky", mutates_args=())
        def sneaky(x: Tensor) -> Tensor:
            x.add_(1)
            return x.clone()
        sneaky.register_fake(lambda x: T.empty_like(x))

        @co(f"{ns}::nofake", mutates_args=())
        def nofake(x: Tensor) -> Tensor:
            return x.clone()

        @co(f"{ns}::badfake", mutates_args=())
        def badfake(x: Tensor) -> Tensor:
            return x.clone()
        badfake.register_fake(lambda x: x.new_empty(3))

        @co(f"{ns}::good", mutates_args=())
        def good(x: Tensor) -> Tensor:
            return x * 2
        good.register_fake(lambda x: T.empty_like(x))

        lib = T.library.Library(ns, "FRAGMENT")
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: x * 2, "CPU")
        oc = T.library.opcheck
        one = T.ones(2)
        rg = T.ones(2, requires_grad=True)

        def errors_only(res):
            return {k: (v if isinstance(v, str) else f"{type(v).__name__}: {v}")
                    for k, v in res.items()}
        return [
            lambda: oc(sneaky, (T.ones(2),)),
            lambda: errors_only(oc(sneaky, (T.ones(2),), raise_exception=False)),
            lambda: oc(nofake, (one,)),
            lambda: oc(nofake, (one,), test_utils="test_schema"),
            lambda: oc(nofake, (one,), test_utils=("test_schema", "bogus")),
            lambda: oc(badfake, (one,), test_utils="test_faketensor"),
            lambda: oc(good, (one,)),
            lambda: oc(good, (rg,)),
            lambda: oc(getattr(T.ops, ns).f.default, (rg,),
                       test_utils="test_autograd_registration"),
            lambda: oc(getattr(T.ops, ns).f.default, (one,), test_utils="test_schema"),
        ]
    _compare(scenario)


# ---- the "Python custom operators" tutorial, with NumPy in place of PIL/torchvision ----

def _tutorial(torch):
    def to_image(pic):
        return pic.detach().numpy().copy()

    def crop_image(arr, box):
        x0, y0, x1, y1 = box
        return arr[:, y0:y1, x0:x1]

    @torch.library.custom_op("tutorial_ns::crop", mutates_args=())
    def crop(pic: torch.Tensor, box: Sequence[int]) -> torch.Tensor:
        img = to_image(pic.cpu())
        cropped = crop_image(img, box)
        return torch.from_numpy(cropped.copy()).to(pic.device, pic.dtype)

    @crop.register_fake
    def _(pic, box):
        channels = pic.shape[0]
        x0, y0, x1, y1 = box
        return pic.new_empty(channels, y1 - y0, x1 - x0)

    @torch.library.custom_op("tutorial_ns::paste", mutates_args=())
    def paste(im1: torch.Tensor, im2: torch.Tensor, coord: Sequence[int]) -> torch.Tensor:
        assert im1.device == im2.device
        assert im1.dtype == im2.dtype
        a = to_image(im1.cpu())
        b = to_image(im2.cpu())
        x0, y0 = coord
        a[:, y0:y0 + b.shape[1], x0:x0 + b.shape[2]] = b
        return torch.from_numpy(a).to(im1.device, im1.dtype)

    @paste.register_fake
    def _(im1, im2, coord):
        assert im1.device == im2.device
        assert im1.dtype == im2.dtype
        return torch.empty_like(im1)

    def backward(ctx, grad_output):
        grad_input = grad_output.new_zeros(ctx.pic_shape)
        grad_input = paste(grad_input, grad_output, ctx.coords)
        return grad_input, None

    def setup_context(ctx, inputs, output):
        pic, box = inputs
        ctx.coords = box[:2]
        ctx.pic_shape = pic.shape

    crop.register_autograd(backward, setup_context=setup_context)

    @torch.library.custom_op("tutorial_ns::numpy_sin", mutates_args={"output"},
                             device_types="cpu")
    def numpy_sin(input: torch.Tensor, output: torch.Tensor) -> None:
        assert input.device == output.device
        assert input.device.type == "cpu"
        input_np = input.numpy()
        output_np = output.numpy()
        np.sin(input_np, out=output_np)
    return crop, numpy_sin


def test_python_custom_ops_tutorial():
    crop, numpy_sin = _tutorial(ndgrad)
    torch_ = ndgrad
    img = torch_.ones(3, 64, 64)
    img *= torch_.linspace(0, 1, steps=64) * torch_.linspace(0, 1, steps=64).unsqueeze(-1)

    @torch_.compile(fullgraph=True)
    def f(img):
        return crop(img, (10, 10, 50, 50))
    for picture in (img, img * 0.5):
        np.testing.assert_array_equal(f(picture).numpy(), picture.numpy()[:, 10:50, 10:50])

    img = img.requires_grad_()
    result = crop(img, (10, 10, 50, 50))
    result.sum().backward()
    expected = np.zeros((3, 64, 64), np.float32)
    expected[:, 10:50, 10:50] = 1
    np.testing.assert_array_equal(img.grad.numpy(), expected)

    examples = [
        [torch_.randn(3, 16, 16), [0, 0, 10, 10]],
        [torch_.randn(3, 21, 21, requires_grad=True), [10, 0, 20, 10]],
        [torch_.randn(3, 20, 20, dtype=torch_.double), [3, 4, 12, 20]],
        [torch_.randn(3, 40, 40, requires_grad=True, dtype=torch_.double), [3, 4, 32, 25]],
    ]
    for example in examples:
        assert set(torch_.library.opcheck(crop, example).values()) == {"SUCCESS"}

    @torch_.compile(fullgraph=True)
    def g(x):
        out = torch_.empty(3)
        numpy_sin(x, out)
        return out
    for _ in range(2):
        x = torch_.randn(3)
        assert torch_.allclose(g(x), x.sin())
    example_inputs = [
        [torch_.randn(3), torch_.empty(3)],
        [torch_.randn(0, 3), torch_.empty(0, 3)],
        [torch_.randn(1, 2, 3, 4, dtype=torch_.double),
         torch_.empty(1, 2, 3, 4, dtype=torch_.double)],
    ]
    for example in example_inputs:
        assert set(torch_.library.opcheck(numpy_sin, example).values()) == {"SUCCESS"}


def test_tutorial_gradients_match_torch():
    t_crop, _ = _tutorial(torch)
    n_crop, _ = _tutorial(ndgrad)
    data = np.random.default_rng(0).standard_normal((3, 12, 12))
    xt = torch.tensor(data, requires_grad=True)
    xn = ndgrad.tensor(data, requires_grad=True)
    (t_crop(xt, [2, 3, 9, 8]) ** 2).sum().backward()
    (n_crop(xn, [2, 3, 9, 8]) ** 2).sum().backward()
    np.testing.assert_allclose(xn.grad.numpy(), xt.grad.numpy())
    assert ndgrad.autograd.gradcheck(lambda p: n_crop(p, [1, 1, 5, 4]), (xn,))


def test_compiled_custom_op_gradients():
    op = _sin_op(ndgrad, "compiled_ns")
    op.register_autograd(lambda ctx, g: g * ctx.saved_tensors[0].cos(),
                         setup_context=lambda ctx, inputs, output:
                         ctx.save_for_backward(inputs[0]))

    @ndgrad.compile(fullgraph=True)
    def f(x):
        return (op(x * 2) + 1).sum()
    for seed in range(2):
        data = np.random.default_rng(seed).standard_normal(4)
        x = ndgrad.tensor(data, requires_grad=True)
        f(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(2 * data))


def test_get_ctx_and_names():
    assert set(ndgrad.library.__all__) >= {"Library", "custom_op", "register_fake",
                                           "register_autograd", "register_kernel", "opcheck",
                                           "define", "impl", "infer_schema", "get_ctx"}
    with pytest.raises(RuntimeError, match="no symbolic sizes"):
        ndgrad.library.get_ctx().new_dynamic_size()
    with pytest.raises(NotImplementedError, match="fallthrough_kernel"):
        ndgrad.library.fallthrough_kernel()
    assert re.match(r"^Library\(kind=DEF, ns=names_ns", repr(ndgrad.library.Library("names_ns",
                                                                                    "DEF")))


def _vmap_run(T):
    ns = _ns(T)

    @T.library.custom_op(f"{ns}::npsin", mutates_args=())
    def npsin(x: T.Tensor) -> T.Tensor:
        return T.from_numpy(np.sin(x.numpy()))

    @T.library.custom_op(f"{ns}::add", mutates_args=())
    def add(x: T.Tensor, y: T.Tensor) -> T.Tensor:
        return x + y

    x = T.arange(6.0).reshape(2, 3)
    out = [T.vmap(npsin)(x), T.vmap(npsin, in_dims=1)(x)]      # per entry: no rule yet
    seen = []

    def rule(info, in_dims, x):
        seen.append((info.batch_size, info.randomness, x.shape[in_dims[0]]))
        return npsin(x), in_dims[0]

    def rule2(info, in_dims, x, y):
        x = x.movedim(in_dims[0], 0) if in_dims[0] is not None else x.unsqueeze(0)
        y = y.movedim(in_dims[1], 0) if in_dims[1] is not None else y.unsqueeze(0)
        seen.append(tuple(d is None for d in in_dims))
        return x + y, 0
    npsin.register_vmap(rule)
    T.library.register_vmap(f"{ns}::add", rule2)
    out += [T.vmap(npsin)(x), T.vmap(npsin, in_dims=1)(x),
            T.vmap(add, in_dims=(0, None))(x, T.ones(3)), T.vmap(T.vmap(add))(x, x * 10)]
    return [o.tolist() for o in out], seen


def test_vmap_of_custom_ops():
    # torch hands a rule the batch dim where the user put it, ndgrad always first: the rules
    # read in_dims, so both give the same values
    assert _vmap_run(ndgrad) == _vmap_run(torch)


def test_register_autocast_matches_torch():
    def scenario(T, ns):
        seen = []

        @T.library.custom_op(f"{ns}::mm", mutates_args=())
        def mm(x: T.Tensor, y: T.Tensor) -> T.Tensor:
            seen.append((str(x.dtype), str(y.dtype), T.is_autocast_enabled("cpu")))
            return x @ y
        lib = T.library.Library(ns, "FRAGMENT")
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CPU")
        x = T.ones(2, 2)

        def under_autocast(fn):
            with T.autocast("cpu"):
                return fn()
        return [
            lambda: [T.library.register_autocast(f"{ns}::mm", "cpu", T.bfloat16)] and None,
            lambda: T.library.register_autocast(f"{ns}::mm", "tpu", T.float16),
            lambda: [T.library.register_autocast(f"{ns}::twice", "cpu", T.float16)] and None,
            lambda: under_autocast(lambda: mm(x, x)).dtype, lambda: mm(x, x).dtype,
            lambda: under_autocast(lambda: mm(x, x.double())),
            lambda: under_autocast(lambda: getattr(T.ops, ns).twice(x)).dtype,
            lambda: (seen, lib.ns == ns),             # (lib kept alive until here)
            lambda: T.library.register_autocast(f"{ns}::nothere", "cpu", T.float16),
        ]
    _compare(scenario)


def test_compiled_library_ops():
    lib = ndgrad.library.Library("ljit_ns", "DEF")
    lib.define("npcos(Tensor x) -> Tensor")
    lib.impl("npcos", lambda x: ndgrad.from_numpy(np.cos(x.numpy())), "CPU")
    lib.define("sq(Tensor x) -> Tensor")
    lib.impl("sq", lambda x: x * x, "CompositeImplicitAutograd")
    ops = ndgrad.ops.ljit_ns

    @ndgrad.compile(fullgraph=True)
    def f(x):
        return ops.npcos(x) + ops.sq(x)

    @ndgrad.compile(fullgraph=True)
    def g(x):
        return ops.sq(x).sum()
    for seed in range(2):
        data = np.random.default_rng(seed).standard_normal(3)
        np.testing.assert_allclose(f(ndgrad.tensor(data)).numpy(), np.cos(data) + data ** 2)
        x = ndgrad.tensor(data, requires_grad=True)
        g(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * data)
    del lib
