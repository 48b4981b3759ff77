"""xgboost.dask's example on a local cluster; only the import lines differ."""
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

import dgbdt.compat.xgboost as xgb
from dgbdt.compat.xgboost import dask as dxgb

if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        rng = np.random.default_rng(4)
        X = da.from_array(rng.standard_normal((4000, 6)), chunks=(1000, 6))
        y = (X[:, 0] + X[:, 1] > 0).astype(np.float64)
        dtrain = dxgb.DaskDMatrix(client, X, y)
        output = dxgb.train(client, {"objective": "binary:logistic", "tree_method": "hist",
                                     "eval_metric": "auc"}, dtrain, num_boost_round=20,
                            evals=[(dtrain, "train")], verbose_eval=False)
        booster, history = output["booster"], output["history"]
        assert history["train"]["auc"][-1] > 0.95
        prediction = dxgb.predict(client, output, dtrain)
        pred = client.compute(prediction).result()
        assert pred.shape == (4000,)
        clf = dxgb.DaskXGBClassifier(n_estimators=10)
        clf.client = client
        clf.fit(X, y)
        assert client.compute(clf.predict(X)).result().shape == (4000,)
        assert isinstance(booster, xgb.Booster)
        print("dask training: train auc", round(history["train"]["auc"][-1], 4))
