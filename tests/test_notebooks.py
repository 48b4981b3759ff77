"""The example notebooks: the CPU one executed headless (as a user would run it), the RAPIDS one
checked for form, and both checked to be what examples/make_notebooks.py writes.

The CPU notebook runs in a fresh ipykernel of this interpreter (a kernelspec written to a
temporary JUPYTER_PATH, so neither an installed ``python3`` kernel nor the home directory is
used): ETL -> parquet -> a 2-worker LocalCluster -> DaskGBDTClassifier with early stopping ->
predict_proba -> AUC -> plots, rendered by the inline backend as PNGs.
"""
import json
import os
import re
import sys
import time

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
sys.path.insert(0, EXAMPLES)
import make_notebooks  # noqa: E402

pytestmark = pytest.mark.slow  # executes a notebook in a kernel

KERNEL = "dgbdt-test-python"


def _read(name: str):
    return nbformat.read(os.path.join(EXAMPLES, name), as_version=4)


def _text(cell) -> str:
    """A code cell's stream and text outputs, joined."""
    out = []
    for o in cell.outputs:
        if o.output_type == "stream":
            out.append(o.text)
        elif "data" in o and "text/plain" in o.data:
            out.append(o.data["text/plain"])
    return "".join(out)


def _code(nb, needle: str):
    """The one code cell whose source contains needle."""
    cells = [c for c in nb.cells if c.cell_type == "code" and needle in c.source]
    assert len(cells) == 1, f"{len(cells)} code cells contain {needle!r}"
    return cells[0]


@pytest.mark.parametrize("variant", [make_notebooks.GPU, make_notebooks.CPU],
                         ids=lambda v: v["name"])
def test_committed_notebook_is_generated(variant):
    """The committed .ipynb is what the script writes (run python examples/make_notebooks.py
    after editing it), and carries no outputs."""
    with open(os.path.join(EXAMPLES, variant["name"]), encoding="utf-8") as f:
        assert f.read() == make_notebooks.render(variant), \
            f"{variant['name']} is stale: run python examples/make_notebooks.py"
    nb = _read(variant["name"])
    nbformat.validate(nb)
    for c in nb.cells:
        if c.cell_type == "code":
            assert c.outputs == [] and c.execution_count is None


def test_rapids_notebook_structure():
    """The RAPIDS notebook cannot run here (it needs an NVIDIA GPU with cuDF, dask_cudf and
    dask-cuda; tests/gpu/test_gpu_notebook.py runs it on one): check that it is the CPU
    notebook's steps on cuDF, dask_cudf and a LocalCUDACluster, with nothing of pandas' left."""
    gpu, cpu = _read("rapids_notebook.ipynb"), _read("cpu_notebook.ipynb")
    assert [c.cell_type for c in gpu.cells] == [c.cell_type for c in cpu.cells]

    def steps(nb):
        return [ln for c in nb.cells if c.cell_type == "markdown"
                for ln in c.source.splitlines() if ln.startswith("## ")]

    assert steps(gpu) == [s.replace("pandas", "cuDF") for s in steps(cpu)]
    assert len(steps(gpu)) == 8
    code = "\n".join(c.source for c in gpu.cells if c.cell_type == "code")
    for needle in ("import cudf", "cudf.DataFrame", "import dask_cudf",
                   "dask_cudf.read_parquet(", "from dask_cuda import LocalCUDACluster",
                   "LocalCUDACluster(", "random_split([0.9, 0.1], random_state=0)",
                   "DaskGBDTClassifier(", 'eval_metric="auc"', "early_stopping_rounds=",
                   "eval_set=", "predict_proba(", "roc_auc_score(", "dgbdt.plot_importance(",
                   "dgbdt.plot_metric(", "cluster.close()"):
        assert needle in code, needle
    for absent in ("pandas", "pd.", "LocalCluster(n_workers", "dd.read_parquet"):
        assert absent not in code, absent
    for c in gpu.cells:
        if c.cell_type == "code":
            compile("\n".join(ln for ln in c.source.splitlines() if not ln.startswith("%")),
                    c.id, "exec")


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    """A kernelspec running this interpreter's ipykernel, found first through JUPYTER_PATH;
    Jupyter's and IPython's own directories moved into tmp_path too."""
    pytest.importorskip("ipykernel")
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "dgbdt test (this interpreter)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.delenv("MPLBACKEND", raising=False)   # the notebook asks for the inline one
    return KERNEL


def test_cpu_notebook_executes(kernel, tmp_path):
    """The CPU notebook runs top to bottom: training stopped early, AUC > 0.7 and agreeing
    with dgbdt's own, and both plots rendered as PNGs."""
    nbclient = pytest.importorskip("nbclient")
    nb = _read("cpu_notebook.ipynb")
    t0 = time.perf_counter()
    nbclient.NotebookClient(nb, kernel_name=kernel, timeout=300,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    seconds = time.perf_counter() - t0
    print(f"cpu_notebook.ipynb executed in {seconds:.1f} s")

    fit = _text(_code(nb, "est.fit("))
    m = re.search(r"rounds trained: (\d+) of (\d+)", fit)
    assert m, fit
    rounds, limit = int(m[1]), int(m[2])
    m = re.search(r"best iteration: (\d+), validation auc ([0-9.]+)", fit)
    assert m, fit
    best, best_auc = int(m[1]), float(m[2])
    early = int(re.search(r"EARLY_STOPPING = .*, (\d+)$",
                          _code(nb, "EARLY_STOPPING =").source, re.M)[1])
    assert rounds < limit, "early stopping did not stop the training"
    assert rounds == best + early + 1
    assert "validation_1-auc:" in fit                      # verbose=25's log lines

    score = _text(_code(nb, "roc_auc_score("))
    m = re.search(r"validation AUC \(scikit-learn\): ([0-9.]+)", score)
    assert m, score
    auc = float(m[1])
    assert auc > 0.7
    assert abs(auc - best_auc) < 2e-4          # the exact AUC of the same rows, both ways

    for needle in ("plot_importance(", "plot_metric("):
        outs = _code(nb, needle).outputs
        pngs = [o for o in outs if o.output_type == "display_data" and "image/png" in o.data]
        assert len(pngs) == 1, (needle, outs)
        assert len(pngs[0].data["image/png"]) > 1000       # base64 of a real picture
