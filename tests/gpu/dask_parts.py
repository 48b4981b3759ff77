"""Dask datasets for the GPU tests: uneven partitions placed in turn on the workers."""
import numpy as np


def placed(client, X, y, w, parts, on_device=True, check=True):
    """A DaskDataset of ``parts`` uneven partitions of (X, y, w) placed in turn on the
    workers (the rows of each partition made on its worker): cupy arrays, or numpy with
    ``on_device=False``. ``check``: assert the dataset is on the device and every worker
    holds rows."""
    import dask
    import dask.array as da

    import dgbdt.dask as dgd

    workers = sorted(client.scheduler_info()["workers"])
    edges = np.linspace(0, len(y), parts + 1).astype(int)
    edges[1:-1] += np.arange(1, parts) * 7         # uneven
    if on_device:
        import cupy as cp
        make, meta = cp.asarray, cp
    else:
        make, meta = np.asarray, np
    cols = [[] for _ in range(3)]
    for i, (a, b) in enumerate(zip(edges, edges[1:])):
        where = [workers[i % len(workers)]]
        for c, v in zip(cols, (X, y, w)):
            if v is None:
                continue
            f = client.submit(make, v[a:b], workers=where, allow_other_workers=True,
                              pure=False)
            c.append(da.from_delayed(dask.delayed(f), (b - a,) + v.shape[1:], dtype=v.dtype,
                                     meta=meta.empty((0,) + v.shape[1:], v.dtype)))
    d = dgd.DaskDataset(client, da.concatenate(cols[0]), da.concatenate(cols[1]),
                        None if w is None else da.concatenate(cols[2]))
    if check:
        assert d.on_device == on_device
        assert len(set(d.workers_of_parts())) == len(workers), "every worker holds rows"
    return d
