"""A linear booster's model (``booster="gblinear"``): its weights, its predictions, SHAP
values, dumps and feature importance, as XGBoost's gblinear gives them.

``weights`` is float32 [F + 1, K]: W[j, k] the weight of feature j for output k, the last row
the biases (XGBoost's layout: its model file's flat ``weights`` list is this array in row
order). The margin of row x for output k is ``base_margin_k + b_k + sum_j x_j W[j, k]``, a
missing x_j (NaN, or absent from a sparse row) adding nothing. ``rounds`` counts the rounds
trained (XGBoost's ``boosted_rounds``); the weights are the sum of all of them, so a linear
model has no per-round slices and prediction has no iteration range (XGBoost ignores it).
"""
from __future__ import annotations

import numpy as np

from ..tree.model import ModelFormatError


class LinearWeights:
    """A gblinear model's weights and round count (module docstring)."""

    def __init__(self, n_features: int, n_outputs: int, weights=None, rounds: int = 0):
        shape = (int(n_features) + 1, int(n_outputs))
        self.weights = np.zeros(shape, np.float32) if weights is None else \
            np.ascontiguousarray(np.asarray(weights, np.float32).reshape(shape))
        self.rounds = int(rounds)

    @property
    def bias(self) -> np.ndarray:
        return self.weights[-1]

    @property
    def coefficients(self) -> np.ndarray:
        return self.weights[:-1]

    def copy(self) -> "LinearWeights":
        return LinearWeights(self.weights.shape[0] - 1, self.weights.shape[1],
                             self.weights.copy(), self.rounds)

    # -- prediction ------------------------------------------------------------------------
    def margins(self, X, base) -> np.ndarray:
        """float64 [n, K]: ``base`` ([K] or [n, K]) + biases + X W, missing values adding
        nothing (X: a dense host array with NaN missing, or scipy CSR)."""
        out = self._products(X)
        out += self.bias.astype(np.float64)
        out += np.asarray(base, np.float64)
        return out

    def _products(self, X) -> np.ndarray:
        W = self.coefficients.astype(np.float64)
        if _is_csr(X):
            data = np.where(np.isnan(X.data), 0.0, X.data).astype(np.float64)
            import scipy.sparse as sp
            Z = sp.csr_matrix((data, X.indices, X.indptr), shape=X.shape)
            return np.asarray(Z @ W, np.float64)
        X = np.asarray(X, np.float64)
        return np.where(np.isnan(X), 0.0, X) @ W

    def contributions(self, X, base) -> np.ndarray:
        """float64 [n, K, F + 1]: x_j W[j, k] for each feature (0 where missing), and in the
        last column the bias plus the base margin (XGBoost's linear SHAP values: a row's
        values sum to its margin)."""
        if _is_csr(X):      # absent entries 0: they add nothing, as missing ones
            X = X.toarray()
        X = np.asarray(X, np.float64)
        X = np.where(np.isnan(X), 0.0, X)
        n, F = X.shape
        K = self.weights.shape[1]
        out = np.empty((n, K, F + 1), np.float64)
        W = self.coefficients.astype(np.float64)
        for k in range(K):
            out[:, k, :F] = X * W[:, k]
        out[:, :, F] = self.bias.astype(np.float64) + np.asarray(base, np.float64)
        return out

    # -- dumps and importance ----------------------------------------------------------------
    def dump(self, dump_format: str = "text") -> list[str]:
        """XGBoost's dump of a linear model: one string, ``bias:`` then the K biases,
        ``weight:`` then the weights feature by feature (K a feature), each printed with 6
        significant digits as C++ streams print floats; or the same as a JSON object."""
        K = self.weights.shape[1]
        if dump_format == "json":
            bias = ",\n".join(f"      {_cpp(v)}" for v in self.bias)
            weight = ",\n".join(f"      {_cpp(v)}" for v in self.coefficients.reshape(-1))
            return ["  { \"bias\": [\n" + bias + "\n    ],\n    \"weight\": [\n" + weight
                    + "\n    ]\n  }"]
        if dump_format != "text":
            raise ValueError(f"a linear model dumps as 'text' or 'json'; got {dump_format!r}")
        lines = ["bias:"] + [_cpp(v) for v in self.bias] + ["weight:"] + \
            [_cpp(self.coefficients[j, k]) for j in range(self.coefficients.shape[0])
             for k in range(K)]
        return ["\n".join(lines) + "\n"]

    def score(self, names: list[str], importance_type: str = "weight") -> dict:
        """XGBoost's get_score of a linear model: every feature's weight (a list of K for
        several outputs); only ``"weight"`` is defined."""
        if importance_type != "weight":
            raise ValueError(f"gblinear only has `weight` defined for feature importance; "
                             f"got importance_type={importance_type!r}")
        W = self.coefficients
        if W.shape[1] == 1:
            return {n: float(W[j, 0]) for j, n in enumerate(names)}
        return {n: [float(v) for v in W[j]] for j, n in enumerate(names)}

    # -- files ---------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """dgbdt's model file part: the flat float32 weights (row order) and the rounds."""
        return {"weights": [float(v) for v in self.weights.reshape(-1)],
                "boosted_rounds": self.rounds}

    @classmethod
    def from_dict(cls, d, n_features: int, n_outputs: int, where: str) -> "LinearWeights":
        """Read and check ``{"weights": [(F + 1) K numbers], "boosted_rounds": int}``."""
        if not isinstance(d, dict):
            raise ModelFormatError(f"{where}: a linear model must be an object with "
                                   "'weights'")
        w = d.get("weights")
        want = (n_features + 1) * n_outputs
        if not isinstance(w, list) or len(w) != want or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in w):
            raise ModelFormatError(f"{where}: 'weights' must be {want} numbers ((features + "
                                   f"1) x outputs = ({n_features} + 1) x {n_outputs})")
        arr = np.asarray(w, np.float64)
        if not np.all(np.isfinite(arr)):
            raise ModelFormatError(f"{where}: 'weights' must be finite")
        rounds = d.get("boosted_rounds", 0)
        if isinstance(rounds, str) and rounds.isdigit():        # XGBoost writes some as text
            rounds = int(rounds)
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
            raise ModelFormatError(f"{where}: 'boosted_rounds' must be an integer >= 0")
        return cls(n_features, n_outputs, arr, rounds)


def _is_csr(X) -> bool:
    return getattr(X, "format", None) == "csr"


def _cpp(v) -> str:
    """A float32 as C++'s default stream prints it (6 significant digits, %g)."""
    return f"{float(np.float32(v)):g}"


def linear_predict(booster, X, bm, output_margin: bool, pred_leaf: bool, pred_contribs: bool,
                   pred_interactions: bool) -> np.ndarray:
    """Booster.predict of a gblinear model (dgbdt.model.booster): values, margins ([n] or
    [n, K]), SHAP values ([n, F + 1] or [n, K, F + 1]) or interaction values (all 0: a linear
    model has none). ``bm``: the rows' base_margin, which replaces the model's intercept.
    GPU rows (cupy) are copied to the host and predicted there (numpy results)."""
    if pred_leaf:
        raise ValueError("gblinear does not support prediction of leaf index (a linear model "
                         "has no trees): predict values, margins or pred_contribs")
    from ..backends.device import is_device_array, to_host
    if _is_csr(X) and not isinstance(X.data, np.ndarray):     # cupyx CSR: on the host
        X = X.get()
    elif not _is_csr(X) and is_device_array(X):     # cupy rows: predicted on the host
        X = to_host(X)
    K = booster.n_outputs
    n = X.shape[0]
    base = booster.initial_margin(n, None if bm is None else to_host(bm))     # [n, K]
    lw = booster.linear
    if pred_interactions:
        F = booster.n_features
        out = np.zeros((n, K, F + 1, F + 1))
        return out[:, 0] if K == 1 else out
    if pred_contribs:
        out = lw.contributions(X, base)
        return out[:, 0] if K == 1 else out
    m = lw.margins(X, base)
    if output_margin:
        return m[:, 0] if K == 1 else m
    return booster.objective.transform(m)
