"""examples/rapids_notebook.ipynb executed on a GPU, headless (its CPU twin runs in CI:
tests/test_notebooks.py).

With nbclient and ipykernel installed, the notebook runs in a kernel of this interpreter as a
user would run it, and both plots must come back as PNGs. Without them (the GPU image has
neither), its code cells run in order as one ``python -c`` script in a fresh process
(``%`` magics dropped, MPLBACKEND=Agg), and the printed results are checked the same way.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

import pytest

pytest.importorskip("cudf")
pytest.importorskip("dask_cudf")
pytest.importorskip("dask_cuda")
pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")
pytest.importorskip("pyarrow")

NOTEBOOK = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "examples", "rapids_notebook.ipynb")
MARK = "<<dgbdt-notebook-cell {}>>"


def _cells() -> list[str]:
    with open(NOTEBOOK, encoding="utf-8") as f:
        nb = json.load(f)
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def _in_kernel(tmp_path, monkeypatch) -> list[tuple[str, int]]:
    """(text output, PNG count) per code cell, run by nbclient in this interpreter's kernel."""
    import nbclient
    import nbformat
    name = "dgbdt-test-python"
    spec = tmp_path / "jupyter" / "kernels" / name
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name, "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.delenv("MPLBACKEND", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, kernel_name=name, timeout=600,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    out = []
    for c in nb.cells:
        if c.cell_type == "code":
            text = "".join(o.get("text", "") for o in c.outputs if o.output_type == "stream")
            pngs = sum(1 for o in c.outputs if "image/png" in o.get("data", {}))
            out.append((text, pngs))
    return out


def _as_script(tmp_path) -> list[tuple[str, None]]:
    """(stdout, None) per code cell, the cells run in order as one script."""
    parts = []
    for i, source in enumerate(_cells()):
        parts.append(f"print({MARK.format(i)!r}, flush=True)")
        parts.append("\n".join(ln for ln in source.splitlines() if not ln.startswith("%")))
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1"}
    # -c, not a file: the workers' spawned processes must not run the script again
    r = subprocess.run([sys.executable, "-c", "\n".join(parts)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    texts = re.split(r"<<dgbdt-notebook-cell \d+>>\n", r.stdout)[1:]
    assert len(texts) == len(parts) // 2, r.stdout
    return [(t, None) for t in texts]


def test_rapids_notebook_executes(tmp_path, monkeypatch):
    if all(importlib.util.find_spec(m) for m in ("nbclient", "nbformat", "ipykernel")):
        how, run = "in a kernel (nbclient)", _in_kernel
    else:
        how, run = "as a script (no nbclient/ipykernel here)", lambda tmp, mp: _as_script(tmp)
    t0 = time.perf_counter()
    outputs = run(tmp_path, monkeypatch)
    print(f"{os.path.basename(NOTEBOOK)} ran {how} in {time.perf_counter() - t0:.1f} s")
    sources = _cells()

    def text(needle: str) -> tuple[str, int | None]:
        [i] = [i for i, s in enumerate(sources) if needle in s]
        return outputs[i]

    fit, _ = text("est.fit(")
    print(fit)
    rounds, limit = map(int, re.search(r"rounds trained: (\d+) of (\d+)", fit).groups())
    m = re.search(r"best iteration: (\d+), validation auc ([0-9.]+)", fit)
    best, best_auc = int(m[1]), float(m[2])
    assert best < rounds < limit, "early stopping did not stop the training"
    assert "validation_1-auc:" in fit
    score, _ = text("roc_auc_score(labels")
    print(score)
    auc = float(re.search(r"validation AUC \(scikit-learn\): ([0-9.]+)", score)[1])
    assert auc > 0.7 and abs(auc - best_auc) < 2e-4
    for needle in ("plot_importance(", "plot_metric("):
        _, pngs = text(needle)
        assert pngs in (None, 1), (needle, pngs)
