"""nn.utils against torch: parametrize (register/remove/cached/right_inverse/errors),
parametrizations.weight_norm/spectral_norm/orthogonal, the old weight_norm API, stateless
functional_call (tie_weights, strict), clip_grad_* and the parameter-vector conversions. Each
scenario runs with torch and with ndgrad and must print the same lines."""

import contextlib
import io
import warnings

import numpy as np
import pytest

import ndgrad
import ndgrad.nn
import ndgrad.nn.utils.parametrize
from ndgrad.nn.utils import parametrizations as nd_pz

torch = pytest.importorskip("torch")
from torch.nn.utils import parametrizations as t_pz  # noqa: E402
from torch.nn.utils import parametrize as t_p  # noqa: E402

LIBS = {
    "torch": (torch, torch.nn, t_p, t_pz),
    "ndgrad": (ndgrad, ndgrad.nn, ndgrad.nn.utils.parametrize, nd_pz),
}


def _capture(fn, lib):
    buf = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(buf):
        warnings.simplefilter("ignore")
        fn(*LIBS[lib])
    return buf.getvalue().replace("torch.", "X.").replace("ndgrad.", "X.").splitlines()


def _scenario_utils(T, nn, P, PZ):
    def r(x):
        return np.round(x.detach().numpy(), 8).tolist()

    W = np.arange(12.0).reshape(3, 4) / 10 - 0.3

    def lin():
        m = nn.Linear(4, 3).double()
        with T.no_grad():
            m.weight.copy_(T.tensor(W))
            m.bias.copy_(T.tensor([1.0, 2.0, 3.0]))
        return m

    class Sym(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    class Scale(nn.Module):
        def forward(self, X):
            return X * 2

        def right_inverse(self, X):
            return X / 2

    m = nn.Linear(3, 3).double()
    P.register_parametrization(m, "weight", Sym())
    print(
        type(m).__name__,
        list(m.state_dict()),
        P.is_parametrized(m),
        P.is_parametrized(m, "bias"),
        P.type_before_parametrizations(m).__name__,
    )
    print(repr(m))
    m2 = lin()
    P.register_parametrization(m2, "weight", Scale())
    print(r(m2.weight), r(m2.parametrizations.weight.original))
    m2.weight = T.ones(3, 4, dtype=T.float64)
    print(r(m2.parametrizations.weight.original))
    P.register_parametrization(m2, "weight", Scale())
    print(r(m2.weight), r(m2.parametrizations.weight.original))
    x = T.tensor(np.ones((2, 4)), requires_grad=True)
    m2(x).sum().backward()
    print(r(m2.parametrizations.weight.original.grad))
    with P.cached():
        a = m2.weight
        b = m2.weight
        print(a is b)
    print(m2.weight is m2.weight)
    P.remove_parametrizations(m2, "weight", leave_parametrized=True)
    print(type(m2).__name__, r(m2.weight), list(m2.state_dict()), type(m2.weight).__name__)
    m3 = lin()
    P.register_parametrization(m3, "weight", Scale())
    P.remove_parametrizations(m3, "weight", leave_parametrized=False)
    print(r(m3.weight))
    for f in [
        lambda: P.register_parametrization(lin(), "foo", Sym()),
        lambda: P.register_parametrization(lin(), "weight", Sym()),
        lambda: P.remove_parametrizations(lin(), "weight"),
        lambda: setattr(P.register_parametrization(lin(), "weight", Sym()), "weight", T.ones(3, 4)),
    ]:
        try:
            f()
            print("ok")
        except Exception as e:
            print(type(e).__name__, str(e).replace("torch.", "X.").replace("ndgrad.", "X.")[:300])
    # weight norm
    wn = PZ.weight_norm(lin())
    print(list(wn.state_dict()), r(wn.parametrizations.weight.original0), r(wn.weight))
    wn(x).sum().backward()
    print(
        r(wn.parametrizations.weight.original0.grad), r(wn.parametrizations.weight.original1.grad)
    )
    print(repr(wn))
    wn2 = PZ.weight_norm(lin(), dim=None)
    print(r(wn2.parametrizations.weight.original0), r(wn2.weight))
    wn3 = PZ.weight_norm(lin(), dim=1)
    print(r(wn3.parametrizations.weight.original0))
    # old API
    ow = nn.utils.weight_norm(lin())
    print(list(ow.state_dict()), r(ow.weight_g), type(ow.weight).__name__)
    y = ow(x).sum()
    y.backward()
    print(r(ow.weight_g.grad), r(ow.weight_v.grad))
    nn.utils.remove_weight_norm(ow)
    print(list(ow.state_dict()), r(ow.weight))
    # load old state into new
    wn4 = PZ.weight_norm(lin())
    sd = {
        "weight_g": T.ones(3, 1, dtype=T.float64),
        "weight_v": T.tensor(W),
        "bias": T.zeros(3, dtype=T.float64),
    }
    wn4.load_state_dict(sd)
    print(r(wn4.weight))
    # spectral norm: deterministic parts
    sn = PZ.spectral_norm(lin())
    print(list(sn.state_dict()), [n for n, _ in sn.named_buffers()])
    sn.eval()
    sigma_est = np.linalg.svd(W, compute_uv=False)[0]
    print(np.allclose(r(sn.weight), W / sigma_est, atol=1e-6))
    print(repr(sn))
    # functional_call
    from_ = nn.utils.stateless.functional_call
    m5 = lin()
    out = from_(m5, {"weight": T.zeros(3, 4, dtype=T.float64)}, (T.ones(1, 4, dtype=T.float64),))
    print(r(out), r(m5.weight)[0])
    for f in [
        lambda: from_(
            m5,
            {"weight": T.zeros(3, 4, dtype=T.float64), "zz": T.ones(1)},
            (T.ones(1, 4, dtype=T.float64),),
            strict=True,
        ),
        lambda: from_(
            m5,
            {"weight": T.zeros(3, 4, dtype=T.float64)},
            (T.ones(1, 4, dtype=T.float64),),
            strict=True,
        ),
    ]:
        try:
            f()
            print("ok")
        except Exception as e:
            print(type(e).__name__, str(e).replace("torch.", "X.").replace("ndgrad.", "X."))

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False).double()
            self.b = nn.Linear(2, 2, bias=False).double()
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    t = Tied()
    xx = T.ones(1, 2, dtype=T.float64)
    print(
        r(from_(t, {"a.weight": T.ones(2, 2, dtype=T.float64)}, xx)),
        r(
            from_(t, {"a.weight": T.ones(2, 2, dtype=T.float64)}, xx, tie_weights=False)
            - t.b(T.ones(2, 2, dtype=T.float64).sum(0, keepdim=True))
        ),
    )
    try:
        from_(
            t,
            {"a.weight": T.ones(2, 2, dtype=T.float64), "b.weight": T.zeros(2, 2, dtype=T.float64)},
            xx,
        )
    except Exception as e:
        print(type(e).__name__, e)
    # gradient through functional_call
    w = T.tensor(W, requires_grad=True)
    out = from_(lin(), {"weight": w}, (T.ones(2, 4, dtype=T.float64),)).sum()
    out.backward()
    print(r(w.grad))
    # clip / convert
    ps = [
        nn.Parameter(T.tensor([3.0, 4.0], dtype=T.float64)),
        nn.Parameter(T.tensor([1.0], dtype=T.float64)),
    ]
    for p_, g in zip(ps, [[3.0, -4.0], [12.0]]):
        p_.grad = T.tensor(g, dtype=T.float64)
    for nt in [2.0, 1, float("inf"), 0.5]:
        gs = [p_.grad.clone() for p_ in ps]
        n = nn.utils.clip_grad_norm_(ps, 2.0, norm_type=nt)
        print(nt, round(n.item(), 10), [r(p_.grad) for p_ in ps])
        for p_, g in zip(ps, gs):
            p_.grad = g
    nn.utils.clip_grad_value_(ps, 3.5)
    print([r(p_.grad) for p_ in ps])
    print(r(nn.utils.get_total_norm([T.tensor([3.0, 4.0])], 2)))
    tn = nn.utils.get_total_norm([p_.grad for p_ in ps])
    nn.utils.clip_grads_with_norm_(ps, 1.0, tn)
    print([r(p_.grad) for p_ in ps])
    v = nn.utils.parameters_to_vector(ps)
    print(r(v), v.grad_fn is not None)
    nn.utils.vector_to_parameters(T.arange(3.0).double(), ps)
    print([r(p_) for p_ in ps])
    try:
        nn.utils.vector_to_parameters([1], ps)
    except Exception as e:
        print(type(e).__name__, e)
    try:       # the usual slip: a parameter whose .grad is still None
        nn.utils.parameters_to_vector([ps[0], None])
    except Exception as e:
        print(type(e).__name__, e)
    q = nn.Parameter(T.ones(2))
    q.grad = T.tensor([float("nan"), 1.0])
    try:
        nn.utils.clip_grad_norm_(q, 1.0, error_if_nonfinite=True)
    except Exception as e:
        print(type(e).__name__, e)
    print(r(nn.utils.clip_grad_norm_([], 1.0)))


def _scenario_orthogonal(T, nn, P, PZ):
    def r(x):
        return np.round(x.detach().numpy(), 6).tolist()

    W = np.random.default_rng(0).standard_normal((3, 3))
    for mp in ["matrix_exp", "cayley", "householder"]:
        for triv in [True, False]:
            m = nn.Linear(3, 3).double()
            with T.no_grad():
                m.weight.copy_(T.tensor(W))
            try:
                PZ.orthogonal(m, orthogonal_map=mp, use_trivialization=triv)
                w = m.weight
                print(mp, triv, r(w), list(m.state_dict()))
                m(T.ones(2, 3, dtype=T.float64)).sum().backward()
                print(r(m.parametrizations.weight.original.grad))
                m.weight = T.tensor(np.linalg.qr(W)[0])
                print(r(m.weight))
            except Exception as e:
                print(mp, triv, type(e).__name__, e)
    m = nn.Linear(4, 2).double()
    PZ.orthogonal(m)
    w = m.weight
    print(np.allclose((w @ w.T).detach().numpy(), np.eye(2)))
    try:
        PZ.orthogonal(nn.Linear(3, 3), orthogonal_map="foo")
    except Exception as e:
        print(type(e).__name__, e)


def _scenario_old_spectral_norm(T, nn, P, PZ):
    def r(x):
        return np.round(x.detach().numpy(), 6).tolist()

    W = np.random.default_rng(0).standard_normal((3, 4))
    m = nn.Linear(4, 3).double()
    with T.no_grad():
        m.weight.copy_(T.tensor(W))
    nn.utils.spectral_norm(m, n_power_iterations=5)
    sd = m.state_dict()
    print(
        list(sd), dict(sd._metadata), [n for n, _ in m.named_parameters()], type(m.weight).__name__
    )
    for _ in range(30):
        m(T.ones(1, 4, dtype=T.float64))
    print(r(m.weight))
    m.eval()
    y = m(T.ones(2, 4, dtype=T.float64))
    y.sum().backward()
    print(r(m.weight_orig.grad))
    nn.utils.remove_spectral_norm(m)
    print(
        list(m.state_dict()), r(m.weight), type(m.weight).__name__, dict(m.state_dict()._metadata)
    )
    try:
        nn.utils.remove_spectral_norm(m)
    except Exception as e:
        print(type(e).__name__, e)
    try:
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    except Exception as e:
        print(type(e).__name__, e)


def _scenario_transfer(T, nn, P, PZ):
    class Scale(nn.Module):
        def forward(self, X):
            return X * 2

        def right_inverse(self, X):
            return X / 2

    a = nn.Linear(3, 2).double()
    b = nn.Linear(3, 2).double()
    with T.no_grad():
        a.weight.fill_(1.0)
        b.weight.fill_(5.0)
    P.register_parametrization(a, "weight", Scale())
    P.transfer_parametrizations_and_params(a, b)
    print(
        type(b).__name__,
        list(b.state_dict()),
        b.weight.tolist(),
        b.parametrizations.weight.original is a.parametrizations.weight.original,
    )
    c = nn.Module()
    P.transfer_parametrizations_and_params(a, c, "weight")
    print(list(c.state_dict()), c.weight.tolist())


@pytest.mark.parametrize(
    "scenario",
    [_scenario_utils, _scenario_orthogonal, _scenario_old_spectral_norm, _scenario_transfer],
)
def test_utils_same_as_torch(scenario):
    assert _capture(scenario, "ndgrad") == _capture(scenario, "torch")


def test_spectral_norm_converges_to_sigma():
    rng = np.random.default_rng(3)
    W = rng.standard_normal((5, 4))
    m = ndgrad.nn.Linear(4, 5).double()
    with ndgrad.no_grad():
        m.weight.copy_(ndgrad.tensor(W))
    nd_pz.spectral_norm(m, n_power_iterations=3)
    for _ in range(10):
        w = m.weight
    sigma = np.linalg.svd(W, compute_uv=False)[0]
    np.testing.assert_allclose(w.detach().numpy(), W / sigma, rtol=1e-6)
    assert [n for n, _ in m.named_buffers()] == [
        "parametrizations.weight.0._u",
        "parametrizations.weight.0._v",
    ]


def test_clip_grad_norm_warns_on_empty_generator():
    with pytest.warns(UserWarning, match="empty generator"):
        ndgrad.nn.utils.clip_grad_norm_((p for p in []), 1.0)


def test_parametrized_module_trains_like_torch():
    """weight_norm-parametrized Linear: 10 gradient steps give torch's losses."""
    rng = np.random.default_rng(0)
    X, Y, W = rng.standard_normal((8, 4)), rng.standard_normal((8, 3)), rng.standard_normal((3, 4))

    def run(T, nn, PZ):
        m = nn.Linear(4, 3).double()
        with T.no_grad():
            m.weight.copy_(T.tensor(W))
            m.bias.zero_()
        PZ.weight_norm(m)
        losses = []
        for _ in range(10):
            m.zero_grad()
            loss = ((m(T.tensor(X)) - T.tensor(Y)) ** 2).mean()
            loss.backward()
            with T.no_grad():
                for p in m.parameters():
                    p -= 0.1 * p.grad
            losses.append(loss.item())
        return losses

    np.testing.assert_allclose(run(ndgrad, ndgrad.nn, nd_pz), run(torch, torch.nn, t_pz), rtol=1e-9)


@pytest.mark.parametrize("transpose", [False, True])
def test_fusion_weights_as_torch(transpose):
    rng = np.random.default_rng(5)
    arrs = [rng.standard_normal(s) for s in [(4, 3, 2, 2), (4,), (4,), (4,), (4,), (4,)]]
    arrs[3] = np.abs(arrs[3]) + 0.5
    if transpose:
        arrs = [rng.standard_normal((3, 4, 2, 2))] + arrs[1:]
    lin_w = rng.standard_normal((4, 3))

    def run(T, nn):
        w, b, rm, rv, bw, bb = (T.tensor(a) for a in arrs)
        cw, cb = nn.utils.fuse_conv_bn_weights(w, b, rm, rv, 1e-5, bw, bb, transpose)
        lw, lb = nn.utils.fuse_linear_bn_weights(T.tensor(lin_w), None, rm, rv, 1e-3, bw, bb)
        return [x.detach().numpy() for x in (cw, cb, lw, lb)] + [type(cw).__name__]

    for n, t in zip(run(ndgrad, ndgrad.nn), run(torch, torch.nn)):
        if isinstance(t, str):
            assert n == t
        else:
            np.testing.assert_allclose(n, t, rtol=1e-12)


def test_skip_init():
    m = ndgrad.nn.utils.skip_init(ndgrad.nn.Linear, 3, 2, dtype=ndgrad.float64)
    assert m.weight.shape == (2, 3) and m.weight.dtype == ndgrad.float64
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        ndgrad.nn.utils.skip_init(ndgrad.nn.Flatten)


@pytest.mark.parametrize("old_api", [False, True])
def test_seeded_spectral_norm_equals_torch(old_api):
    """The power-iteration vectors start from the seeded normal draws, so a seeded module
    gives torch's normalized weight."""
    W = np.random.default_rng(0).standard_normal((5, 4))

    def run(T, nn, PZ):
        m = nn.Linear(4, 5).double()
        with T.no_grad():
            m.weight.copy_(T.tensor(W))
        T.manual_seed(7)
        if old_api:
            nn.utils.spectral_norm(m)
            for _ in range(3):
                m(T.ones(1, 4, dtype=T.float64))
            return m.weight.detach().numpy()
        PZ.spectral_norm(m)
        return np.stack([m.weight.detach().numpy() for _ in range(3)])

    np.testing.assert_allclose(
        run(ndgrad, ndgrad.nn, nd_pz), run(torch, torch.nn, t_pz), rtol=0, atol=1e-13
    )


def test_weight_norm_dims_match_torch():
    # a negative dim other than -1 counts from the end (-1 is the whole-tensor norm); an
    # out-of-range dim raises torch's IndexError and leaves the module as it was (both APIs)
    rng = np.random.default_rng(3)
    w = rng.standard_normal((3, 2, 5))
    x = rng.standard_normal((2, 2, 7))
    for dim in (0, 1, 2, -1, -2, -3, None):
        out = []
        for lib, pz in ((torch, t_pz), (ndgrad, nd_pz)):
            c = lib.nn.Conv1d(2, 3, 5, bias=False, dtype=lib.float64)
            with lib.no_grad():
                c.weight.copy_(lib.tensor(w))
            pz.weight_norm(c, dim=dim)
            g = c.parametrizations.weight.original0
            y = c(lib.tensor(x))
            y.pow(2).sum().backward()
            out.append((tuple(g.shape), y.detach().numpy(), g.grad.numpy()))
        assert out[1][0] == out[0][0], dim
        np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-12)
        np.testing.assert_allclose(out[1][2], out[0][2], rtol=1e-10, atol=1e-12)
    for dim in (3, -4):
        msgs = []
        for lib, pz in ((torch, t_pz), (ndgrad, nd_pz)):
            c = lib.nn.Conv1d(2, 3, 5)
            with pytest.raises(IndexError) as e:
                pz.weight_norm(c, dim=dim)
            msgs.append(str(e.value))
            assert type(c.weight).__name__ == "Parameter"
        assert msgs[1] == msgs[0]
        c = ndgrad.nn.Conv1d(2, 3, 5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(IndexError, match="Dimension out of range"):
                ndgrad.nn.utils.weight_norm(c, dim=dim)
        assert sorted(c._parameters) == ["bias", "weight"]
