"""Category columns of Dask frames: one category order for every partitioning.

A categorical feature's value is a code that indexes its column's category values
(dgbdt.data.categorical). A Dask frame's partitions each carry their own category dtype, so
the same code can mean other values in two partitions; a DaskDataset re-codes every partition
by value to one order for the whole dataset, which the model keeps:

* **Known categories** (a pandas-backed frame whose dtype lists them: ``ddf.categorize()``,
  ``astype(pd.CategoricalDtype(categories))``): that order, read from the frame's metadata
  before anything is computed.
* **Gathered categories**: a pandas column whose categories are unknown
  (``ddf[c].astype("category")`` leaves each partition its own), and every dask_cudf category
  column (a dask_cudf frame's metadata does not reliably list its categories). Each
  partition's own category values are read in the pass that counts the rows (no extra pass
  over the data), and the dataset's order is their **sorted union**: it depends on which
  values occur, never on which partition holds them, so the codes, the cuts and the model are
  the same bytes for any partitioning and worker count. The partitions are then re-coded to
  it where they live (on the GPU for cuDF partitions).

Sorted means by value within one kind (numbers before strings when a column mixes them).
An in-process Dataset keeps a frame's own category order, so an in-process model of a frame
with unsorted categories can differ from the Dask model of that frame (its trees split the
same rows; their category codes, and a tie between two splits, may differ).
"""
from __future__ import annotations

import numpy as np

from ..data import categorical as C


def _is_category(dtype) -> bool:
    """A pandas or cuDF category dtype."""
    return C.is_category(dtype) or str(dtype) == "category"


def frame_categories(data, names, on_gpu: bool) -> tuple[list | None, list[int]]:
    """(the dataset's category values per column so far, None where not known yet; the
    columns whose categories the partitions' dtypes give: gathered in the first pass).
    ``data``: a dask DataFrame (pandas- or cuDF-backed)."""
    known, gather = [], []
    for f, (name, col) in enumerate(zip(names, data.columns)):
        dtype = data.dtypes[col]
        if not _is_category(dtype):
            known.append(None)
        elif on_gpu or not data[col].cat.known:
            known.append(None)
            gather.append(f)
        else:
            known.append(C.category_values(data._meta[col].cat.categories, name))
    if not gather and all(k is None for k in known):
        return None, []
    return known, gather


def categorical_block(X, types, categories):
    """(a partition with categorical features as float32 codes (checked), the category values
    its codes index per feature, or None). Features whose dataset categories are known
    (``categories[f]``) are re-coded to them; the others keep the partition's own codes
    (gathered categories: ``recode_part`` maps them once the dataset's order is known)."""
    from ..data.input import as_features
    mask = C.mask_of(types)
    X, names, _, have = as_features(X, feature_types=types, enable_categorical=True,
                                    allow_empty=True)
    X = C.recode(X, mask, have, categories, names)
    C.check_codes(X, mask, names)
    if have is None:
        return X, categories
    meaning = [c if c is not None else h
               for c, h in zip(categories or [None] * len(have), have)]
    return X, (meaning if any(m is not None for m in meaning) else None)


def part_categories(part, gather: list[int]) -> list | None:
    """The category values of a part's gathered columns (what its codes index)."""
    if not gather:
        return None
    cats = part.categories or [None] * part.X.shape[1]
    return [list(cats[f]) if cats[f] is not None else [] for f in gather]


def _order(v):
    """A sort key over one column's category values: numbers before strings."""
    return (isinstance(v, str), v)


def merge_categories(known: list, gather: list[int], per_part: list, names) -> list:
    """The dataset's category values: ``known`` with each gathered column set to the sorted
    union of the partitions' values (``per_part``: part_categories of every part)."""
    out = list(known)
    for i, f in enumerate(gather):
        union = {v for cats in per_part if cats is not None for v in cats[i]}
        try:
            out[f] = sorted(union, key=_order)
        except TypeError:   # pragma: no cover - category_values gives str/int/float/bool only
            raise TypeError(f"column '{names[f]}': its category values cannot be ordered "
                            "(mixed kinds); make them one kind, e.g. astype(str)") from None
    return out


def recode_part(part, categories: list):
    """The part with its codes re-coded to the dataset's category values (by value, where
    the part is: host or device)."""
    from dataclasses import replace
    if part.categories == categories:
        return part
    mask = np.array([c is not None for c in categories], dtype=bool)
    X = C.recode(part.X, mask, part.categories, categories)
    return replace(part, X=X, categories=categories)
