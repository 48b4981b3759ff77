"""Train on an existing Dask cluster: python examples/existing_cluster.py tcp://scheduler:8786

Reads nothing from disk: builds a synthetic dask array on the cluster, trains, prints the
history. Replace the data with your own collection (e.g. dd.read_parquet(...)).
"""
from __future__ import annotations

import sys

import dask.array as da
from distributed import Client

from dgbdt import dask as dgd


def main(address: str) -> None:
    with Client(address) as client:
        X = da.random.standard_normal((200_000, 20), chunks=(25_000, 20)).astype("float32")
        y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype("float32")
        dtrain = dgd.DaskDataset(client, X, y)
        out = dgd.train(client, {"objective": "binary:logistic", "eval_metric": "auc"},
                        dtrain, 50, evals=[(dtrain, "train")], verbose_eval=10)
        print(out["booster"], out["history"]["train"]["auc"][-1])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
