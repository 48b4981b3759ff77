"""The ``dgbdt`` command: train, predict and inspect models from files, on a Dask cluster or in
this process.

    dgbdt train "data/train-*.parquet" --label target --eval "data/valid-*.parquet" \\
        --rounds 500 --early-stopping 20 --param max_depth=6 --param eta=0.1 \\
        --model model.json [--scheduler tcp://host:8786 | --local 4 | --no-dask] [--device cuda]
    dgbdt predict model.json "data/test-*.parquet" --out predictions.parquet
    dgbdt info model.json

Data are parquet or CSV paths (globs; CSV with a header row). ``--param key=value`` (repeated)
and ``--params file.json`` set training parameters (values parsed as JSON when they parse:
numbers, booleans, lists). Without ``--scheduler``, a local cluster of ``--local`` workers
(a LocalCUDACluster with ``--device cuda``) trains; ``--no-dask`` trains in this process.
Exit status: 0 on success, 1 with a one-line error (a missing file or column, a bad parameter,
bad data or model file; ``dgbdt --debug ...`` shows the traceback instead), 2 for bad usage.
A path that names a file is that file, even with glob characters in its name.
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import sys
import time


class CliError(Exception):
    """An error the command reports in one line (exit status 1)."""


def _paths(pattern: str) -> list[str]:
    """A file (or parquet folder) named literally first, as the shell would; else the glob's
    matches (a name such as data[1].parquet is both)."""
    if os.path.exists(pattern):
        return [pattern]
    found = sorted(glob.glob(pattern)) if any(ch in pattern for ch in "*?[") else []
    if not found:
        raise CliError(f"no file named or matching {pattern!r}")
    return found


def _kind(paths: list[str]) -> str:
    if all(p.endswith((".parquet", ".pq")) or os.path.isdir(p) for p in paths):
        return "parquet"
    if all(p.endswith(".csv") for p in paths):
        return "csv"
    raise CliError(f"cannot tell the format of {paths[0]!r}: use .parquet or .csv files")


def _read(pattern: str, use_dask: bool):
    paths = _paths(pattern)
    kind = _kind(paths)
    if use_dask:
        import dask.dataframe as dd
        return dd.read_parquet(paths) if kind == "parquet" else dd.read_csv(paths)
    import pandas as pd
    frames = [pd.read_parquet(p) if kind == "parquet" else pd.read_csv(p) for p in paths]
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _split_label(df, label: str, where: str):
    if label not in df.columns:
        raise CliError(f"{where} has no column {label!r}; its columns: {list(df.columns)}")
    return df.drop(columns=[label]), df[label]


def _parse_params(pairs: list[str], path: str | None) -> dict:
    params: dict = {}
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                params.update(json.load(f))
        except FileNotFoundError:
            raise CliError(f"no params file {path!r}") from None
        except json.JSONDecodeError as e:
            raise CliError(f"params file {path!r} is not JSON ({e})") from None
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"--param {pair!r}: expected key=value (e.g. max_depth=6)")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


@contextlib.contextmanager
def _client(args):
    """A Dask client: the given scheduler, or a local (CUDA) cluster of --local workers."""
    from distributed import Client
    if args.scheduler:
        with Client(args.scheduler) as c:
            yield c
        return
    if args.device and args.device.startswith("cuda"):
        from dask_cuda import LocalCUDACluster
        cluster = LocalCUDACluster(n_workers=args.local, dashboard_address=":0")
    else:
        from distributed import LocalCluster
        cluster = LocalCluster(n_workers=args.local, threads_per_worker=1,
                               dashboard_address=":0")
    with cluster, Client(cluster) as c:
        yield c


def cmd_train(args) -> None:
    import dgbdt
    params = _parse_params(args.param or [], args.params)
    if args.device:
        params["device"] = args.device
    use_dask = not args.no_dask
    X, y = _split_label(_read(args.data, use_dask), args.label, args.data)
    evals = []
    if args.eval:
        Xv, yv = _split_label(_read(args.eval, use_dask), args.label, args.eval)
        evals.append((Xv, yv))
    t = time.perf_counter()
    try:
        if not use_dask:
            dv = [(dgbdt.Dataset(a, b), "eval") for a, b in evals]
            booster = dgbdt.train(params, dgbdt.Dataset(X, y), args.rounds, evals=dv,
                                  early_stopping_rounds=args.early_stopping,
                                  verbose_eval=args.verbose)
        else:
            import dgbdt.dask as dgd
            with _client(args) as client:
                d = dgd.DaskDataset(client, X, y)
                dv = [(dgd.DaskDataset(client, a, b), "eval") for a, b in evals]
                out = dgd.train(client, params, d, args.rounds, evals=dv,
                                early_stopping_rounds=args.early_stopping,
                                verbose_eval=args.verbose)
                booster = out["booster"]
    except dgbdt.ParameterError as e:
        raise CliError(str(e)) from None
    booster.save_model(args.model, format=args.format)
    print(f"trained {booster.num_boosted_rounds()} rounds in {time.perf_counter() - t:.1f} s; "
          f"model saved to {args.model}"
          + (f" (best iteration {booster.best_iteration})"
             if booster.best_iteration is not None else ""))


def cmd_predict(args) -> None:
    import numpy as np
    import pandas as pd

    booster = _load(args.model)
    df = _read(args.data, use_dask=False)
    if args.label and args.label in df.columns:
        df = df.drop(columns=[args.label])
    try:
        pred = booster.predict(df, output_margin=args.margin)
    except ValueError as e:
        raise CliError(str(e)) from None
    pred = np.asarray(pred)
    out = (pd.DataFrame({"prediction": pred}) if pred.ndim == 1 else
           pd.DataFrame(pred, columns=[f"prediction_{k}" for k in range(pred.shape[1])]))
    if args.out.endswith(".csv"):
        out.to_csv(args.out, index=False)
    else:
        out.to_parquet(args.out, index=False)
    print(f"wrote {len(out)} predictions to {args.out}")


def _load(path: str):
    import dgbdt
    if not os.path.exists(path):
        raise CliError(f"no model file {path!r}")
    try:
        return dgbdt.load_model(path)
    except dgbdt.ModelFormatError as e:
        raise CliError(f"{path}: {e}") from None


def cmd_info(args) -> None:
    b = _load(args.model)
    info = {"objective": b.objective.name, "num_class": b.num_class,
            "rounds": b.num_boosted_rounds(), "trees": len(b.trees),
            "num_features": b.n_features, "feature_names": b.feature_names,
            "best_iteration": b.best_iteration, "best_score": b.best_score,
            "base_margin": b.base_margin.tolist(), "attributes": b.attributes(),
            "top_features_by_gain": dict(sorted(b.get_score(importance_type="total_gain")
                                                .items(), key=lambda kv: -kv[1])[:10])}
    print(json.dumps(info, indent=2))


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="dgbdt", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--debug", action="store_true",
                    help="show the traceback of an error instead of its one line")
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train a model from parquet/CSV files")
    t.add_argument("data", help="training data: a parquet/CSV path or glob")
    t.add_argument("--label", required=True, help="the label column")
    t.add_argument("--eval", help="evaluation data (same columns), scored every round")
    t.add_argument("--rounds", type=int, default=100)
    t.add_argument("--early-stopping", type=int, default=None,
                   help="stop after N rounds without improvement on --eval")
    t.add_argument("--param", action="append", metavar="KEY=VALUE")
    t.add_argument("--params", metavar="FILE.json", help="parameters from a JSON file")
    t.add_argument("--model", default="model.json", help="where to save the model")
    t.add_argument("--format", choices=["dgbdt", "xgboost"], default="dgbdt",
                   help="model file format")
    t.add_argument("--device", help="cpu, cuda or cuda:N (default: where the data are)")
    where = t.add_mutually_exclusive_group()
    where.add_argument("--scheduler", help="the address of a running Dask scheduler")
    where.add_argument("--local", type=int, default=2, metavar="N",
                       help="workers of the local cluster (default 2)")
    where.add_argument("--no-dask", action="store_true", help="train in this process")
    t.add_argument("--verbose", type=int, default=0, metavar="N",
                   help="print the eval line every N rounds (0: never)")
    t.set_defaults(func=cmd_train)
    p = sub.add_parser("predict", help="predict with a model, written to parquet or CSV")
    p.add_argument("model")
    p.add_argument("data", help="a parquet/CSV path or glob")
    p.add_argument("--out", default="predictions.parquet", help=".parquet or .csv")
    p.add_argument("--label", help="a label column to drop if the data have it")
    p.add_argument("--margin", action="store_true", help="raw margins, not predictions")
    p.set_defaults(func=cmd_predict)
    i = sub.add_parser("info", help="what a model file holds (JSON)")
    i.add_argument("model")
    i.set_defaults(func=cmd_info)
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "verbose", 0) == 0 and hasattr(args, "verbose"):
        args.verbose = False
    try:
        args.func(args)
    except (CliError, ValueError, TypeError, NotImplementedError, OSError) as e:
        # the user's mistakes (data, parameters, files, models) in one line; --debug: all
        if args.debug and not isinstance(e, CliError):
            raise
        print(f"dgbdt: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
