"""dgbdt.plotting: each plot renders to a PNG, and what is drawn matches the model."""
import numpy as np
import pytest

import dgbdt

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture(scope="module")
def trained():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) > 0).astype(float)
    d = dgbdt.Dataset(X, y, feature_names=["age", "income", "x2", "x3", "x4"])
    hist = {}
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 3, "eval_metric": ["auc"]},
                    d, 8, evals=[(d, "train"), (dgbdt.Dataset(X[:300], y[:300]), "valid")],
                    evals_result=hist, verbose_eval=False)
    return b, hist


def test_plot_importance(trained, tmp_path):
    b, _ = trained
    ax = dgbdt.plot_importance(b, importance_type="gain", max_num_features=2)
    ax.figure.savefig(tmp_path / "imp.png")
    scores = b.get_score(importance_type="gain")
    top = sorted(scores, key=scores.get)[-2:]
    assert [t.get_text() for t in ax.get_yticklabels()] == top
    assert sorted(p.get_width() for p in ax.patches) == sorted(scores[k] for k in top)
    assert (tmp_path / "imp.png").stat().st_size > 1000
    plt.close("all")


def test_plot_metric(trained, tmp_path):
    _, hist = trained
    ax = dgbdt.plot_metric(hist)
    ax.figure.savefig(tmp_path / "metric.png")
    lines = {ln.get_label(): ln.get_ydata() for ln in ax.get_lines()}
    assert set(lines) == {"train", "valid"}
    np.testing.assert_array_equal(lines["valid"], hist["valid"]["auc"])
    assert ax.get_ylabel() == "auc"
    with pytest.raises(ValueError, match="has no metric 'rmse'"):
        dgbdt.plot_metric(hist, metric="rmse")
    plt.close("all")


def test_plot_tree(trained, tmp_path):
    b, _ = trained
    t = b.trees[1]
    ax = dgbdt.plot_tree(b, tree_idx=1)
    ax.figure.savefig(tmp_path / "tree.png")
    texts = [x.get_text() for x in ax.texts]
    leaves = int((t.left == -1).sum())
    assert sum(s.startswith("leaf=") for s in texts) == leaves
    splits = [s for s in texts if "<" in s]
    assert len(splits) == t.n_nodes - leaves
    assert splits[0].startswith(b.feature_names[t.feature[0]] + "<")
    assert sum("missing" in s for s in texts) == t.n_nodes - leaves   # one per split
    with pytest.raises(IndexError, match="outside the model's 8 trees"):
        dgbdt.plot_tree(b, tree_idx=8)
    plt.close("all")


def test_plot_tree_takes_xgboosts_old_num_trees(trained):
    """XGBoost's ``plot_tree(model, num_trees=0)`` (deprecated there too): the same tree, with
    XGBoost's FutureWarning; both names at once is an error."""
    with pytest.warns(FutureWarning, match="num_trees"):
        ax = dgbdt.plotting.plot_tree(trained[0], num_trees=1)
    assert ax.texts
    with pytest.raises(ValueError, match="tree_idx"):
        dgbdt.plotting.plot_tree(trained[0], tree_idx=2, num_trees=1)
    plt.close("all")
