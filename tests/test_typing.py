"""The typed public API (Note [Typed API] in ndgrad/types.py): the generated stubs are up to
date, mypy finds no error in the package, and a small typed user program is seen as it should
be (types revealed, wrong calls reported); the signature wrappers carry their annotations."""

from __future__ import annotations

import inspect
import pathlib
import re
import subprocess
import sys
import textwrap
import typing

import ndgrad
from ndgrad.tensor import Tensor
from tools import gen_stubs

ROOT = pathlib.Path(__file__).resolve().parent.parent

# A user program: each ``reveal_type`` line ends with the type mypy must reveal, each wrong
# call with the error code mypy must report.
USER_PROGRAM = textwrap.dedent("""
    import ndgrad
    import ndgrad.nn.functional as F
    from ndgrad import Tensor

    x = ndgrad.randn(2, 3, requires_grad=True)
    reveal_type(x)  # Tensor
    reveal_type(x.sum())  # Tensor
    reveal_type(ndgrad.randn(2, 3).sum())  # Tensor
    reveal_type(ndgrad.tensor([1.0, 2.0]))  # Tensor
    reveal_type(x.exp().mean(dim=0))  # Tensor
    reveal_type(x @ x.T + 1)  # Tensor
    reveal_type(x.shape)  # Size
    reveal_type(x.grad)  # Tensor | None
    reveal_type(F.relu(x))  # Tensor
    reveal_type(ndgrad.cat([x, x]))  # Tensor
    reveal_type(x.view(3, 2))  # Tensor
    reveal_type(ndgrad.float32)  # dtype
    layer = ndgrad.nn.Linear(3, 4)
    reveal_type(layer)  # Linear
    reveal_type(layer.weight)  # Parameter
    opt = ndgrad.optim.Adam(layer.parameters(), lr=1e-3)
    reveal_type(opt)  # Adam
    (g,) = ndgrad.autograd.grad(layer(x).sum(), x)
    loss = layer(x).pow(2).sum()
    loss.backward()
    opt.step()
    with ndgrad.no_grad():
        y: Tensor = x * 2
    x.sum(dim="a")  # arg-type
    x.not_a_method()  # attr-defined
    ndgrad.zeros(2, 3, dtype="float32")  # arg-type
    ndgrad.linalg.svd(x, full_matrices=1.5)  # arg-type
""")


def test_stubs_are_up_to_date():
    # In a fresh interpreter, so that no other test's monkeypatching shows in the namespaces.
    r = subprocess.run([sys.executable, "-m", "tools.gen_stubs", "--check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert set(gen_stubs.render()) == {str(p.relative_to(ROOT)) for p in
                                       (ROOT / "ndgrad").rglob("*.pyi")}


def _expected() -> tuple:
    reveals, errors = {}, set()
    for n, line in enumerate(USER_PROGRAM.splitlines(), 1):
        if "reveal_type(" in line:
            reveals[n] = line.rsplit("# ", 1)[1]
        elif "  # " in line:
            errors.add((n, line.rsplit("# ", 1)[1]))
    return reveals, errors


def test_mypy_checks_the_package_and_a_user_program(tmp_path):
    prog = tmp_path / "user_program.py"
    prog.write_text(USER_PROGRAM)
    # The package's own configuration ([tool.mypy] in pyproject.toml); the cache in the tree
    # (.mypy_cache, ignored by git) makes a second run take about a second.
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(ROOT / ".mypy_cache"),
                        "ndgrad", str(prog)], cwd=ROOT, capture_output=True, text=True,
                        timeout=900)
    out = r.stdout + r.stderr
    package_errors = [ln for ln in out.splitlines() if ln.startswith("ndgrad") and ": error:" in ln]
    assert not package_errors, "\n".join(package_errors)
    reveals, want_errors = _expected()
    got_reveals, got_errors = {}, set()
    for ln in out.splitlines():
        m = re.match(r".*user_program\.py:(\d+): (note|error): (.*)", ln)
        if not m:
            continue
        n, kind, msg = int(m.group(1)), m.group(2), m.group(3)
        if kind == "note" and msg.startswith("Revealed type is"):
            got_reveals[n] = msg.split('"')[1]
        elif kind == "error":
            got_errors.add((n, msg.rsplit("[", 1)[1].rstrip("]")))
    for n, want in reveals.items():
        assert got_reveals.get(n, "").rsplit(".", 1)[-1] == want.rsplit(".", 1)[-1] or (
            want == "Tensor | None" and got_reveals.get(n) == "ndgrad.tensor.Tensor | None"), (
            n, USER_PROGRAM.splitlines()[n - 1], got_reveals.get(n))
    assert got_errors == want_errors, out


def test_wrappers_carry_their_declared_types():
    sig = inspect.signature(ndgrad.sum)
    assert list(sig.parameters) == ["input", "dim", "keepdim", "dtype", "out"]
    hints = typing.get_type_hints(ndgrad.sum)
    assert hints["input"] is Tensor and hints["keepdim"] is bool and hints["return"] is Tensor
    assert hints["dtype"] == typing.Optional[ndgrad.dtype]
    assert typing.get_type_hints(Tensor.add_)["alpha"] == ndgrad.types.Scalar
    # Every wrapper's annotations resolve (the return type in its implementation's module).
    checked = 0
    for owner in (ndgrad, Tensor, ndgrad.linalg, ndgrad.fft, ndgrad.special):
        for name in dir(owner):
            fn = getattr(owner, name, None)
            if hasattr(fn, "__signature_schema__"):
                typing.get_type_hints(fn)
                checked += 1
    assert checked > 800


def test_py_typed_ships_with_the_stubs():
    assert (ROOT / "ndgrad" / "py.typed").is_file()
    text = (ROOT / "pyproject.toml").read_text()
    assert '"*" = ["*.pyi"]' in text and 'ndgrad = ["py.typed"]' in text and '"mypy' in text
