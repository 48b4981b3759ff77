"""dgbdt.dask.predict: lazy, partition-aligned predictions for Dask collections."""
from __future__ import annotations

import numpy as np

from ..model.booster import Booster
from ..backends.device import array_module
from ..data.checks import check_feature_names
from ..data.device_input import is_cudf
from .blocks import is_dask_array, is_dask_frame
from .data import DaskDataset
from .worker import data_task_threads


def _cupy_like():
    import cupy
    return cupy.empty(0)


def _predict_block(block, booster: Booster, output_margin: bool, pred_leaf: bool,
                   iteration_range=None, pred_contribs: bool = False,
                   pred_interactions: bool = False, strict_shape: bool = False):
    if block.shape[0] == 0:
        return _empty_output(booster, output_margin, pred_leaf, iteration_range,
                             like=_cupy_like() if is_cudf(block) else block,
                             pred_contribs=pred_contribs, pred_interactions=pred_interactions,
                             strict_shape=strict_shape)
    with data_task_threads():    # the worker's thread count: a one-thread worker runs serially
        return booster.predict(block, output_margin=output_margin, pred_leaf=pred_leaf,
                               iteration_range=iteration_range, pred_contribs=pred_contribs,
                               pred_interactions=pred_interactions, strict_shape=strict_shape)


def _predict_part(part, booster: Booster, output_margin: bool, pred_leaf: bool,
                  iteration_range=None, pred_contribs: bool = False,
                  pred_interactions: bool = False, strict_shape: bool = False):
    if part.n_rows == 0:
        return _empty_output(booster, output_margin, pred_leaf, iteration_range, like=part.X,
                             pred_contribs=pred_contribs, pred_interactions=pred_interactions,
                             strict_shape=strict_shape)
    from ..data.dataset import Dataset
    d = Dataset.__new__(Dataset)  # already checked on the worker: no second validation pass
    d.data, d.feature_names, d.base_margin = part.X, None, part.base_margin
    d.categories = getattr(part, "categories", None)
    with data_task_threads():
        return booster.predict(d, output_margin=output_margin, pred_leaf=pred_leaf,
                               iteration_range=iteration_range, pred_contribs=pred_contribs,
                               pred_interactions=pred_interactions, strict_shape=strict_shape)


def _trailing(booster: Booster, output_margin: bool, pred_leaf: bool, iteration_range=None,
              pred_contribs: bool = False, pred_interactions: bool = False,
              strict_shape: bool = False) -> tuple:
    """The output's shape after the row axis (Booster.predict's, strict_shape included)."""
    F = booster.n_features + 1
    if strict_shape:
        K = booster.n_outputs
        if pred_interactions:
            return (K, F, F)
        if pred_contribs:
            return (K, F)
        if pred_leaf:       # rounds, outputs, parallel trees
            P, R = booster.num_parallel_tree, booster.trees_per_round   # (vector trees: 1 an
            return (len(booster._trees_in(iteration_range)) // R, R // P, P)   # output group)
        return (_output_columns(booster, output_margin, False, iteration_range) or 1,)
    if pred_interactions:
        return (F, F) if booster.n_outputs == 1 else (booster.n_outputs, F, F)
    if pred_contribs:
        return (F,) if booster.n_outputs == 1 else (booster.n_outputs, F)
    cols = _output_columns(booster, output_margin, pred_leaf, iteration_range)
    return () if cols is None else (cols,)


def _output_columns(booster: Booster, output_margin: bool, pred_leaf: bool,
                    iteration_range=None) -> int | None:
    """Columns of the output, None for a 1-D output."""
    if pred_leaf:
        return len(booster._trees_in(iteration_range))
    if booster.n_outputs == 1:
        return None
    if not output_margin and booster.objective.name == "multi:softmax":
        return None
    return booster.n_outputs


def _empty_output(booster, output_margin, pred_leaf, iteration_range=None, like=None,
                  pred_contribs: bool = False, pred_interactions: bool = False,
                  strict_shape: bool = False):
    """A zero-row output, on the GPU when ``like`` (the input) is there."""
    tail = _trailing(booster, output_margin, pred_leaf, iteration_range, pred_contribs,
                     pred_interactions, strict_shape)
    dtype = booster.prediction_dtype(pred_leaf)
    xp = array_module(like) if like is not None else np
    return xp.zeros((0,) + tail, dtype=dtype)


def predict(client, booster: Booster, data, output_margin: bool = False,
            pred_leaf: bool = False, iteration_range: tuple[int, int] | None = None,
            pred_contribs: bool = False, pred_interactions: bool = False,
            strict_shape: bool = False):
    """Predictions of ``booster`` for a DaskDataset, dask array or dask DataFrame, lazily.

    Returns a dask Array for arrays and DaskDatasets (one chunk per partition), a dask Series
    (one output) or DataFrame (several) for DataFrames. Nothing is computed until asked for.
    ``iteration_range``: the (begin, end) boosting rounds to use, as in Booster.predict.
    ``pred_contribs``: SHAP values as Booster.predict's ([n, F + 1] or [n, K, F + 1]; for a
    DataFrame, columns named by the features and "bias", one output only).
    ``pred_interactions``: SHAP interaction values as Booster.predict's ([n, F + 1, F + 1] or
    [n, K, F + 1, F + 1]); DaskDatasets and dask arrays only (the output is 3-D or 4-D).
    ``strict_shape``: Booster.predict's fixed shapes (leaves [n, rounds, K, P], ...); a shape
    of more than two axes needs a DaskDataset or dask array.
    """
    import dask
    import dask.array as da

    if not isinstance(booster, Booster):
        raise TypeError(f"booster must be a dgbdt.Booster; got {type(booster).__name__}")
    # the model goes into the graph once, as its own key that every partition's task reads:
    # passed as an argument it was pickled into each task and unpickled by each on the
    # worker. Its key is a fresh name, not a hash of the model: dask's tokenize walks every
    # array of it, slow for a linear model's leaves
    # (docs/benchmarks-archive.md#figures-behind-code-choices)
    bst = dask.delayed(booster, pure=False)
    tail = _trailing(booster, output_margin, pred_leaf, iteration_range, pred_contribs,
                     pred_interactions, strict_shape)
    cols = tail[0] if len(tail) == 1 else None
    dtype = booster.prediction_dtype(pred_leaf)
    if isinstance(data, DaskDataset):
        if data.num_col != booster.n_features:
            raise ValueError(f"data has {data.num_col} features but the model was trained on "
                             f"{booster.n_features}")
        check_feature_names(data.feature_names, booster.feature_names, "data")
        from dask.base import tokenize
        from dask.highlevelgraph import HighLevelGraph

        tasks = [dask.delayed(_predict_part, pure=True)(f, bst, output_margin, pred_leaf,
                                                        iteration_range, pred_contribs,
                                                        pred_interactions, strict_shape)
                 for f in data.raw_parts()]
        # one block per partition, empty ones included (da.concatenate would drop those)
        name = "dgbdt-predict-" + tokenize(*(t.key for t in tasks))
        zeros = (0,) * len(tail)
        graph = HighLevelGraph.from_collections(
            name, {(name, i) + zeros: t.key for i, t in enumerate(tasks)}, dependencies=tasks)
        chunks = (tuple(data.part_rows),) + tuple((c,) for c in tail)
        meta = _empty_output(booster, output_margin, pred_leaf, iteration_range,
                             like=_cupy_like() if data.on_device else None,
                             pred_contribs=pred_contribs, pred_interactions=pred_interactions,
                             strict_shape=strict_shape)
        return da.Array(graph, name, chunks, dtype=dtype, meta=meta)
    if is_dask_array(data):
        if data.ndim != 2 or data.shape[1] != booster.n_features:
            raise ValueError(f"data must be 2-D with {booster.n_features} features; got shape "
                             f"{data.shape}")
        if len(data.chunks[1]) != 1:
            data = data.rechunk({1: -1})
        kw = dict(dtype=dtype, booster=bst, output_margin=output_margin, pred_leaf=pred_leaf,
                  iteration_range=iteration_range, pred_contribs=pred_contribs,
                  pred_interactions=pred_interactions, strict_shape=strict_shape)
        if not tail:
            return data.map_blocks(_predict_block, drop_axis=1, **kw)
        chunks = (data.chunks[0],) + tuple((c,) for c in tail)
        if len(tail) == 1:
            return data.map_blocks(_predict_block, chunks=chunks, **kw)
        return data.map_blocks(_predict_block, new_axis=list(range(2, len(tail) + 1)),
                               chunks=chunks, **kw)
    if is_dask_frame(data):
        import pandas as pd

        if len(data.columns) != booster.n_features:
            raise ValueError(f"data has {len(data.columns)} features but the model was trained "
                             f"on {booster.n_features}")
        check_feature_names(list(data.columns), booster.feature_names, "data")
        if len(tail) > 1:
            what = ("pred_interactions are 3-D [n, F+1, F+1] (4-D with several outputs)"
                    if pred_interactions else
                    f"this output is {len(tail) + 1}-D {[None, *tail]}" if strict_shape else
                    "pred_contribs of a model with several outputs is 3-D [n, K, F+1]")
            raise ValueError(f"{what}: pass a dask array (ddf.to_dask_array(lengths=True)) or "
                             "a DaskDataset instead of a DataFrame")
        names = ([str(c) for c in data.columns] + ["bias"] if pred_contribs
                 else [str(j) for j in range(cols or 0)])

        def frame(df, booster, output_margin, pred_leaf, iteration_range, pred_contribs,
                  strict_shape):
            out = _predict_block(df, booster, output_margin, pred_leaf, iteration_range,
                                 pred_contribs, strict_shape=strict_shape)
            if is_cudf(df):         # cuDF in, cuDF out
                import cudf
                if out.ndim == 1:
                    return cudf.Series(out, index=df.index, name="prediction")
                return cudf.DataFrame(out, index=df.index, columns=names)
            if out.ndim == 1:
                return pd.Series(out, index=df.index, name="prediction")
            return pd.DataFrame(out, index=df.index, columns=names)

        meta = (pd.Series(np.zeros(0, dtype), name="prediction") if cols is None else
                pd.DataFrame(np.zeros((0, cols), dtype), columns=names))
        if is_cudf(data._meta):
            import cudf
            meta = cudf.from_pandas(meta)
        return data.map_partitions(frame, bst, output_margin, pred_leaf, iteration_range,
                                   pred_contribs, strict_shape, meta=meta)
    raise TypeError(f"data must be a DaskDataset, dask array or dask DataFrame; got "
                    f"{type(data).__name__} (use Booster.predict for in-memory data)")
