"""XGBoost's Categories (``Booster.get_categories`` / ``DMatrix.get_categories``): the
category values of each feature that a model was trained with, or a DMatrix holds."""
from __future__ import annotations


class Categories:
    """The category values of each feature (None for a numerical one), with their feature
    names (``f0``.. XGBoost's ``"0"``, ``"1"``, .. when there are none). ``empty()``: no
    feature has categories; ``to_arrow()``: (name, pyarrow array or None) a feature, for a
    container made with ``export_to_arrow=True``, as XGBoost's. dgbdt re-codes data to a
    model's categories by itself (prediction, eval sets, continued training), by the
    categories the model keeps in its JSON."""

    def __init__(self, names: list[str], values: list | None, export_to_arrow: bool = False):
        self._names = list(names)
        self._values = None if values is None or all(v is None for v in values) else \
            [None if v is None else list(v) for v in values]
        self._arrow = None
        if export_to_arrow:
            import pyarrow as pa
            values = self._values or [None] * len(self._names)
            self._arrow = [(n, None if v is None else pa.array(v))
                           for n, v in zip(self._names, values)]

    def empty(self) -> bool:
        """True when no feature has categories."""
        return self._values is None

    def to_arrow(self) -> list:
        """(feature name, pyarrow array of its categories, or None for a numerical feature)
        a feature; only for a container made with ``export_to_arrow=True``."""
        if self._arrow is None:
            raise ValueError("The `export_to_arrow` option of the `get_categories` method"
                             " is required.")
        return self._arrow

    def __repr__(self) -> str:
        n = 0 if self._values is None else sum(v is not None for v in self._values)
        return f"Categories({n} categorical of {len(self._names)} features)"


def categories_of(names, n_features: int, values, export_to_arrow: bool) -> Categories:
    """XGBoost's Categories of a model or data: ``names`` (None: "0", "1", ..)."""
    names = [str(i) for i in range(n_features)] if names is None else list(names)
    return Categories(names, values, export_to_arrow)
