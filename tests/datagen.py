"""Shared test data: a binary target over features with 5 % missing values, and weights."""
import numpy as np


def binary_with_missing(n: int, n_features: int, seed: int = 0):
    """X float32 [n, F] (5 % NaN), y in {0, 1} from a logistic model of features 0-2, and
    weights uniform in [0.5, 2)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    y = (rng.random(n) < 1 / (1 + np.exp(-(Z[:, 0] * Z[:, 1] - Z[:, 2])))).astype(np.float64)
    return X, y, rng.uniform(0.5, 2.0, n)
