"""nn.utils.prune against torch: masks (random ones from the same seed), repeated pruning
(Note [Masks of repeated pruning]), global pruning, importance scores, remove, state_dict
keys, gradients through the mask, and the errors."""

import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401  (a submodule torch does not import itself)

import ndgrad


def _pair(lib, shape=(6, 5), seed=0):
    lib.manual_seed(seed)
    m = lib.nn.Linear(shape[1], shape[0])
    with lib.no_grad():
        m.weight.copy_(lib.tensor(np.random.default_rng(seed).standard_normal(shape),
                                  dtype=lib.float32))
    return m


def _both(fn):
    out = []
    for lib in (torch, ndgrad):
        res = fn(lib)
        out.append(res)
    return out


def _np(t):
    return np.asarray(t.detach().numpy())


PRUNINGS = {
    "l1": lambda P, m: P.l1_unstructured(m, "weight", amount=0.4),
    "l1_int": lambda P, m: P.l1_unstructured(m, "weight", amount=7),
    "random": lambda P, m: P.random_unstructured(m, "weight", amount=0.3),
    "ln": lambda P, m: P.ln_structured(m, "weight", amount=2, n=2, dim=0),
    "ln_inf_dim1": lambda P, m: P.ln_structured(m, "weight", amount=0.4, n=float("inf"), dim=1),
    "random_structured": lambda P, m: P.random_structured(m, "weight", amount=2, dim=1),
    "identity": lambda P, m: P.identity(m, "weight"),
    "custom": lambda P, m: P.custom_from_mask(m, "bias", mask=m.bias.detach() > 0),
    "repeated": lambda P, m: P.ln_structured(
        P.l1_unstructured(P.random_unstructured(m, "weight", amount=0.2), "weight", amount=5),
        "weight", amount=1, n=1, dim=0),
}


@pytest.mark.parametrize("case", sorted(PRUNINGS))
def test_masks_and_reparametrization_match_torch(case):
    def run(lib):
        m = _pair(lib)
        PRUNINGS[case](lib.nn.utils.prune, m)
        x = lib.ones(2, 5)
        y = m(x)
        y.sum().backward()
        params = sorted(n for n, _ in m.named_parameters())
        buffers = sorted(n for n, _ in m.named_buffers())
        name = "bias" if case == "custom" else "weight"
        orig = getattr(m, name + "_orig")
        return (params, buffers, list(m.state_dict()), _np(getattr(m, name + "_mask")),
                _np(getattr(m, name)), _np(orig.grad), _np(y),
                lib.nn.utils.prune.is_pruned(m))
    theirs, ours = _both(run)
    assert ours[:3] == theirs[:3]
    for a, b in zip(ours[3:7], theirs[3:7]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert ours[7] is theirs[7] is True


def test_remove_makes_the_pruning_permanent():
    def run(lib):
        P = lib.nn.utils.prune
        m = _pair(lib)
        orig = m.weight
        P.l1_unstructured(m, "weight", amount=0.5)
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        m(lib.ones(1, 5)).sum().backward()
        opt.step()                           # the optimizer holds the original Parameter
        P.remove(m, "weight")
        return (m.weight is orig, type(m.weight).__name__, _np(m.weight),
                sorted(n for n, _ in m.named_parameters()), list(m.state_dict()),
                P.is_pruned(m), m.weight.requires_grad)
    theirs, ours = _both(run)
    assert ours[0] is theirs[0] is True
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)
    assert ours[3:] == theirs[3:] and ours[1] == "Parameter"


def test_global_unstructured_and_importance_scores():
    def run(lib):
        P = lib.nn.utils.prune
        a, b = _pair(lib, (4, 3), 1), _pair(lib, (3, 4), 2)
        P.l1_unstructured(a, "weight", amount=2)
        P.global_unstructured([(a, "weight"), (b, "weight"), (b, "bias")],
                              pruning_method=P.L1Unstructured, amount=0.3)
        c = _pair(lib, (3, 4), 3)
        P.l1_unstructured(c, "weight", amount=4,
                          importance_scores=lib.arange(12.0).reshape(3, 4).flip(1))
        return (_np(a.weight_mask), _np(b.weight_mask), _np(b.bias_mask), _np(c.weight_mask))
    theirs, ours = _both(run)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def test_pruned_module_copies_and_pickles():
    import copy
    import io
    for lib in (torch, ndgrad):      # the pruned attribute is not a leaf: as in torch
        t = _pair(lib)
        lib.nn.utils.prune.l1_unstructured(t, "weight", amount=0.5)
        with pytest.raises(RuntimeError, match="graph leaves"):
            copy.deepcopy(t)
    m = _pair(ndgrad)
    ndgrad.nn.utils.prune.l1_unstructured(m, "weight", amount=0.5)
    buf = io.BytesIO()
    ndgrad.save(m.state_dict(), buf)
    buf.seek(0)
    fresh = _pair(ndgrad, seed=5)
    ndgrad.nn.utils.prune.identity(fresh, "weight")   # the usual way to load a pruned dict
    fresh.load_state_dict(ndgrad.load(buf))
    np.testing.assert_array_equal(_np(fresh(ndgrad.ones(1, 5))), _np(m(ndgrad.ones(1, 5))))


ERRORS = [
    lambda P, m: P.l1_unstructured(m, "weight", amount=1.5),
    lambda P, m: P.l1_unstructured(m, "weight", amount=-1),
    lambda P, m: P.l1_unstructured(m, "weight", amount="a"),
    lambda P, m: P.l1_unstructured(m, "weight", amount=31),
    lambda P, m: P.ln_structured(m, "bias", amount=1, n=2, dim=0),
    lambda P, m: P.remove(m, "weight"),
    lambda P, m: P.global_unstructured([(m, "weight")], pruning_method=P.LnStructured,
                                       amount=1, n=2, dim=0),
    lambda P, m: P.l1_unstructured(m, "weight", amount=1, importance_scores=m.bias),
    lambda P, m: P.l1_unstructured(m, "weigh", amount=0.5),
    lambda P, m: P.ln_structured(m, "weight", amount=1, n=2, dim=3),
    lambda P, m: P.random_structured(m, "weight", amount=1, dim=2),
    lambda P, m: P.custom_from_mask(m, "weight", mask=m.bias.detach() > 0),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    errs = []
    for lib in (torch, ndgrad):
        m = _pair(lib)
        before = sorted(n for n, _ in m.named_parameters())
        with pytest.raises(Exception) as e:
            ERRORS[i](lib.nn.utils.prune, m)
        errs.append(e)
        assert sorted(n for n, _ in m.named_parameters()) == before   # nothing half-done
    theirs, ours = errs
    assert ours.type is theirs.type
    if i >= 8:      # the checks added with torch's whole wording
        assert str(ours.value).replace("ndgrad.", "torch.") == str(theirs.value)
    words = [w for w in str(theirs.value).split() if w.isalpha() and len(w) > 4][:6]
    assert all(w in str(ours.value) for w in words), (str(ours.value), str(theirs.value))


def test_repeated_structured_pruning_ranks_the_pruned_values():
    # the second method scores module.weight (orig * mask, as of the last forward or
    # pruning), not weight_orig: channel norms count only surviving entries, and a step
    # taken since the last forward is not seen yet
    def run(lib):
        P = lib.nn.utils.prune
        m = _pair(lib, (6, 5), 4)
        P.random_unstructured(m, "weight", amount=0.5)
        with lib.no_grad():
            m.weight_orig.mul_(lib.linspace(0.5, 2.0, 30).reshape(6, 5))
        P.ln_structured(m, "weight", amount=3, n=2, dim=0)
        first = _np(m.weight_mask)
        c = lib.nn.Conv2d(2, 4, 3)
        P.l1_unstructured(c, "weight", amount=0.6)
        c(lib.ones(1, 2, 5, 5))
        P.ln_structured(c, "weight", amount=0.5, n=1, dim=1)
        return first, _np(c.weight_mask)
    lib_seeds = []
    for lib in (torch, ndgrad):
        lib.manual_seed(3)
        lib_seeds.append(run(lib))
    for a, b in zip(*lib_seeds):
        np.testing.assert_array_equal(a, b)
