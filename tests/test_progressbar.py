"""The progress bar of a training's rounds (dgbdt.progressbar): drawn by tqdm on stderr with the
rounds done, the latest eval metric and the time left, in-process and in every Dask mode (the
workers' rounds reach the client's bar with the log lines); automatic only where someone
watches; off with verbosity=0 or progress_bar=False; clear errors for bad values."""
import re

import numpy as np
import pytest

import dgbdt
from dgbdt import progressbar

pytest.importorskip("tqdm")


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(scale=0.8, size=n) > 0).astype(float)
    return X, y


def _final_count(err: str) -> tuple[int, int]:
    """The bar's last 'done/total' in stderr (tqdm redraws with carriage returns)."""
    counts = re.findall(r"(\d+)/(\d+) \[", err)
    assert counts, f"no bar drawn: {err!r}"
    return tuple(map(int, counts[-1]))


def test_the_bar_shows_rounds_metric_and_stops_where_training_stopped(capsys):
    X, y = _data()
    d = dgbdt.Dataset(X[:2400], label=y[:2400])
    v = dgbdt.Dataset(X[2400:], label=y[2400:])
    b = dgbdt.train({"objective": "binary:logistic", "eta": 1.0, "eval_metric": "auc"}, d, 200,
                    evals=[(v, "valid")], early_stopping_rounds=3, verbose_eval=True,
                    progress_bar=True)
    out, err = capsys.readouterr()
    rounds = b.num_boosted_rounds()
    assert rounds < 200                                  # early stopping happened
    assert _final_count(err) == (rounds, 200)
    assert "round" in err and "valid-auc=" in err
    last_auc = re.findall(r"valid-auc=([0-9.]+)", err)[-1]
    # eval lines still reach stdout, written above the bar
    assert f"[{rounds - 1}]\tvalid-auc:{last_auc}" in out


def test_no_bar_unless_someone_watches(capsys, monkeypatch):
    X, y = _data(500)
    d = dgbdt.Dataset(X, label=y)
    dgbdt.train({}, d, 5, verbose_eval=False)              # stderr is not a terminal here
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(progressbar, "_watched", lambda: True)
    monkeypatch.setattr(progressbar, "AUTO_DELAY", 0.0)
    dgbdt.train({}, d, 5, verbose_eval=False)             # watched: the automatic bar
    assert _final_count(capsys.readouterr().err) == (5, 5)
    dgbdt.train({"verbosity": 0}, d, 5, verbose_eval=False)
    dgbdt.train({}, d, 5, verbose_eval=False, progress_bar=False)
    assert capsys.readouterr().err == ""


def test_an_automatic_bar_waits_before_it_appears(capsys, monkeypatch):
    monkeypatch.setattr(progressbar, "_watched", lambda: True)
    assert progressbar.wanted(None, 1) == progressbar.AUTO_DELAY > 0
    X, y = _data(500)
    dgbdt.train({}, dgbdt.Dataset(X, label=y), 3, verbose_eval=False)    # well under 2 s
    assert capsys.readouterr().err == ""


def test_bad_values_and_a_missing_tqdm_are_clear(monkeypatch):
    X, y = _data(200)
    d = dgbdt.Dataset(X, label=y)
    with pytest.raises(TypeError, match="progress_bar must be True, False or None"):
        dgbdt.train({}, d, 2, progress_bar="yes")
    monkeypatch.setattr(progressbar, "_tqdm", lambda: None)
    with pytest.raises(ImportError, match="pip install tqdm"):
        dgbdt.train({}, d, 2, progress_bar=True)
    monkeypatch.setattr(progressbar, "_watched", lambda: True)
    dgbdt.train({}, d, 2, verbose_eval=False)          # automatic without tqdm: no bar, no error


@pytest.mark.parametrize("mode,n_workers", [("graph", 2), ("collective", 2), ("task", 1)])
def test_every_dask_mode_draws_the_bar_on_the_client(_clusters, capsys, mode, n_workers):
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    client = _clusters(n_workers)
    X, y = _data(4000, seed=1)
    d = dgd.DaskDataset(client, da.from_array(X[:3200], chunks=(800, 5)),
                        da.from_array(y[:3200], chunks=800))
    v = dgd.DaskDataset(client, da.from_array(X[3200:], chunks=(400, 5)),
                        da.from_array(y[3200:], chunks=400))
    out = dgd.train(client, {"objective": "binary:logistic", "eval_metric": "logloss"}, d, 12,
                    evals=[(v, "valid")], mode=mode, verbose_eval=False, progress_bar=True)
    assert out["mode"] == mode
    err = capsys.readouterr().err
    assert _final_count(err) == (12, 12)
    last = out["history"]["valid"]["logloss"][-1]
    assert f"valid-logloss={last:.5f}" in err
