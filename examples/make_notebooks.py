"""Writes the two example notebooks from one list of cells, so that they cannot drift apart:

    python examples/make_notebooks.py            # (re)writes both .ipynb files beside this one
    python examples/make_notebooks.py --check    # exits 1 if a committed notebook is stale

* ``rapids_notebook.ipynb``: cuDF ETL -> parquet -> dask_cudf on a LocalCUDACluster ->
  DaskGBDTClassifier with early stopping -> AUC, importance and learning-curve plots;
* ``cpu_notebook.ipynb``: its CPU twin, pandas -> dask.dataframe on a LocalCluster of 2
  workers, the same steps (tests/test_notebooks.py executes it headless in CI).

The cells below are ``string.Template`` texts; ``GPU`` and ``CPU`` fill in what differs (the
DataFrame library, the cluster, the reader and the sizes). Notebooks are written without
outputs and with fixed cell ids, so the same script always writes the same bytes.
"""
from __future__ import annotations

import argparse
import os
import sys
from string import Template

import nbformat

HERE = os.path.dirname(os.path.abspath(__file__))

GPU = dict(
    name="rapids_notebook.ipynb",
    title="dgbdt on RAPIDS: cuDF -> dask_cudf -> DaskGBDTClassifier",
    intro="""\
Needs one or more NVIDIA GPUs with RAPIDS (`cudf`, `dask_cudf`), `dask-cuda` and
`pip install "dgbdt[gpu,plot]" scikit-learn`. Every step runs on the GPU: the ETL in cuDF, the
partitions as cuDF frames on the workers, training, evaluation and prediction. The first fit
compiles dgbdt's CUDA kernels (cached afterwards). The CPU twin of this notebook is
`cpu_notebook.ipynb` (the same steps with pandas; CI runs it).""",
    rows="500_000", files="8", rounds="500", depth="6", eta="0.3", early_stopping="20",
    lib_import="import cudf",
    lib="cudf",
    lib_name="cuDF",
    cluster_md="""\
A `LocalCUDACluster` starts one Dask worker per visible GPU (`CUDA_VISIBLE_DEVICES` chooses
them); dgbdt trains where the partitions are, on the workers' GPUs.""",
    cluster="""\
from dask_cuda import LocalCUDACluster
from distributed import Client

cluster = LocalCUDACluster(dashboard_address=":0")   # one worker per GPU
client = Client(cluster)""",
    read_md="""\
`dask_cudf.read_parquet` is `dask.dataframe.read_parquet` with the cuDF backend: each partition
is a cuDF DataFrame in a worker's GPU memory.""",
    read="""\
import dask_cudf

ddf = dask_cudf.read_parquet(data_dir)""",
    host_import="import cupy\n\n",
    proba="cupy.asnumpy(est.predict_proba(X_valid).compute())",   # to the host
)

CPU = dict(
    name="cpu_notebook.ipynb",
    title="dgbdt on a CPU Dask cluster: pandas -> dask.dataframe -> DaskGBDTClassifier",
    intro="""\
The CPU twin of `rapids_notebook.ipynb`: the same steps with pandas and a `LocalCluster`, small
enough to run in seconds on two cores (CI executes it, tests/test_notebooks.py). Needs
`pip install "dgbdt[dask,plot]" scikit-learn`.""",
    rows="20_000", files="4", rounds="300", depth="4", eta="0.3", early_stopping="20",
    lib_import="import pandas as pd",
    lib="pd",
    lib_name="pandas",
    cluster_md="""\
A `LocalCluster` of two single-threaded worker processes; dgbdt trains where the partitions
are, on the workers.""",
    cluster="""\
from distributed import Client, LocalCluster

cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0")
client = Client(cluster)""",
    read_md="""\
`dask.dataframe.read_parquet`: one lazy pandas partition per file.""",
    read="""\
import dask.dataframe as dd

ddf = dd.read_parquet(data_dir)""",
    host_import="",
    proba="est.predict_proba(X_valid).compute()",
)

# (kind, template) in order; kind "md" or "code"
CELLS = [
    ("md", """\
# $title

$intro

Steps: ETL of a synthetic frame in $lib_name, written to parquet files; a Dask cluster; the
files read as a Dask DataFrame and split 90/10 into training and validation rows;
`DaskGBDTClassifier` fitted with a validation set and early stopping on AUC; predicted
probabilities scored with scikit-learn; feature importance and learning curves."""),
    ("code", """\
%matplotlib inline
import os
import shutil
import tempfile
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import roc_auc_score

import dgbdt
from dgbdt.dask import DaskGBDTClassifier

ROWS, FEATURES, FILES = $rows, 12, $files   # rows of the frame, feature columns, parquet files
ROUNDS, DEPTH, ETA, EARLY_STOPPING = $rounds, $depth, $eta, $early_stopping"""),
    ("md", """\
## 1. ETL in $lib_name

A frame as an ETL job leaves it: float features, one with 5 % nulls (missing values: every
split learns which way they go), two columns derived from others, and a binary label that
depends on the features non-linearly. It is written to `FILES` parquet files, as a pipeline
would hand it over."""),
    ("code", """\
$lib_import

rng = np.random.default_rng(0)
base = FEATURES - 2
X = rng.standard_normal((ROWS, base), dtype=np.float32)
logit = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.5 * X[:, 3] ** 2 - X[:, 4]
y = (rng.random(ROWS) < 1 / (1 + np.exp(-logit))).astype(np.int32)

df = $lib.DataFrame({f"f{i}": X[:, i] for i in range(base)})
df["f3"] = df["f3"].where($lib.Series(rng.random(ROWS) >= 0.05))   # 5 % nulls
df["ratio"] = df["f0"] / (df["f1"].abs() + 1.0)                    # derived columns
df["prod"] = df["f2"] * df["f5"]
df["label"] = y

data_dir = tempfile.mkdtemp(prefix="dgbdt-notebook-")
step = -(-ROWS // FILES)
for i in range(FILES):
    df.iloc[i * step:(i + 1) * step].to_parquet(os.path.join(data_dir, f"part{i:03d}.parquet"))
print(f"{len(df)} rows x {df.shape[1]} columns in {FILES} files under {data_dir}; "
      f"{int(df['f3'].isna().sum())} nulls in f3")
del df, X, y, logit
"""),
    ("md", """\
## 2. A Dask cluster

$cluster_md"""),
    ("code", """\
$cluster
print(f"{len(client.scheduler_info()['workers'])} workers, dashboard {client.dashboard_link}")"""),
    ("md", """\
## 3. Read the parquet files and split

$read_md `random_split` draws the validation rows per partition, reproducibly with
`random_state`."""),
    ("code", """\
$read

train, valid = ddf.random_split([0.9, 0.1], random_state=0)
features = [c for c in ddf.columns if c != "label"]
X_train, y_train = train[features], train["label"]
X_valid, y_valid = valid[features], valid["label"]
print(f"{ddf.npartitions} partitions, features {features}")"""),
    ("md", """\
## 4. Train with early stopping

XGBoost's scikit-learn names: `eval_metric="auc"` is scored on every `eval_set` pair each
round, and training stops once the last pair (the validation rows) has not improved for
`early_stopping_rounds` rounds; `best_iteration` is the best round, and predictions use the
rounds up to it. The training rows are an eval set too, for the learning curves; they are
scored from the margins training keeps, without predicting them again."""),
    ("code", """\
est = DaskGBDTClassifier(n_estimators=ROUNDS, max_depth=DEPTH, learning_rate=ETA,
                         eval_metric="auc", early_stopping_rounds=EARLY_STOPPING)
est.client = client
t0 = time.perf_counter()
est.fit(X_train, y_train, eval_set=[(X_train, y_train), (X_valid, y_valid)], verbose=25)
seconds = time.perf_counter() - t0

booster = est.get_booster()
print(f"fit in {seconds:.1f} s")
print(f"rounds trained: {booster.num_boosted_rounds()} of {ROUNDS}")
print(f"best iteration: {est.best_iteration}, validation auc {est.best_score:.4f}")"""),
    ("md", """\
## 5. Predict and score

`predict_proba` is lazy: the workers predict their partitions when it is computed. dgbdt's
`auc` is the exact AUC of all validation rows (not an average over workers), so scikit-learn's
score of the predictions agrees with the history's best value."""),
    ("code", """\
${host_import}proba = $proba   # [n, 2]: P(0), P(1)
labels = y_valid.compute().to_numpy()
auc = roc_auc_score(labels, proba[:, 1])
print(f"validation AUC (scikit-learn): {auc:.4f} on {len(proba)} rows")"""),
    ("md", """\
## 6. Feature importance

Total gain of each feature's splits (`importance_type="gain"` is the average gain per split,
`"weight"` the number of splits)."""),
    ("code", """\
fig, ax = plt.subplots(figsize=(7, 4))
dgbdt.plot_importance(est, ax=ax, importance_type="total_gain", values_format="{v:.0f}")
plt.show()"""),
    ("md", """\
## 7. Learning curves

AUC per round on the training rows (`validation_0`) and the validation rows
(`validation_1`), from `est.evals_result()`; the dashed line marks `best_iteration`."""),
    ("code", """\
fig, ax = plt.subplots(figsize=(7, 4))
dgbdt.plot_metric(est.evals_result(), metric="auc", ax=ax, title="AUC per round")
ax.axvline(est.best_iteration, color="gray", linestyle="--")
plt.show()"""),
    ("md", """\
## 8. Clean up

Close the client and the cluster (their worker processes end) and remove the parquet files."""),
    ("code", """\
client.close()
cluster.close()
shutil.rmtree(data_dir, ignore_errors=True)"""),
]


def build(variant: dict) -> nbformat.NotebookNode:
    """The notebook of one variant (GPU or CPU), without outputs, with fixed cell ids."""
    stem = variant["name"].split("_")[0]
    cells = []
    for i, (kind, text) in enumerate(CELLS):
        source = Template(text).substitute(variant).rstrip("\n")
        make = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        cells.append(make(source, id=f"{stem}-{i:02d}"))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python",
                                  "name": "python3"},
                   "language_info": {"name": "python"}}
    nbformat.validate(nb)
    return nb


def render(variant: dict) -> str:
    """The notebook's file text (what is committed)."""
    return nbformat.writes(build(variant)) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a committed notebook differs")
    a = ap.parse_args()
    stale = []
    for variant in (GPU, CPU):
        path = os.path.join(HERE, variant["name"])
        text = render(variant)
        if a.check:
            try:
                with open(path, encoding="utf-8") as f:
                    same = f.read() == text
            except FileNotFoundError:
                same = False
            if not same:
                stale.append(variant["name"])
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {path}")
    if stale:
        print(f"stale: {', '.join(stale)}; run python examples/make_notebooks.py",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
