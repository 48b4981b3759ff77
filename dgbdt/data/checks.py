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
    bad = ~xp.isfinite(arr)
    if bool(bad.any()):
        raise ValueError(f"{what} contains NaN or infinite values "
                         f"(first at row {int(xp.flatnonzero(bad)[0])})")
    return xp.ascontiguousarray(arr)
