"""A Dask classifier's classes found in the same graph as its datasets.

A classifier needs the sorted distinct labels of its training rows twice: to encode every
label as a class index (training and eval sets alike), and to pick its objective (binary or
multi-class) before training. Computed first, on their own, they cost a round trip in which
the workers idle (the client takes the classes, then submits the datasets) and a read of the
label column of their own (a parquet read that the datasets then repeat; measured in
docs/benchmarks.md, "An eval set's round": "The classes found with the datasets"). Here the
classes are a task over the training partitions' distinct labels
(dgbdt.data.labels.part_distinct), and each partition's encoding depends on it, so one call
computes both with the datasets (DaskDataset.together), from the same label partitions as the
features; the client reads the classes after the partitions are checked.
"""
from __future__ import annotations

import numpy as np

from ..data.labels import encode_partition, merged_distinct, part_distinct

__all__ = ["ClassLabels"]


class ClassLabels:
    """The classes of a fit's training labels (``classes``: a dask Delayed; ``future``: its
    future once DaskDataset.together computes it) and the encoding of label partitions."""

    def __init__(self):
        self.classes = None
        self.future = None

    def encoded(self, blocks: list, fit: bool) -> list:
        """Delayed class indices of delayed label partitions (Series); ``fit``: these are the
        training labels, whose distinct values are the classes (made first)."""
        from dask import delayed
        if fit:
            found = [delayed(part_distinct, pure=True)(b) for b in blocks]
            self.classes = delayed(merged_distinct, pure=True)(*found)
        elif self.classes is None:
            raise RuntimeError("the training labels are encoded first: they define the classes")
        encode = delayed(encode_partition, pure=True)
        return [encode(b, self.classes) for b in blocks]

    def value(self) -> np.ndarray:
        """The sorted distinct training labels (a host array), once computed."""
        if self.future is None:
            raise RuntimeError("the classes are computed with the datasets "
                               "(DaskDataset.together)")
        return np.asarray(self.future.result())
