"""The docs site (mkdocs.yml, docs/) builds with warnings as errors, and its API reference is
rendered from the docstrings by static analysis: dgbdt (hence cupy, cudf) is never imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds the docs site

ROOT = Path(__file__).resolve().parents[1]

# Runs `python -m mkdocs build ...` (argv after -c) with imports of dgbdt and the GPU stack
# refused: the API reference must come from the sources alone, on machines without a GPU.
_BUILD_WITHOUT_IMPORTS = """
import runpy, sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dgbdt", "cupy", "cudf"):
            print("REFUSED IMPORT " + name, file=sys.stderr)
            raise ImportError("the docs build must not import " + name)

sys.meta_path.insert(0, Refuse())
sys.argv = ["mkdocs"] + sys.argv[1:]
runpy.run_module("mkdocs", run_name="__main__", alter_sys=True)
"""


def test_docs_build_strict(tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-c", _BUILD_WITHOUT_IMPORTS, "build", "--strict",
         "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "WARNING" not in log, log
    assert "REFUSED IMPORT" not in log, log

    api = (site / "api" / "index.html").read_text()
    # headings of documented objects (their HTML ids) and text of their docstrings
    for anchor in ('id="dgbdt.train.train"', 'id="dgbdt.Dataset"', 'id="dgbdt.Booster.predict"',
                   'id="dgbdt.sklearn.GBDTClassifier"', 'id="dgbdt.dask.DaskDataset"',
                   'id="dgbdt.dask.sklearn.DaskGBDTClassifier"', 'id="dgbdt.dask.train.train"',
                   'id="dgbdt.callback.EarlyStopping"', 'id="dgbdt.plotting.plot_tree"'):
        assert anchor in api, anchor
    assert "Train a boosted tree model" in api
    assert "Training or evaluation data held as partitions on a Dask cluster" in api
    for page in ("getting-started", "parameters", "dask", "gpu", "memory", "architecture",
                 "benchmarks"):
        assert (site / page / "index.html").is_file(), page
