"""The numba tier (``backend="numba"``, ndgrad/jit/numba_backend.py): each VM op within its
stated ulp bound of NumPy (exact ops bitwise), compiled functions agree with the NumPy backend,
float16 and large arrays stay on NumPy, and the default backend never imports numba."""

import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ndgrad
from ndgrad.jit import trace_graph
from ndgrad.jit.codegen import generate

numba_backend = pytest.importorskip("ndgrad.jit.numba_backend")
if not numba_backend.available():   # the test extra installs numba: this never skips in CI
    pytest.fail("numba is missing: pip install -e '.[test]'")

UNARY = {"sin": np.sin, "cos": np.cos, "tanh": np.tanh, "exp": np.exp, "log": np.log,
         "sqrt": np.sqrt, "neg": np.negative, "abs": np.abs, "recip": np.reciprocal,
         "square": np.square}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}


def _run(op, dtype, *arrays, imm=None):
    vm = numba_backend.get_vm()
    n = arrays[0].size
    R = np.empty((len(arrays) + 1, n), dtype)
    for i, a in enumerate(arrays):
        R[i] = a
    b = 2 if imm is not None else (1 if len(arrays) > 1 else 0)
    prog = np.array([[numba_backend.OPCODES[op], len(arrays), 0, b]], dtype=np.int32)
    imms = np.array([1, 0] + ([imm] if imm is not None else []), dtype=dtype)
    vm(prog, imms, R)
    return R[len(arrays)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_vm_op_is_within_its_ulp_bound_of_numpy(dtype):
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, 1000).astype(dtype)
    pos = rng.uniform(0.1, 5, 1000).astype(dtype)
    y = rng.uniform(0.5, 2, 1000).astype(dtype)
    for name, f in UNARY.items():
        arg = pos if name in ("log", "sqrt") else x
        got, want = _run(name, dtype, arg), f(arg)
        bound = numba_backend.ULP_BOUND.get(name, 0)
        ulps = np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want))
        assert ulps.max() <= bound, (name, dtype, ulps.max())
    for name, f in BINARY.items():
        np.testing.assert_array_equal(_run(name, dtype, x, y), f(x, y))
    for name, f in (("muli", np.multiply), ("addi", np.add), ("subi", np.subtract),
                    ("divi", np.true_divide)):
        np.testing.assert_array_equal(_run(name, dtype, x, imm=1.01),
                                      f(x, np.array(1.01, dtype)))
    np.testing.assert_array_equal(_run("tanhb", dtype, x, y), x * (1 - y * y))


_CYCLE = (lambda v: v.sin(), lambda v: v * 1.01, lambda v: v + 0.5, lambda v: v.tanh(),
          lambda v: v.exp(), lambda v: v * 0.9, lambda v: v.log(), lambda v: v - 0.5)


def _chain(x):
    for i in range(24):
        x = _CYCLE[i % 8](x)
    return x.sum()


@pytest.mark.parametrize("dtype", [ndgrad.float32, ndgrad.float64])
def test_compiled_chain_agrees_with_the_numpy_backend(dtype):
    x0 = ndgrad.linspace(-1, 1, 16, dtype=dtype)

    def step(f):
        x = x0.clone().requires_grad_()
        f(x).backward()
        return f(x).item(), x.grad.numpy()

    cn = ndgrad.compile(_chain, backend="numba")
    cp = ndgrad.compile(_chain)
    step(cn), step(cp)
    (vn, gn), (vp, gp) = step(cn), step(cp)
    tol = 1e-5 if dtype == ndgrad.float32 else 1e-13
    assert vn == pytest.approx(vp, rel=tol)
    np.testing.assert_allclose(gn, gp, rtol=tol * 10)
    assert "_vm(" in cn.code and "_vm(" not in cp.code


def test_float16_bfloat16_and_large_arrays_stay_on_numpy():
    for x in (ndgrad.ones(8, dtype=ndgrad.float16), ndgrad.ones(8, dtype=ndgrad.bfloat16),
              ndgrad.ones(numba_backend.MAX_NUMEL + 1)):
        g = trace_graph(lambda x: (x * 2).tanh() + 1, (x,)).graph
        gen = generate(g, backend="numba")
        assert "_vm(" not in gen.code
        np.testing.assert_array_equal(gen(x.numpy())[0], generate(g)(x.numpy())[0])


def test_the_default_backend_never_imports_numba():
    code = ("import sys, ndgrad\n"
            "f = ndgrad.compile(lambda x: (x * 2).sin().sum())\n"
            "x = ndgrad.ones(3, requires_grad=True)\n"
            "f(x); f(x).backward()\n"
            "print('numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=600)
    assert out.stdout.strip() == "False"


def test_numba_is_imported_by_the_first_vm_call_only():
    # Note [numba is imported by the first VM call]: decorating, and graphs without a VM
    # cluster, leave numba unimported; the first run of generated code with a cluster imports
    # it and rebinds the generated module's global to the VM itself
    code = ("import sys, ndgrad\n"
            "from ndgrad.jit import numba_backend as nb\n"
            "mm = ndgrad.compile(lambda a, b: (a @ b).tanh().sum(), backend='numba')\n"
            "a = ndgrad.ones(40, 40)\n"
            "r = [mm(a, a).item() for _ in range(3)]\n"
            "print('numba' in sys.modules)\n"
            "ch = ndgrad.compile(lambda x: ((x * 2).sin() * 3 + 1).tanh().exp().log().sum(),\n"
            "                    backend='numba')\n"
            "x = ndgrad.linspace(-1, 1, 16)\n"
            "v1 = ch(x).item()\n"
            "print('numba' in sys.modules, '_vm(' in ch.code)\n"
            "fn = ch.specializations()[0]._plan.f.fn\n"
            "print(fn.__globals__['_vm'] is nb._loader)\n"
            "v2 = ch(x).item()\n"
            "print('numba' in sys.modules, fn.__globals__['_vm'] is nb.get_vm(),\n"
            "      abs(v1 - v2) < 1e-5)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=600)
    assert out.stdout.split("\n")[:4] == ["False", "False True", "True", "True True True"], \
        out.stdout
    vm = numba_backend.get_vm()
    assert numba_backend.lazy_vm() is vm            # once loaded, code binds the VM itself


def _graph(fn, *xs):
    return trace_graph(fn, xs).graph


def test_small_clusters_stay_numpy_and_large_ones_run_in_the_vm():
    # Note [Elementwise VM]: fewer than MIN_CLUSTER_OPS ops (or about as many register loads
    # as ops) cost more as a VM call than as NumPy calls
    assert numba_backend.MIN_CLUSTER_OPS > 2
    assert not numba_backend.worth_a_call(numba_backend.MIN_CLUSTER_OPS - 1, 1)
    assert numba_backend.worth_a_call(numba_backend.MIN_CLUSTER_OPS, 1)
    assert not numba_backend.worth_a_call(20, 19)
    x = ndgrad.linspace(-1, 1, 320, dtype=ndgrad.float32).reshape(32, 10)
    t = ndgrad.linspace(0, 1, 320, dtype=ndgrad.float32).reshape(32, 10)

    def small(x, t):              # mlp_small's loss head: 2 elementwise ops
        d = x - t
        return d * d

    def large(x, t):              # 8 elementwise ops on 2 loaded inputs
        d = x - t
        for _ in range(3):
            d = d * 0.5 + t
        return d * d
    for fn, vm in ((small, False), (large, True)):
        g = _graph(fn, x, t)
        gn, gp = generate(g, backend="numba"), generate(g)
        assert ("_vm(" in gn.code) is vm, gn.code
        if not vm:
            assert gn.code == gp.code     # exactly the NumPy backend's code
        np.testing.assert_array_equal(gn(x.numpy(), t.numpy())[0],
                                      gp(x.numpy(), t.numpy())[0])


def test_libm_ops_on_larger_arrays_stay_numpy():
    # the C library's tanh/exp/... run one element at a time: above MAX_NUMEL_LIBM NumPy's
    # SIMD loop is faster, so such an op splits the cluster; arithmetic stays in the VM
    n = numba_backend.MAX_NUMEL_LIBM["tanh"]

    def fn(x):
        for _ in range(4):
            x = x * 0.5 + 0.25
        x = x.tanh()
        for _ in range(4):
            x = x * 0.5 - 0.25
        return x
    for size, tanh_in_vm in ((n, True), (n + 1, False)):
        x = ndgrad.linspace(-1, 1, size, dtype=ndgrad.float64)
        g = _graph(fn, x)
        gn, gp = generate(g, backend="numba"), generate(g)
        assert ("_np_tanh(" not in gn.code) is tanh_in_vm, gn.code
        assert gn.code.count("_vm(") == (1 if tanh_in_vm else 2), gn.code
        np.testing.assert_allclose(gn(x.numpy())[0], gp(x.numpy())[0], rtol=1e-15)


def test_a_numba_that_fails_to_import_falls_back_to_numpy(tmp_path):
    # installed but broken (a numba/NumPy version mismatch): the first VM call warns once and
    # runs the clusters with NumPy's interpreter of the same programs
    fake = tmp_path / "numba"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('Numba needs NumPy 2.2 or less')\n")
    root = pathlib.Path(__file__).resolve().parent.parent
    script = textwrap.dedent("""
        import warnings
        import numpy as np
        import ndgrad
        def f(x):
            y = x
            for _ in range(6):
                y = (y * 1.1 + 0.3).tanh() * (y - 0.2).sin() + y.exp() * 0.01
            return y
        c = ndgrad.compile(f, backend="numba")
        x = ndgrad.randn(8, 8)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            outs = [c(x) for _ in range(3)]
        assert sum("failed to import" in str(m.message) for m in w) == 1, [str(m) for m in w]
        for o in outs:
            np.testing.assert_allclose(o.numpy(), f(x).numpy(), rtol=1e-6)
        vm = ndgrad.jit.numba_backend.get_vm()
        print(vm.__name__)
    """)
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{root}")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "numpy_vm", r.stderr[-800:]
