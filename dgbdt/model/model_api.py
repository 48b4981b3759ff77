"""XGBoost's model API on a trained model's trees: string attributes saved with the model,
dumps (text, JSON, dot: dgbdt.tree.dump), a node table, and feature importance; the Booster
(dgbdt.model.booster) inherits it."""
from __future__ import annotations


class ModelAPI:
    """What a Booster's ``trees``, ``n_features``, ``feature_names`` and ``_attributes`` answer
    without predicting."""

    def attr(self, key: str) -> str | None:
        """A string attribute set by set_attr (None when absent)."""
        return self._attributes.get(key)

    def set_attr(self, **kwargs) -> None:
        """Set string attributes (None deletes one); they are saved with the model."""
        for k, v in kwargs.items():
            if v is None:
                self._attributes.pop(k, None)
            elif not isinstance(v, str):
                raise ValueError(f"attribute {k!r} must be a string; got {type(v).__name__}")
            else:
                self._attributes[k] = v

    def attributes(self) -> dict[str, str]:
        return dict(self._attributes)

    def _names(self) -> list[str]:
        return self.feature_names or [f"f{i}" for i in range(self.n_features)]

    def get_dump(self, fmap: str = "", with_stats: bool = False,
                 dump_format: str = "text") -> list[str]:
        """One string per tree in XGBoost's dump format ("text" or "json"; dgbdt.tree.dump).
        ``fmap``: XGBoost's feature map file (``<id>\t<name>\t<type>`` a line) naming the
        features (every split prints as a comparison, indicator features too)."""
        from ..tree import dump
        if self.linear is not None:     # gblinear: its weights' dump
            return self.linear.dump(dump_format)
        if dump_format not in ("text", "json"):
            raise ValueError(f"dump_format must be 'text' or 'json'; got {dump_format!r}")
        names = dump.read_feature_map(fmap, self._names()) if fmap else self._names()
        fn = dump.text if dump_format == "text" else dump.as_json
        return [fn(t, names, with_stats) for t in self.trees]

    def trees_to_dataframe(self):
        """A pandas DataFrame with a row per node of every tree (XGBoost's columns)."""
        from ..tree import dump
        return dump.dataframe(self.trees, self._names())

    # -- importance --------------------------------------------------------------------------
    def get_score(self, importance_type: str = "weight") -> dict[str, float]:
        """Feature importance over all split nodes, keyed by feature name (f0, f1, ... if none).

        weight: number of splits; gain / cover: mean loss change / hessian sum of those splits;
        total_gain / total_cover: their sums. Features never used are left out (as XGBoost).
        """
        from .importance import feature_importance
        if self.linear is not None:     # gblinear: the weights
            return self.linear.score(self._names(), importance_type)
        return feature_importance(self.trees, self.n_features, self.feature_names,
                                  importance_type)
