"""The programs in examples/ run and give correct results."""

import importlib.util
import pathlib

import numpy as np

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_laplace_uncertainty_recovers_parameters_and_hvps_agree():
    out = _load("laplace_uncertainty").main(steps=400, verbose=False)
    # The truth lies within a few standard deviations of the fit.
    assert np.all(np.abs(out["fitted"] - out["true"]) < 4 * out["std"] + 1e-3)
    hv_rev, hv_fwd, hv_dense = out["hv"]
    np.testing.assert_allclose(hv_rev, hv_dense, rtol=1e-9)
    np.testing.assert_allclose(hv_fwd, hv_dense, rtol=1e-9)


def test_train_digits_learns_plots_and_checks_a_gradient(tmp_path):
    out = _load("train_digits").main(epochs=6, out=str(tmp_path / "digits.png"),
                                     verbose=False)
    assert out["test_acc"] > 0.93
    assert out["history"]["loss"][-1] < out["history"]["loss"][0] / 3
    assert (tmp_path / "digits.png").stat().st_size > 10_000
    assert out["grad_rel_err"] < 1e-6


def test_char_lstm_learns_the_zen():
    out = _load("char_lstm").main(steps=80, verbose=False)
    first, last = np.mean(out["losses"][:5]), np.mean(out["losses"][-5:])
    assert last < first / 2
    assert out["sample"].startswith("Simple ") and len(out["sample"]) == 47


def test_ode_fit_gauss_newton_recovers_the_parameters():
    out = _load("ode_fit").main(iterations=8, verbose=False)
    assert out["costs"][-1] < out["costs"][0] / 10
    assert np.all(np.abs(out["fitted"] - out["true"]) < 4 * out["stderr"])


def test_draw_graph_names_the_parameters_and_shows_saved_tensors():
    out = _load("draw_graph").main(render=False, verbose=False)
    for label in ("0.weight\n (3, 4)", "2.bias\n (1)", "MseLossBackward0", "TanhBackward0",
                  "result\n (8, 3)", "target\n (8, 1)"):
        assert label in out["dot"]
    assert out["dot"].count("AccumulateGrad") == 4 and out["path"] is None


def test_wgan_gp_generator_approaches_the_modes_and_the_plot_is_written(tmp_path):
    out = _load("wgan_gp").main(steps=60, batch=128, out=str(tmp_path / "wgan.png"),
                                verbose=False)
    w, dist = out["history"]["w"], out["history"]["mode_distance"]
    # the generated points move onto the ring's modes ...
    assert np.mean(dist[-5:]) < 0.6 * np.mean(dist[:3])
    # ... and the critic's Wasserstein estimate falls well below its early peak
    assert np.mean(w[-5:]) < 0.4 * max(w)
    assert out["modes_covered"] >= 6
    assert (tmp_path / "wgan.png").stat().st_size > 20_000
