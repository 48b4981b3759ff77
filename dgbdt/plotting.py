"""Plots of a model and its training (matplotlib, an optional dependency: ``pip install
dgbdt[plot]``), XGBoost's names and arguments; each returns the matplotlib Axes it drew on.

* ``plot_importance(booster)``: a horizontal bar per feature, by Booster.get_score;
* ``plot_metric(evals_result)``: learning curves, one line per eval set, from the history
  ``train`` fills (``evals_result``) or dgbdt.dask.train's ``out["history"]``;
* ``plot_tree(booster, tree_idx)``: one tree drawn with matplotlib itself (no graphviz binary):
  splits as boxes with ``feature < threshold``, leaves with their values, edges labeled
  yes / no (and "missing" on the default side), leaves spread evenly by depth-first order;
* ``to_graphviz(booster, tree_idx=...)``: one tree as a ``graphviz.Source`` (the graphviz
  Python package, ``pip install graphviz``) of XGBoost's dot dump (dgbdt.tree.dump.dot).
"""
from __future__ import annotations

import numpy as np


def _axes(ax):
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'dgbdt[plot]' (or "
                          "matplotlib)") from None
    _, ax = plt.subplots()
    return ax


def _booster(model):
    get = getattr(model, "get_booster", None)
    return get() if callable(get) else model


def plot_importance(booster, ax=None, height: float = 0.2, xlim=None, ylim=None,
                    title: str = "Feature importance", xlabel: str = "Importance score",
                    ylabel: str = "Features", importance_type: str = "weight",
                    max_num_features: int | None = None, grid: bool = True,
                    show_values: bool = True, values_format: str = "{v}", **kwargs):
    """Bars of the features' importance, the largest at the top (a Booster, a fitted
    estimator, or a dict of scores)."""
    scores = booster if isinstance(booster, dict) else \
        _booster(booster).get_score(importance_type=importance_type)
    if not scores:
        raise ValueError("the model has no split: there is no importance to plot")
    items = sorted(scores.items(), key=lambda kv: kv[1])
    if max_num_features is not None:
        items = items[-max_num_features:]
    labels, values = zip(*items)
    ax = _axes(ax)
    ylocs = np.arange(len(values))
    ax.barh(ylocs, values, align="center", height=height, **kwargs)
    if show_values:
        for x, y in zip(values, ylocs):
            ax.text(x + 1e-12, y, values_format.format(v=round(x, 2) if isinstance(x, float)
                                                        else x), va="center")
    ax.set_yticks(ylocs)
    ax.set_yticklabels(labels)
    if xlim is not None:
        ax.set_xlim(xlim)
    else:
        ax.set_xlim((0, max(values) * 1.1))
    if ylim is not None:
        ax.set_ylim(ylim)
    else:
        ax.set_ylim((-1, len(values)))
    for setter, text in ((ax.set_title, title), (ax.set_xlabel, xlabel),
                         (ax.set_ylabel, ylabel)):
        if text is not None:
            setter(text)
    ax.grid(grid)
    return ax


def plot_metric(evals_result: dict, metric: str | None = None, ax=None, xlabel="Round",
                ylabel=None, title=None, grid: bool = True):
    """Learning curves: the metric per round, one line per eval set (``metric``: default the
    first metric recorded)."""
    if not isinstance(evals_result, dict) or not evals_result:
        raise ValueError("evals_result must be the non-empty history of a training with evals "
                         "(the dict passed as evals_result=, or out['history'] on Dask)")
    names = list(evals_result)
    metrics = list(evals_result[names[0]])
    metric = metric or metrics[0]
    ax = _axes(ax)
    for name in names:
        if metric not in evals_result[name]:
            raise ValueError(f"eval set {name!r} has no metric {metric!r}; it has "
                             f"{list(evals_result[name])}")
        values = evals_result[name][metric]
        ax.plot(np.arange(len(values)), values, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel or metric)
    if title:
        ax.set_title(title)
    ax.legend()
    ax.grid(grid)
    return ax


def _tree_idx(where: str, tree_idx: int, num_trees: int | None) -> int:
    """``tree_idx``, or XGBoost's old name of it, ``num_trees`` (deprecated, with XGBoost's
    FutureWarning)."""
    if num_trees is None:
        return tree_idx
    import warnings
    warnings.warn(f"{where}: `num_trees` is deprecated (as in XGBoost), use `tree_idx` "
                  "instead", FutureWarning, stacklevel=3)
    if tree_idx not in (0, num_trees):
        raise ValueError(f"{where}: both `num_trees` and `tree_idx` are given; pass "
                         "`tree_idx` only")
    return num_trees


def plot_tree(booster, tree_idx: int = 0, ax=None, fontsize: int = 8, precision: int = 4, *,
              num_trees: int | None = None):
    """One tree drawn with matplotlib: split boxes ``feature < threshold``, leaf boxes
    ``leaf = value``; edges "yes" (x < threshold), "no", and "missing" on the default side.
    ``num_trees``: XGBoost's old name of ``tree_idx``."""
    tree_idx = _tree_idx("plot_tree", tree_idx, num_trees)
    b = _booster(booster)
    if not 0 <= tree_idx < len(b.trees):
        raise IndexError(f"tree_idx {tree_idx} is outside the model's {len(b.trees)} trees")
    t = b.trees[tree_idx]
    names = b.feature_names or [f"f{i}" for i in range(b.n_features)]
    # leaves evenly spaced in depth-first order; a split centered over its children
    x, depth, order, stack = {}, {0: 0}, [], [0]
    while stack:
        n = stack.pop()
        order.append(n)
        if t.left[n] != -1:
            for c in (int(t.right[n]), int(t.left[n])):
                depth[c] = depth[n] + 1
                stack.append(c)
    leaves = [n for n in order if t.left[n] == -1]
    for i, n in enumerate(leaves):
        x[n] = float(i)
    for n in reversed(order):
        if t.left[n] != -1:
            x[n] = (x[int(t.left[n])] + x[int(t.right[n])]) / 2
    ax = _axes(ax)
    box = dict(boxstyle="round", fc="white", ec="black")
    leaf_box = dict(boxstyle="round", fc="#e8f0fe", ec="black")
    for n in order:
        y = -depth[n]
        if t.left[n] == -1:
            ax.text(x[n], y, f"leaf={t.threshold[n]:.{precision}g}", ha="center",
                    va="center", fontsize=fontsize, bbox=leaf_box)
            continue
        ax.text(x[n], y, f"{names[t.feature[n]]}<{t.threshold[n]:.{precision}g}",
                ha="center", va="center", fontsize=fontsize, bbox=box)
        for c, label in ((int(t.left[n]), "yes"), (int(t.right[n]), "no")):
            if (c == t.left[n]) == bool(t.default_left[n]):
                label += ", missing"
            ax.annotate("", xy=(x[c], y - 1), xytext=(x[n], y),
                        arrowprops=dict(arrowstyle="-", color="gray"))
            ax.text((x[n] + x[c]) / 2, y - 0.5, label, ha="center", va="center",
                    fontsize=fontsize - 1, color="gray")
    ax.set_xlim(-1, max(len(leaves), 1))
    ax.set_ylim(-max(depth.values()) - 0.7, 0.7)
    ax.set_axis_off()
    return ax


def to_graphviz(booster, *, fmap="", num_trees: int | None = None, rankdir: str | None = None,
                yes_color: str | None = None, no_color: str | None = None,
                condition_node_params: dict | None = None,
                leaf_node_params: dict | None = None, with_stats: bool = False,
                tree_idx: int = 0, **graph_attrs):
    """Tree ``tree_idx`` as a ``graphviz.Source`` of its dot dump (XGBoost's arguments):
    ``rankdir`` and the other keywords become graph attributes, ``yes_color`` /
    ``no_color`` color the yes / no edges, the node parameter dicts become the split / leaf
    nodes' graphviz attributes; ``num_trees`` is XGBoost's old name of ``tree_idx``."""
    try:
        from graphviz import Source
    except ImportError:
        raise ImportError("to_graphviz needs the graphviz package: pip install graphviz") \
            from None
    from .tree import dump
    tree_idx = _tree_idx("to_graphviz", tree_idx, num_trees)
    b = _booster(booster)
    if not 0 <= tree_idx < len(b.trees):
        raise IndexError(f"tree_idx {tree_idx} is outside the model's {len(b.trees)} trees")
    names = b._names()
    if fmap:
        names = dump.read_feature_map(fmap, names)
    if rankdir is not None:
        graph_attrs = {"rankdir": rankdir, **graph_attrs}
    colors = {k: v for k, v in (("yes_color", yes_color), ("no_color", no_color))
              if v is not None}
    return Source(dump.dot(b.trees[tree_idx], names, with_stats, graph_attrs, **colors,
                           condition_node_params=condition_node_params,
                           leaf_node_params=leaf_node_params))
