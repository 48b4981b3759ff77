"""Monotone constraints (dgbdt.tree.constraints, #17): parsing and resolving the parameter, the
predictions' monotonicity on a grid, and the same model on Dask as in-process."""
import numpy as np
import pytest

import dgbdt
from dgbdt.tree.constraints import parse, resolve
from dgbdt.params.normalize import ParameterError


def _data(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4)).astype(np.float32)
    # non-monotone in x0 and x1 without constraints: sin and a quadratic
    y = np.sin(2 * X[:, 0]) + X[:, 0] - X[:, 1] ** 2 + 0.5 * X[:, 2] + rng.normal(0, .3, n)
    return X, y


def test_parameter_forms():
    assert parse("(1, 0,-1)") == (1, 0, -1) and parse([1, -1]) == (1, -1)
    assert parse({"a": 1}) == {"a": 1} and parse(None) is None and parse("()") == ()
    for bad in ((2,), "1,0", {"a": 5}, 3.0, (True,)):
        with pytest.raises(ValueError):
            parse(bad)
    assert resolve((1,), 3, None) == (1, 0, 0) and resolve((0, 0), 2, None) is None
    assert resolve({"b": -1}, 2, ["a", "b"]) == (0, -1)
    with pytest.raises(ValueError, match="has 3 entries; the data has 2 features"):
        resolve((1, 0, 1), 2, None)
    with pytest.raises(ValueError, match=r"does not have: \['z'\]"):
        resolve({"z": 1}, 2, ["a", "b"])
    with pytest.raises(ValueError, match="needs the data's feature names"):
        resolve({"a": 1}, 2, None)
    with pytest.raises(ParameterError, match="monotone_constraints must be"):
        dgbdt.train({"monotone_constraints": (1, 7)}, dgbdt.Dataset(np.ones((4, 2)),
                                                                     label=np.ones(4)), 1)


def _grid_predictions(booster, X, j, columns=None):
    """Predictions as feature j sweeps a grid, the other features of 200 rows held."""
    rows = X[:200]
    grid = np.linspace(-3, 3, 41, dtype=np.float32)
    out = []
    for v in grid:
        Z = rows.copy()
        Z[:, j] = v
        out.append(booster.predict(Z if columns is None else _frame(Z, columns)))
    return np.array(out)          # [grid, rows]


def _frame(Z, columns):
    import pandas as pd
    return pd.DataFrame(Z, columns=columns)


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic"])
def test_predictions_are_monotone_where_constrained(objective):
    X, y = _data()
    y = y if objective.startswith("reg") else (y > 0).astype(float)
    free = dgbdt.train({"objective": objective, "max_depth": 6}, dgbdt.Dataset(X, label=y),
                       40, verbose_eval=False)
    b = dgbdt.train({"objective": objective, "max_depth": 6,
                     "monotone_constraints": (1, -1, 0, 0)}, dgbdt.Dataset(X, label=y), 40,
                    verbose_eval=False)
    up, down = np.diff(_grid_predictions(b, X, 0), axis=0), np.diff(_grid_predictions(b, X, 1),
                                                                     axis=0)
    assert (up >= 0).all() and (down <= 0).all()
    # the data are not monotone there: without the constraints the model is not either
    assert (np.diff(_grid_predictions(free, X, 0), axis=0) < 0).any()
    assert (np.diff(_grid_predictions(free, X, 1), axis=0) > 0).any()


def test_constraints_by_feature_name():
    pd = pytest.importorskip("pandas")
    X, y = _data(seed=1)
    cols = ["a", "b", "c", "d"]
    b = dgbdt.train({"monotone_constraints": {"a": 1, "b": -1}},
                    dgbdt.Dataset(pd.DataFrame(X, columns=cols), label=y), 20,
                    verbose_eval=False)
    ref = dgbdt.train({"monotone_constraints": (1, -1)}, dgbdt.Dataset(X, label=y), 20,
                      verbose_eval=False)
    assert [t.to_dict() for t in b.trees] == [t.to_dict() for t in ref.trees]


@pytest.mark.parametrize("mode", ["graph", "collective"])
def test_the_same_model_on_dask(client2, mode):
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    X, y = _data(n=3000, seed=2)
    params = {"max_depth": 5, "monotone_constraints": "(1,-1,0,1)"}
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y), 10, verbose_eval=False)
    d = dgd.DaskDataset(client2, da.from_array(X, chunks=(700, 4)), da.from_array(y, chunks=700))
    out = dgd.train(client2, params, d, 10, mode=mode, verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()


def _paths(tree):
    """The set of features on each root-to-leaf path of a Tree."""
    out = []

    def walk(i, path):
        if tree.left[i] == -1:
            out.append(path)
            return
        here = path | {int(tree.feature[i])}
        walk(int(tree.left[i]), here)
        walk(int(tree.right[i]), here)
    walk(0, frozenset())
    return out


def test_interaction_constraints_keep_paths_inside_a_group():
    from dgbdt.tree.constraints import parse_interactions, resolve_interactions
    X, y = _data(seed=3)
    y = y + X[:, 1] * X[:, 3] + X[:, 2] * X[:, 3]
    groups = [[0, 1], [0, 2], [3]]
    b = dgbdt.train({"max_depth": 5, "interaction_constraints": groups},
                    dgbdt.Dataset(X, label=y), 30, verbose_eval=False)
    seen = set()
    for t in b.trees:
        for path in _paths(t):
            seen.add(path)
            # a path of several features lies inside one group
            assert len(path) <= 1 or any(path <= set(g) for g in groups), path
    assert any(len(p) > 1 for p in seen)                 # it did grow interactions
    free = dgbdt.train({"max_depth": 5}, dgbdt.Dataset(X, label=y), 30, verbose_eval=False)
    assert any(len(p) > 1 and not any(p <= set(g) for g in groups)
               for t in free.trees for p in _paths(t))
    assert parse_interactions("[['a', 'b'], [2]]") == (("a", "b"), (2,))
    assert resolve_interactions((("a", "b"), (2,)), 3, ["a", "b", "c"]) == ((0, 1), (2,))
    with pytest.raises(ValueError, match="beyond the data's 3 features"):
        resolve_interactions(((0, 5),), 3, None)
    with pytest.raises(ParameterError, match="interaction_constraints must be"):
        dgbdt.train({"interaction_constraints": "[0, 1]"}, dgbdt.Dataset(X, label=y), 1)


@pytest.mark.parametrize("mode", ["graph", "collective"])
def test_interaction_constraints_on_dask(client2, mode):
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    X, y = _data(n=3000, seed=4)
    params = {"max_depth": 5, "interaction_constraints": [[0, 1], [2, 3]],
              "monotone_constraints": (1, 0, 0, -1)}
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y), 10, verbose_eval=False)
    d = dgd.DaskDataset(client2, da.from_array(X, chunks=(700, 4)), da.from_array(y, chunks=700))
    out = dgd.train(client2, params, d, 10, mode=mode, verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
