"""A rank's partitions joined into one shard on its GPU (dgbdt.dask.shards.joined_shard): the
device join gives the host join's words, and the model is the one of a shard a page and the
in-process one (rows keep their order and global ids)."""
import json

import numpy as np
import pytest

import cupy as cp

import dgbdt
import dgbdt.dask as dgd
from dgbdt.backends.device import get_backend
from dgbdt.kernels.pages import join, pack

da = pytest.importorskip("dask.array")


def test_join_on_the_device_equals_the_host_join():
    rng = np.random.default_rng(5)
    for _ in range(40):
        bits, nf = int(rng.integers(1, 33)), int(rng.integers(1, 9))
        parts = [rng.integers(0, 1 << bits, size=(int(rng.integers(0, 300)), nf),
                              dtype=np.uint64).astype(np.uint32)
                 for _ in range(int(rng.integers(1, 6)))]
        host = [pack(p, bits) for p in parts]
        dev = [pg.with_words(cp.asarray(pg.words)) for pg in host]
        want = join(host)
        got = get_backend("cuda").join_pages(dev)        # the prebuilt kernel
        assert (got.n_rows, got.bits, got.n_features) == (want.n_rows, bits, nf)
        np.testing.assert_array_equal(cp.asnumpy(got.words), want.words)


def test_device_pages_pack_at_the_width_their_symbols_need(cp):
    """quantize_pack's width is bits_for of the largest symbol present, as the host's pack:
    256 bins without missing values in 8 bits, with one missing value in 9; the device join
    of such pages widens the narrower one; the symbols are the host's either way."""
    from dgbdt.data.quantize import quantize
    from dgbdt.data.sketch import summarize
    from dgbdt.data.quantize import cuts_from_summaries
    rng = np.random.default_rng(4)
    X = rng.standard_normal((20000, 5)).astype(np.float32)
    cuts = cuts_from_summaries(summarize(X, None, 4096), 256)
    be = get_backend("cuda")
    full = be.quantize_pack(cp.asarray(X), cuts)
    assert full.bits == 8 and int(cuts.n_bins().max()) == 256
    Xm = X[:700].copy()
    Xm[3, 2] = np.nan
    missing = be.quantize_pack(cp.asarray(Xm), cuts)
    assert missing.bits == 9
    for page, rows in ((full, X), (missing, Xm)):
        host = pack(quantize(rows, cuts))
        assert host.bits == page.bits
        np.testing.assert_array_equal(cp.asnumpy(page.words), host.words)
    joined = be.join_pages([full, missing])
    want = pack(quantize(np.concatenate([X, Xm]), cuts), 9)
    assert joined.bits == 9
    np.testing.assert_array_equal(cp.asnumpy(joined.words), want.words)


def _install_counter():
    from dgbdt.dask import shards
    if not hasattr(shards, "_joined_rows"):
        real = shards.joined_shard
        shards._joined_rows = []

        def counting(units, *args):
            out = real(units, *args)
            shards._joined_rows.append(out.n_rows)
            return out
        shards.joined_shard = counting
    shards._joined_rows.clear()


def _joined_rows():
    from dgbdt.dask import shards
    return list(shards._joined_rows)


def _set_join(on: bool):
    from dgbdt.dask import shards
    shards.JOIN_PAGES = on


@pytest.mark.parametrize("extra", [{}, {"subsample": 0.7}])
def test_a_ranks_chunks_train_as_one_shard_with_the_same_model(cuda_client, extra):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((6000, 7)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.standard_normal(6000) * .3 > 0).astype(np.float32)
    p = dict({"objective": "binary:logistic", "max_depth": 5, "max_bin": 64,
              "device": "cuda"}, **extra)

    def fit():
        d = dgd.DaskDataset(cuda_client, da.from_array(cp.asarray(X), chunks=(1300, -1),
                                                       asarray=False),
                            da.from_array(cp.asarray(y), chunks=(1300,), asarray=False))
        return json.dumps(dgd.train(cuda_client, p, d, 6, mode="nccl", verbose_eval=False)
                          ["booster"].to_dict(), sort_keys=True)
    cuda_client.run(_install_counter)
    joined = fit()
    assert sum(sum(r) for r in cuda_client.run(_joined_rows).values()) == 6000
    cuda_client.run(_set_join, False)
    try:
        cuda_client.run(_install_counter)
        apart = fit()
        assert all(r == [] for r in cuda_client.run(_joined_rows).values())
    finally:
        cuda_client.run(_set_join, True)
    ref = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), 6,
                      verbose_eval=False)
    assert joined == apart == json.dumps(ref.to_dict(), sort_keys=True)
