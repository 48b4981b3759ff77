"""The dgbdt command: train on a local Dask cluster from parquet files (the same model as in
this process), predict to parquet, info; one-line errors with exit status 1."""
import json
import subprocess
import sys

import numpy as np
import pytest

import dgbdt
from dgbdt.cli import main

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    for name, n, seed in (("train-0", 900, 1), ("train-1", 700, 2), ("valid", 400, 3)):
        r = np.random.default_rng(seed)
        X = r.standard_normal((n, 4))
        df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
        df["y"] = (X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * r.standard_normal(n) > 0).astype(float)
        df.to_parquet(d / f"{name}.parquet")
    del rng
    return d


def test_train_on_dask_predict_and_info(files, capsys):
    model = files / "model.json"
    args = ["train", str(files / "train-*.parquet"), "--label", "y", "--eval",
            str(files / "valid.parquet"), "--rounds", "30", "--early-stopping", "3",
            "--param", "max_depth=3", "--param", "eta=0.5", "--param", 'eval_metric="auc"']
    assert main(args + ["--local", "2", "--model", str(model)]) == 0
    assert "model saved to" in capsys.readouterr().out
    local = files / "local.json"
    assert main(args + ["--no-dask", "--model", str(local)]) == 0
    # the same rows on a 2-worker cluster and in this process: the same model, byte for byte
    assert model.read_text() == local.read_text()
    out = files / "pred.parquet"
    assert main(["predict", str(model), str(files / "valid.parquet"), "--label", "y",
                 "--out", str(out)]) == 0
    valid = pd.read_parquet(files / "valid.parquet")
    expect = dgbdt.load_model(model).predict(valid.drop(columns=["y"]))
    np.testing.assert_array_equal(pd.read_parquet(out)["prediction"].to_numpy(), expect)
    capsys.readouterr()
    assert main(["info", str(model)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["objective"] == "reg:squarederror" and info["feature_names"] == list("abcd")
    assert info["best_iteration"] is not None and info["rounds"] <= 30


def test_errors_are_one_line_with_status_1(files, capsys):
    assert main(["train", str(files / "nope-*.parquet"), "--label", "y", "--no-dask"]) == 1
    assert "no file named or matching" in capsys.readouterr().err
    assert main(["train", str(files / "valid.parquet"), "--label", "z", "--no-dask"]) == 1
    assert "has no column 'z'" in capsys.readouterr().err
    assert main(["train", str(files / "valid.parquet"), "--label", "y", "--no-dask",
                 "--param", "max_depht=3"]) == 1
    assert "max_depht" in capsys.readouterr().err
    assert main(["info", str(files / "missing.json")]) == 1
    assert "no model file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["train"])
    assert e.value.code == 2


def test_module_entry_point(files):
    r = subprocess.run([sys.executable, "-m", "dgbdt.cli", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "dgbdt train" in r.stdout


def test_a_literal_file_name_comes_before_its_glob_and_data_errors_are_one_line(files, tmp_path,
                                                                                 capsys):
    """data[1].parquet names a file (it said 'no file matches' before: the name was taken as a
    glob only); a mistake in the data is one line (it was a traceback), --debug shows it."""
    df = pd.read_parquet(files / "valid.parquet")
    odd = tmp_path / "data[1].parquet"
    df.to_parquet(odd)
    model = tmp_path / "m.json"
    assert main(["train", str(odd), "--label", "y", "--no-dask", "--rounds", "2",
                 "--model", str(model)]) == 0
    assert model.exists()
    df.assign(a=np.where(np.arange(len(df)) == 5, np.inf, df["a"])).to_parquet(tmp_path / "inf.parquet")
    args = ["train", str(tmp_path / "inf.parquet"), "--label", "y", "--no-dask", "--rounds", "2",
            "--model", str(tmp_path / "m2.json")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("dgbdt: error: ") and err.count("\n") == 1 and "infinite" in err
    with pytest.raises(ValueError, match="infinite"):
        main(["--debug"] + args)
