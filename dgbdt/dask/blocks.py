"""A dask collection's partitions as delayed blocks, the form DaskDataset builds its Parts from:
which collections are dask DataFrames or arrays, a 2-D array's row blocks, labels-like
collections partitioned like the data, and a frame optimized together with its label
columns (so the rows a training sees are the rows the user's ``compute()`` gives)."""
from __future__ import annotations

import numpy as np

__all__ = ["is_dask_frame", "is_dask_series", "is_dask_array", "array_blocks",
           "optimized_together", "vector_blocks"]


def is_dask_frame(obj) -> bool:
    """A dask DataFrame (not a Series: dask-expr Series also answer ``.columns``)."""
    try:
        import dask.dataframe as dd
    except ImportError:  # pragma: no cover
        return False
    return isinstance(obj, dd.DataFrame)


def is_dask_series(obj) -> bool:
    try:
        import dask.dataframe as dd
    except ImportError:  # pragma: no cover
        return False
    return isinstance(obj, dd.Series)


def is_dask_array(obj) -> bool:
    return hasattr(obj, "chunks") and hasattr(obj, "dask") and hasattr(obj, "to_delayed")


def array_blocks(data) -> tuple[list, list[str] | None]:
    if data.ndim != 2:
        raise ValueError(f"data must be a 2-D dask array; got {data.ndim} dimensions")
    if any(np.isnan(c) for c in data.chunks[0]):
        raise ValueError("data has unknown chunk sizes; call data.compute_chunk_sizes() first")
    if not (data.dtype.kind in "biuf"):
        raise TypeError(f"data must hold numbers; got a dask array of dtype {data.dtype}")
    if len(data.chunks[1]) != 1:
        data = data.rechunk({1: -1})
    return [b[0] for b in data.to_delayed()], None


def optimized_together(data, vectors: list) -> tuple:
    """A dask DataFrame and its dask label/weight/base_margin Series, each optimized as the
    user's own ``compute()`` would optimize it, where that keeps their partitions in line.

    Why: the rows a training sees must be the rows the user's ``compute()`` gives. The
    optimizer may change partitioning (dask_cudf's read_parquet combines files up to a block
    size; dask-expr fuses a narrow column's parquet files), and partition-wise steps such as
    ``random_split`` draw per partition, so the unoptimized graph can hold other rows than
    the optimized one (a dask_cudf ``random_split`` of parquet files gave other validation
    rows unoptimized, so the eval history disagreed with scikit-learn's score of the same
    model's predictions: docs/benchmarks-archive.md#figures-behind-code-choices). Optimizing
    a narrow label column may regroup it unlike the data; then, as when the optimizer fails,
    the unoptimized graphs are used: they always line up.
    (``dask.optimize`` of several collections at once is not used: with dask 2026.8 its
    results' delayed parts lost the column projection.)

    Without fusing (the same partitions: fusing only joins a partition's steps into one
    task): fused, the features and the label each read the whole parquet file again (the
    projection does not pass ``random_split``), and so do the validation frames; unfused,
    their graphs share the read, split and take steps' keys, which a dataset's parts (or
    ``DaskDataset.together``'s) computed in one call compute once."""
    lazy = [i for i, v in enumerate(vectors) if hasattr(v, "optimize")]   # others: checked later
    try:
        opt = [c.optimize(fuse=False) for c in [data] + [vectors[i] for i in lazy]]
    except Exception:       # an optimizer failure must not stop a training: as written
        return data, vectors
    if len({c.npartitions for c in opt}) != 1:
        return data, vectors
    out = list(vectors)
    for i, c in zip(lazy, opt[1:]):
        out[i] = c
    return opt[0], out


def vector_blocks(v, what: str, data, n_blocks: int, frame: bool):
    """Delayed blocks of a label-like collection, partitioned like the data."""
    if v is None:
        return [None] * n_blocks
    if frame:
        if not is_dask_frame(v) and not hasattr(v, "to_delayed"):
            raise TypeError(f"{what} must be a dask Series or DataFrame partitioned like data")
        if v.npartitions != n_blocks:
            raise ValueError(f"{what} has {v.npartitions} partitions but data has {n_blocks}; "
                             f"partition {what} like data (e.g. take both from one DataFrame)")
        # already optimized together with the data (optimized_together): optimizing a narrow
        # column alone may regroup its partitions (parquet files combined by size)
        return list(v.to_delayed(optimize_graph=False))
    if isinstance(v, np.ndarray):
        import dask.array as da
        if v.shape[0] != data.shape[0]:
            raise ValueError(f"{what} has {v.shape[0]} entries but data has {data.shape[0]} rows")
        v = da.from_array(v, chunks=(data.chunks[0],) + v.shape[1:])
    if not is_dask_array(v):
        raise TypeError(f"{what} must be a dask array (or numpy array) for dask array data")
    if v.chunks[0] != data.chunks[0]:
        raise ValueError(f"{what} row chunks {v.chunks[0]} do not match the data's "
                         f"{data.chunks[0]}; rechunk it with {what}.rechunk({{0: data.chunks[0]}})")
    if v.ndim == 2 and len(v.chunks[1]) != 1:
        v = v.rechunk({1: -1})
    blocks = v.to_delayed()
    return [b if v.ndim == 1 else b[0] for b in blocks]
