"""ndgrad.utils.benchmark against torch.utils.benchmark: Measurement statistics and repr,
Compare tables (every option), Timer's behaviour and errors. Timings differ run to run, so the
printed formats are compared on Measurements built from the same fixed times."""

import pickle
import random
import re

import pytest
import torch.utils.benchmark as tb

import ndgrad
import ndgrad.utils.benchmark as nb


def _addr(s):
    return re.sub(r"<[\w.]+\.Measurement object at 0x[0-9a-f]+>", "<M>", s)


def _pair(number, times, **spec):
    spec.setdefault("stmt", "f(x)")
    spec.setdefault("setup", "pass")
    return (tb.Measurement(number, list(times), tb.TaskSpec(**spec)),
            nb.Measurement(number, list(times), nb.TaskSpec(**spec)))


SPECS = [dict(), dict(label="L", sub_label="s", description="d", setup="y = 1"),
         dict(stmt="a = 1\nb = a", setup="x = 1\ny = 2", sub_label="z", num_threads=4),
         dict(stmt="a\nb", description="many\nlines", num_threads=2)]


def test_measurement_matches_torch_on_fixed_times():
    rng = random.Random(0)
    for _ in range(120):
        n = rng.choice([1, 2, 3, 4, 5, 8, 17])
        base = 10 ** rng.uniform(-9, 1)
        noise = rng.choice([0.0, 0.01, 0.08, 0.2, 0.6])
        times = [base * (1 + noise * rng.random()) for _ in range(n)]
        number = rng.choice([1, 10, 1000])
        for spec in SPECS:
            t, m = _pair(number, times, **spec)
            assert _addr(repr(m)) == _addr(repr(t))
            assert repr(m).startswith("<ndgrad.utils.benchmark.utils.common.Measurement object")
            assert (m.median, m.mean, m.iqr, m.times) == pytest.approx(
                (t.median, t.mean, t.iqr, t.times), rel=1e-12)
            assert m.significant_figures == t.significant_figures
            assert m.has_warnings == t.has_warnings
            assert m.meets_confidence(0.05) == t.meets_confidence(0.05)
            assert (m.title, m.as_row_name, m.env, m.label, m.num_threads) == (
                t.title, t.as_row_name, t.env, t.label, t.num_threads)


def test_measurement_repr_example():
    m = nb.Measurement(100, [5.2e-4, 5.8e-4, 6.3e-4, 4.1e-4, 9e-4],
                       nb.TaskSpec("x + y", "pass", label="Broadcasting add",
                                   sub_label="4x8"))
    lines = repr(m).splitlines()
    assert lines[1:] == [
        "Broadcasting add: 4x8",
        "  Median: 5.80 us",
        "  IQR:    1.10 us (5.20 to 6.30)",
        "  5 measurements, 100 runs per measurement, 1 thread",
        "  WARNING: Interquartile range is 19.0% of the median measurement.",
        "           This could indicate system fluctuation."]


def test_helpers_match_torch():
    for x in [1e-9, 1e-6, 1e-3, 0.999e-6, 1.0, 12.0, 5e-10, 3.3e-5, 999.9e-9]:
        assert nb.select_unit(x) == tb.select_unit(x)
    for x, n in [(3.14159, 2), (123456.0, 3), (0.000123, 1), (987.65, 4), (1.0, 1)]:
        assert nb.trim_sigfig(x, n) == tb.trim_sigfig(x, n)
    with pytest.raises(AssertionError, match="must be an integer"):
        nb.trim_sigfig(1.0, 1.5)
    assert nb.unit_to_english("ms") == "millisecond"
    assert nb.ordered_unique([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_merge_and_pickle():
    spec = nb.TaskSpec("f()", "pass", label="x")
    a = nb.Measurement(10, [1e-4, 2e-4], spec, metadata={"k": 1})
    b = nb.Measurement(2, [3e-5], spec)
    c = nb.Measurement(1, [1e-6], nb.TaskSpec("g()", "pass"))
    merged = nb.Measurement.merge([a, b, c])
    assert [m.task_spec for m in merged] == [spec, c.task_spec]
    assert merged[0].number_per_run == 1 and merged[0].raw_times == pytest.approx(
        [1e-5, 2e-5, 1.5e-5]) and merged[0].metadata is None
    back = pickle.loads(pickle.dumps(a))
    assert back == a and back.median == a.median and back.metadata == {"k": 1}
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        a.nope


def _results(mod, seed, env=False):
    rng = random.Random(seed)
    out = []
    for label in ("A", None):
        for threads in (1, 4):
            for sub in ("float", "int", None):
                for desc in ("n=1", "n=100", "n=10000"):
                    if rng.random() < 0.2:
                        continue
                    base = 10 ** rng.uniform(-8, -1)
                    times = [base * (1 + rng.choice([0.01, 0.4]) * rng.random())
                             for _ in range(rng.choice([1, 5, 9]))]
                    e = (("env" + "x" * (seed % 3)) if sub == "int" else "base") if env else None
                    for _ in range(rng.choice([1, 2])):
                        out.append(mod.Measurement(10, times, mod.TaskSpec(
                            "torch.add(x, y)", "pass", label=label, sub_label=sub,
                            description=desc, num_threads=threads, env=e)))
    return out


@pytest.mark.parametrize("options", [(), ("trim",), ("color",), ("rowwise",), ("warn",),
                                     ("trim", "color", "warn")])
def test_compare_matches_torch(options, capsys):
    for seed in range(6):
        printed = []
        for mod in (tb, nb):
            c = mod.Compare(_results(mod, seed, env=seed % 2 == 1))
            if "trim" in options:
                c.trim_significant_figures()
            if "color" in options:
                c.colorize()
            if "rowwise" in options:
                c.colorize(rowwise=True)
            if "warn" in options:
                c.highlight_warnings()
            c.print()
            printed.append(capsys.readouterr().out)
            assert str(c) + "\n" == printed[-1]
        assert printed[1] == printed[0]


def test_compare_table_shape():
    ms = [nb.Measurement(1, [t * 1e-6] * 4, nb.TaskSpec("f(x)", "pass", label="f",
                                                        sub_label=s, description=d))
          for t, s, d in ((5.0, "a", "n=1"), (7.5, "a", "n=2"), (50.0, "b", "n=1"))]
    assert str(nb.Compare(ms)).splitlines() == [
        "[--------- f ----------]",
        "         |  n=1   |  n=2",
        "1 threads: -------------",
        "      a  |   5.0  |  7.5",
        "      b  |  50.0  |     ",
        "",
        "Times are in microseconds (us)."]
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`, got <class "
                                         "'int'> instead."):
        nb.Compare(ms).extend_results([1])


def test_timer_measures():
    x = ndgrad.ones(3)
    t = nb.Timer("torch.add(x, y)", setup="y = x * 2", globals={"x": x}, label="add",
                 sub_label="ones", description="n=3", num_threads=1)
    before = ndgrad.get_num_threads()
    m = t.timeit(50)
    assert m.number_per_run == 50 and len(m.raw_times) == 1 and m.raw_times[0] > 0
    assert (m.label, m.sub_label, m.description, m.stmt, m.setup) == (
        "add", "ones", "n=3", "torch.add(x, y)", "y = x * 2")
    seen = []
    m = t.blocked_autorange(callback=lambda n, s: seen.append((n, s)), min_run_time=0.01)
    assert sum(m.raw_times) >= 0.01 and len(seen) == len(m.raw_times)
    assert all(n == m.number_per_run for n, _ in seen)
    m = t.adaptive_autorange(threshold=0.5, min_run_time=0.005, max_run_time=0.1)
    assert len(m.raw_times) > 3 or sum(m.raw_times) > 0.1
    assert ndgrad.get_num_threads() == before
    print_ = repr(m).splitlines()
    assert print_[1:3] == ["add: ones", "n=3"] and "setup: y = x * 2" in print_
    # ndgrad is in the statement's globals under both names; stmt/setup are dedented.
    assert nb.Timer("""
        a = ndgrad.ones(2)
        b = torch.ones(2)
    """).timeit(2).stmt == "a = ndgrad.ones(2)\nb = torch.ones(2)"


def test_timer_errors_match_torch():
    cases = [lambda m: m.Timer(lambda: 1), lambda m: m.Timer("x", global_setup="y"),
             lambda m: m.Timer("x", language="rust"), lambda m: m.Timer("x").repeat(),
             lambda m: m.Timer("x").autorange()]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(tb)
        with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value))):
            case(nb)
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        nb.Timer("x", language="c++")
    with pytest.raises(NotImplementedError, match="Callgrind"):
        nb.Timer("x").collect_callgrind()
    with pytest.raises(NameError):
        nb.Timer("undefined_name").timeit(1)


def test_reachable_as_attribute():
    assert ndgrad.utils.benchmark.Timer is nb.Timer
    from ndgrad.utils.benchmark.utils.common import Measurement
    assert Measurement is nb.Measurement


def _fuzz(B, T):
    f = B.Fuzzer(
        parameters=[B.FuzzedParameter("n", 4, 64, distribution="loguniform"),
                    [B.FuzzedParameter("m", 1, 8, distribution="uniform"),
                     B.FuzzedParameter("r", 0.0, 1.0, distribution="uniform")],
                    B.FuzzedParameter("d", 1, 3, distribution="uniform", strict=True)],
        tensors=[B.FuzzedTensor("x", size=("n", "m", 5), steps=(1, 2, 1), max_elements=600,
                                dim_parameter="d"),
                 B.FuzzedTensor("y", size=("m", "n"), dtype=T.int64, min_elements=8,
                                probability_contiguous=0.2)],
        constraints=[lambda params: params["n"] % 2 == 0], seed=3)
    out = []
    for tensors, props, params in f.take(6):
        out.append((params,
                    {k: (tuple(v.shape), v.stride(), v.is_contiguous(), v.flatten().tolist())
                     for k, v in tensors.items()},
                    {k: {a: b.tolist() if hasattr(b, "tolist") else b for a, b in p.items()}
                     for k, p in props.items()}))
    return out, f.rejection_rate


def test_fuzzer_matches_torch():
    # the same parameters, layouts and values for the same seed
    ours, theirs = _fuzz(nb, ndgrad), _fuzz(tb, __import__("torch"))
    assert ours == theirs and ours[1] > 0


def test_fuzzer_custom_distribution_aliases_and_errors():
    f = nb.Fuzzer(parameters=[nb.FuzzedParameter("m", 2, 5, distribution="uniform"),
                              nb.FuzzedParameter("k", distribution={
                                  1: 0.5, nb.ParameterAlias("m"): 0.5})],
                  tensors=[nb.FuzzedTensor("x", size=("k", "m"))], seed=0)
    draws = [(p["k"], p["m"], tuple(t["x"].shape)) for t, _, p in f.take(40)]
    assert {k for k, _, _ in draws} - {1} and any(k == 1 for k, _, _ in draws)
    assert all(k in (1, m) and shape == (k, m) for k, m, shape in draws)
    assert repr(nb.ParameterAlias("m")) == "ParameterAlias[alias_to: m]"
    with pytest.raises(AssertionError, match="Distribution is not normalized"):
        nb.FuzzedParameter("k", distribution={1: 0.5, 2: 0.6})
    with pytest.raises(AssertionError, match="Unknown distribution: normal"):
        nb.FuzzedParameter("k", 1, 2, distribution="normal")
    with pytest.raises(AssertionError, match="'minval' must be None"):
        nb.FuzzedParameter("k", 1, distribution={1: 1.0})
    with pytest.raises(ValueError, match="Duplicate names in parameters and tensors"):
        nb.Fuzzer([nb.FuzzedParameter("x", 1, 2, distribution="uniform")],
                  [nb.FuzzedTensor("x", size=(1,))])
    cyc = nb.Fuzzer([nb.FuzzedParameter("a", distribution={nb.ParameterAlias("b"): 1.0}),
                     nb.FuzzedParameter("b", distribution={nb.ParameterAlias("a"): 1.0})],
                    [], seed=1)
    with pytest.raises(ValueError, match="ParameterAlias cycle detected"):
        next(cyc.take(1))
    never = nb.Fuzzer([nb.FuzzedParameter("n", 1, 2, distribution="uniform")],
                      [nb.FuzzedTensor("x", size=("n",), min_elements=5)], seed=1)
    with pytest.raises(ValueError, match="Failed to generate a set of valid parameters."):
        next(never.take(1))
    assert never.rejection_rate == 1.0
