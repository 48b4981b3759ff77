"""Checks shared by host and device input (numpy or cupy arrays, by their module ``xp``)."""
from __future__ import annotations


def check_vector(arr, what: str, n: int, xp):
    """A float64 [n] or [n, 1] array (numpy or cupy, ``xp``) as a finite contiguous [n] vector."""
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{what} must be 1-D; got shape {tuple(arr.shape)}")
    if arr.shape[0] != n:
        raise ValueError(f"{what} has {arr.shape[0]} entries but data has {n} rows")
    arr = xp.ascontiguousarray(arr)
    if xp.__name__ == "cupy" and arr.dtype.kind == "f":
        from ..kernels.gpu_checks import label_scan     # one kernel: nothing for NVRTC
        first = label_scan(arr.astype(xp.float64, copy=False))[0]
    else:
        bad = ~xp.isfinite(arr)
        first = int(xp.flatnonzero(bad)[0]) if bool(bad.any()) else None
    if first is not None:
        raise ValueError(f"{what} contains NaN or infinite values (first at row {first})")
    return arr


def checked_names(names, n_features: int) -> list[str] | None:
    """Feature names as strings, one per feature and unique (None stays None)."""
    if names is None:
        return None
    names = [str(n) for n in names]
    if len(names) != n_features:
        raise ValueError(f"feature_names has {len(names)} names but data has "
                         f"{n_features} features")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"feature names must be unique; repeated: {dup}")
    return names



def check_feature_names(names, expected, what: str) -> None:
    """The one rule wherever data meets a training's features (eval sets, predict, the CLI,
    on Dask too): named columns must be the training's names in the training's order, as
    XGBoost requires. Unnamed data (arrays) is taken by position. Another order of the same
    names is refused, not reordered: a silent reorder would hide a frame built wrongly."""
    if names is None or expected is None:
        return
    names, expected = [str(n) for n in names], [str(n) for n in expected]
    if names == expected:
        return
    if sorted(names) == sorted(expected):
        i = next(j for j, (a, b) in enumerate(zip(names, expected)) if a != b)
        raise ValueError(f"{what} has the training's feature names in another order (column "
                         f"{i} is {names[i]!r} where the training has {expected[i]!r}): "
                         "put its columns in the training's order, e.g. "
                         "X[booster.feature_names]")
    known, have = set(expected), set(names)
    missing = [n for n in expected if n not in have][:3]
    other = [n for n in names if n not in known][:3]
    raise ValueError(f"{what}'s feature names differ from the training's: "
                     + ", ".join(p for p in (f"missing {missing}" if missing else "",
                                             f"not in the training {other}" if other else "")
                                 if p))
