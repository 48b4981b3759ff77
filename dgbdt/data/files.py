"""Training data from a file, by XGBoost's URI convention: ``"train.txt?format=libsvm"``,
``"train.csv?format=csv&label_column=0"``, or a parquet path (a ``label_column=`` name).

libsvm (svmlight) files are read with scikit-learn's reader (sparse: absent entries become
missing values), their indices as XGBoost reads them: feature ids as written (a file whose
ids start at 1 has an empty feature 0, as in XGBoost, whose feature maps count from 0; with
``&indexing_mode=1`` they count from 1, as XGBoost reads them then); CSV with numpy (no
header; the label column by position); parquet with pandas (columns by name). Returns (X, y, feature names or None).
"""
from __future__ import annotations

import os
from urllib.parse import parse_qs

import numpy as np

FORMATS = ("libsvm", "csv", "parquet")


def parse_uri(uri: str) -> tuple[str, dict]:
    path, _, query = str(uri).partition("?")
    opts = {k: v[-1] for k, v in parse_qs(query).items()}
    return path, opts


def read_uri(uri: str, label_column=None):
    path, opts = parse_uri(uri)
    fmt = opts.get("format") or ("parquet" if path.endswith((".parquet", ".pq")) else
                                 "csv" if path.endswith(".csv") else None)
    if fmt not in FORMATS:
        raise ValueError(f"cannot tell the format of {uri!r}: add ?format=libsvm, "
                         "?format=csv (with &label_column=N) or use a .parquet file")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such data file: {path!r}")
    if fmt == "libsvm":
        try:
            from sklearn.datasets import load_svmlight_file
        except ImportError:
            raise ImportError("reading libsvm files needs scikit-learn (pip install "
                              "scikit-learn)") from None
        # XGBoost's ``indexing_mode``: > 0 reads the ids as one-based (id 1 is feature 0)
        one_based = int(opts.get("indexing_mode", 0)) > 0
        X, y = load_svmlight_file(path, zero_based=not one_based)
        return X, y, None
    label = opts.get("label_column", label_column)
    if fmt == "csv":
        data = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
        if label is None:
            return data, None, None
        j = int(label)
        return np.delete(data, j, axis=1), data[:, j], None
    import pandas as pd
    df = pd.read_parquet(path)
    if label is None:
        return df, None, [str(c) for c in df.columns]
    if label not in df.columns:
        raise ValueError(f"{path!r} has no column {label!r}; its columns: {list(df.columns)}")
    return df.drop(columns=[label]), df[label].to_numpy(dtype=np.float64), None
