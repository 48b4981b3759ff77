"""Piecewise-linear trees (linear_tree, dgbdt.kernels.linear_math) on Dask: what their training needs
beyond the constant one's, before it starts.

Linear leaves regress on raw feature values, so the workers keep their rows' raw float32
features beside the pages (dgbdt.dask.pages.PagedPart.raw, or a streamed Shard's ``raw``), and
every tree needs the regressors' normalization (LinearSpec: the exact per-feature min and max
of the training rows). Each holder of rows computes its min / max where it lives
(``raw_range``); a tree-reduce over the workers merges them (``merge_ranges``: fmin / fmax,
exact in any order), so the LinearSpec is the in-process one for any partitioning and only
2 F floats reach the client. The seams then merge the linear histograms and leaf sums as they
merge constant ones (dgbdt.tree.linear_growth.level_payload; dgbdt.dask.collective_train,
dgbdt.dask.graph).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..backends.device import to_host
from ..kernels.linear_math import LinearSpec
from .reduce import tree_reduce


def check_linear(p, dtrain, mode: str) -> None:
    """What Dask training of linear trees needs that params alone do not say: numerical
    features."""
    if dtrain.categorical is not None:
        raise ValueError("linear_tree with categorical features is not built yet (linear "
                         "leaves regress on numerical features; categorical splits beside them "
                         "are not wired in): encode the categories as numbers, or "
                         "linear_tree=False")


def linear_spec(client, p, holders, cuts, fan_in: int):
    """The LinearSpec (dgbdt.kernels.linear_math) of the training rows: each holder's (PagedPart's or
    streamed Shard's) per-feature min and max of its raw rows, merged by a tree-reduce over
    the workers (min and max are exact in any order: the in-process normalization for any
    partitioning); only 2 F floats reach the client."""
    ranges = [client.submit(raw_range, h, pure=False) for h in holders]
    lo, hi = tree_reduce(client, ranges, merge_ranges, fan_in, "dgbdt-linear-range").result()
    return LinearSpec.from_range(lo, hi, p["max_linear_features"], p["linear_lambda"],
                                 getattr(cuts.result(), "categorical", None))


def raw_range(unit) -> tuple[np.ndarray, np.ndarray]:
    """(min, max) float64 [F] of the raw features of a PagedPart or a Shard (NaN skipped; NaN
    where a column has no value here): this holder's part of dgbdt.kernels.linear_math.LinearSpec's
    normalization, merged over holders by ``merge_ranges``."""
    X = unit.raw
    if X is None:
        raise RuntimeError("linear trees need the rows' raw features on the workers; these "
                           "pages were packed without them")
    X = to_host(X)            # a GPU shard's rows: min / max of the same floats on the host
    F = X.shape[1]
    if not X.shape[0]:
        return np.full(F, np.nan), np.full(F, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # an all-NaN column: NaN
        return (np.nanmin(X, axis=0).astype(np.float64),
                np.nanmax(X, axis=0).astype(np.float64))


def merge_ranges(*ranges) -> tuple[np.ndarray, np.ndarray]:
    """The (min, max) of several holders' ranges: fmin / fmax skip NaN (a holder without a
    value), and min and max are exact in any order, so the result is the whole data's."""
    lo = np.fmin.reduce([r[0] for r in ranges])
    hi = np.fmax.reduce([r[1] for r in ranges])
    return lo, hi
