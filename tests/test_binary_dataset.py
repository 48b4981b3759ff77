"""Dataset.save_binary / load_binary: the rows and their quantization round-trip (no pickle),
training from the loaded file skips quantization and gives the same model."""
import json

import numpy as np
import pytest

import dgbdt
from dgbdt.data import binary


def test_round_trip_and_same_model(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) > 0).astype(float)
    w = rng.uniform(0.5, 2, 1500)
    d = dgbdt.Dataset(X, y, weight=w, feature_names=list("abcdef"), page_rows=600)
    p = {"objective": "binary:logistic", "max_depth": 4}
    ref = dgbdt.train(p, d, 5, verbose_eval=False)          # builds cuts and pages
    path = tmp_path / "train.dgbdt"
    d.save_binary(path)
    loaded = dgbdt.Dataset.load_binary(path)
    np.testing.assert_array_equal(loaded.data, d.data)
    np.testing.assert_array_equal(loaded.weight, d.weight)
    assert loaded.feature_names == list("abcdef") and loaded.page_rows == 600
    # training from the file does not sketch or pack again
    from dgbdt.data import dataset as dmod

    def boom(*a, **k):
        raise AssertionError("quantized again")
    monkeypatch.setattr(dmod.Dataset, "_summarize", boom)
    monkeypatch.setattr(dmod.Dataset, "build_page", boom)
    assert dgbdt.train(p, loaded, 5, verbose_eval=False).save_raw() == ref.save_raw()


def test_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such Dataset file"):
        dgbdt.Dataset.load_binary(tmp_path / "nope.dgbdt")
    junk = tmp_path / "junk.dgbdt"
    junk.write_bytes(b"not an archive")
    with pytest.raises(binary.DatasetFormatError, match="is not a dgbdt Dataset file"):
        dgbdt.Dataset.load_binary(junk)
    d = dgbdt.Dataset(np.zeros((5, 2)), np.zeros(5))
    path = tmp_path / "v9.dgbdt"
    d.save_binary(path)
    z = dict(np.load(path, allow_pickle=False))
    header = json.loads(str(z["header"]))
    header["version"] = 9
    z["header"] = np.array(json.dumps(header))
    with open(path, "wb") as f:
        np.savez(f, **z)
    with pytest.raises(binary.DatasetFormatError, match="version 9; this dgbdt reads versions 1, 2"):
        dgbdt.Dataset.load_binary(path)
