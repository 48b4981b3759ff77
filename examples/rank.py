"""Learning to rank on a local Dask cluster: LambdaMART (rank:ndcg) with query ids.

    python examples/rank.py [--queries 2000] [--rounds 30] [--workers 2]

LightGBM-style synthetic search data: queries of 1 to 60 documents, graded relevance 0-4 from
a hidden score. Each dask partition holds whole queries (a query must never straddle two
partitions: DaskDataset checks it), built on the workers. dgbdt.dask.DaskGBDTRanker trains with
a validation set scored by ndcg@10; the same model is trained in-process from the same rows and
must be the same bytes (the example exits non-zero otherwise).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd


def make_queries(first_query: int, n_queries: int, seed: int) -> pd.DataFrame:
    """One partition: ``n_queries`` whole queries, rows sorted by qid."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 61, size=n_queries)
    qid = np.repeat(np.arange(first_query, first_query + n_queries), sizes)
    n = qid.shape[0]
    X = rng.integers(0, 32, size=(n, 8)).astype(np.float32)
    score = X[:, 0] - 0.5 * X[:, 1] + 0.25 * X[:, 2] * (X[:, 3] > 16) + rng.normal(0, 4, n)
    relevance = np.clip(np.floor((score + 8) / 8), 0, 4).astype(np.float32)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(8)])
    frame["qid"] = qid
    frame["relevance"] = relevance
    return frame


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    import dask.dataframe as dd
    from dask import delayed
    from distributed import Client, LocalCluster

    import dgbdt
    from dgbdt.dask import DaskGBDTRanker

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        per_part = max(args.queries // 8, 1)
        parts = [delayed(make_queries)(i * per_part, per_part, seed=i) for i in range(8)]
        meta = make_queries(0, 1, 0).iloc[:0]
        frame = dd.from_delayed(parts, meta=meta)
        train, valid = frame.partitions[:6], frame.partitions[6:]
        features = [f"f{j}" for j in range(8)]

        est = DaskGBDTRanker(n_estimators=args.rounds, max_depth=6, learning_rate=0.1,
                             objective="rank:ndcg", eval_metric=["ndcg@10", "map@10-"])
        est.client = client
        t = time.perf_counter()
        est.fit(train[features], train["relevance"], qid=train["qid"],
                eval_set=[(valid[features], (valid["relevance"] > 2).astype("float32"))],
                eval_qid=[valid["qid"]])
        seconds = time.perf_counter() - t
        history = est.evals_result()["validation_0"]
        print(f"trained {args.rounds} rounds on {args.workers} workers in {seconds:.1f} s: "
              f"ndcg@10 {history['ndcg@10'][0]:.4f} -> {history['ndcg@10'][-1]:.4f}, "
              f"map@10- {history['map@10-'][-1]:.4f}")

        local = client.compute(train).result()
        ref = dgbdt.GBDTRanker(n_estimators=args.rounds, max_depth=6, learning_rate=0.1,
                               objective="rank:ndcg").fit(
            local[features], local["relevance"].to_numpy(),
            qid=local["qid"].to_numpy())
        same = ref.get_booster().save_raw() == est.get_booster().save_raw()
        print("in-process model is the same bytes:", same)
        scores = client.compute(est.predict(valid[features])).result()
        print("first validation scores:", np.round(np.asarray(scores)[:5], 4))
        return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
