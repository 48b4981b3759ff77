"""Datasets saved with their quantization: ``Dataset.save_binary(path)`` and
``Dataset.load_binary(path)``, so repeated trainings on the same rows skip the sketch and the
packing (XGBoost's DMatrix.save_binary, without pickle).

The file is a numpy ``.npz`` archive of plain arrays (read with ``allow_pickle=False``): the
float32 rows, labels, weights and base margins, every cut set the Dataset has built (one per
max_bin) and its host pages (bit-packed words), with a JSON header (``format``, ``version``,
feature names, page sizes; with categorical features their types, category values and which
features of each cut set are categorical: optional keys, so older files load as before) that is
checked on load.
"""
from __future__ import annotations

import json
import os

import numpy as np

FORMAT, VERSION = "dgbdt-dataset", 2
#: versions this dgbdt reads: 2 adds sparse rows (``csr_*`` arrays) and ELLPACK pages (a
#: fourth entry in a page's shape)
READS = (1, 2)


class DatasetFormatError(ValueError):
    """A file that is not a dgbdt Dataset (or of a version this dgbdt does not read)."""


def save(d, path) -> None:
    from .sparse import is_sparse
    if is_sparse(d.data):            # CSR rows as their three arrays (no pickle)
        X = d.data.get() if hasattr(d.data, "get") else d.data
        arrays = {"csr_data": X.data, "csr_indices": X.indices, "csr_indptr": X.indptr,
                  "csr_shape": np.asarray(X.shape, np.int64)}
    else:
        arrays = {"data": np.asarray(d.data)}
    for name in ("label", "weight", "base_margin", "qid"):
        v = getattr(d, name)
        if v is not None:
            arrays[name] = np.asarray(v)
    header = {"format": FORMAT, "version": VERSION, "feature_names": d.feature_names,
              "page_rows": d.page_rows, "max_bin": d.max_bin, "cuts": [], "pages": []}
    if d.feature_types is not None:       # categorical features (dgbdt.data.categorical)
        header["feature_types"], header["categories"] = list(d.feature_types), d.categories
    for max_bin, cuts in d._cuts.items():
        header["cuts"].append(int(max_bin))
        arrays[f"cuts{max_bin}_values"] = np.asarray(cuts.values)
        arrays[f"cuts{max_bin}_ptrs"] = np.asarray(cuts.ptrs)
        arrays[f"cuts{max_bin}_min"] = np.asarray(cuts.min_values)
        if cuts.categorical is not None:
            arrays[f"cuts{max_bin}_categorical"] = np.asarray(cuts.categorical)
        if cuts.first_values is not None:
            arrays[f"cuts{max_bin}_first"] = np.asarray(cuts.first_values)
    for (max_bin, where), pages in d._pages.items():
        if where != "cpu":          # device pages are rebuilt where they are needed
            continue
        header["pages"].append({"max_bin": int(max_bin),
                                "shape": [[p.n_rows, p.n_features, p.bits, int(p.ell)]
                                          for p in pages]})
        for i, p in enumerate(pages):
            arrays[f"pages{max_bin}_{i}"] = np.asarray(p.words)
    arrays["header"] = np.array(json.dumps(header))
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def load(path, dataset_class):
    """The Dataset (of ``dataset_class``, dgbdt.data.dataset.Dataset) saved at ``path``."""
    from ..kernels.pages import Page
    from .quantize import Cuts
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such Dataset file: {os.fspath(path)!r}")
    try:
        z = np.load(path, allow_pickle=False)
        header = json.loads(str(z["header"]))
    except (ValueError, KeyError, OSError) as e:
        raise DatasetFormatError(f"{os.fspath(path)!r} is not a dgbdt Dataset file ({e})") \
            from None
    if header.get("format") != FORMAT:
        raise DatasetFormatError(f"{os.fspath(path)!r} is not a dgbdt Dataset file")
    if header.get("version") not in READS:
        raise DatasetFormatError(f"Dataset file version {header.get('version')!r}; this dgbdt "
                                 f"reads versions {', '.join(map(str, READS))}")
    get = (lambda k: z[k] if k in z.files else None)
    if "csr_data" in z.files:
        import scipy.sparse
        data = scipy.sparse.csr_matrix((z["csr_data"], z["csr_indices"], z["csr_indptr"]),
                                       shape=tuple(int(v) for v in z["csr_shape"]))
    else:
        data = z["data"]
    d = dataset_class(data, label=get("label"), weight=get("weight"),
                base_margin=get("base_margin"), qid=get("qid"),
                feature_names=header["feature_names"],
                max_bin=header["max_bin"], page_rows=header["page_rows"],
                feature_types=header.get("feature_types"))
    d.categories = header.get("categories")
    for max_bin in header["cuts"]:
        d._cuts[max_bin] = Cuts(values=z[f"cuts{max_bin}_values"],
                                ptrs=z[f"cuts{max_bin}_ptrs"],
                                min_values=z[f"cuts{max_bin}_min"],
                                categorical=get(f"cuts{max_bin}_categorical"),
                                first_values=get(f"cuts{max_bin}_first"))
    for entry in header["pages"]:
        max_bin = entry["max_bin"]
        d._pages[(max_bin, "cpu")] = [
            Page(words=z[f"pages{max_bin}_{i}"], n_rows=int(shape[0]),
                 n_features=int(shape[1]), bits=int(shape[2]),
                 ell=bool(shape[3]) if len(shape) > 3 else False)
            for i, shape in enumerate(entry["shape"])]
    return d
