"""Where a training's pages live: in memory up to ``device_memory_budget``, the rest spilled.

A page is read once per tree level (partition and histograms), always as a whole, so where its
words live does not change any result: the model is byte-identical for every budget.

* CPU backend: pages are kept in memory while their total stays within the budget; every
  further page is written to a spill file and memory-mapped read-only (the numba kernels read a
  memory map like any array; the operating system pages it in per level). A spill file is
  unlinked as soon as it is mapped, so nothing is left behind whatever happens to the process;
  the space is freed when the page is.
* CUDA backend: pages must fit the budget for now (streaming pages through the GPU from host
  memory is not built yet): a page set larger than the budget is refused with an error naming
  the parameter, before any GPU memory is used.

The budget is bytes (an int) or a fraction of the memory free where training runs (a float).
With a budget, in-process training cuts the data into pages of about half the budget (at
least 1 MiB), so that it can keep some in memory and spill the rest one page at a time.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

import numpy as np

from ..backend import is_device_array
from .pages import Page

MIN_PAGE_BYTES = 1 << 20


def free_memory(backend) -> int:
    """Bytes free where the backend computes: GPU memory, or available host memory."""
    if backend.name == "cuda":
        with backend.device:
            return int(backend.xp.cuda.runtime.memGetInfo()[0])
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1 << 62


def move_page(page: Page, backend) -> Page:
    """The page with its words where the backend computes (a copy only when they are not)."""
    if is_device_array(page.words) == (backend.name == "cuda"):
        return page
    return Page(words=backend.asarray(page.words), n_rows=page.n_rows,
                n_features=page.n_features, bits=page.bits)


def budget_bytes(budget, backend) -> int | None:
    """The budget in bytes (None: no limit)."""
    if budget is None:
        return None
    if isinstance(budget, float):
        return max(1, int(budget * free_memory(backend)))
    return int(budget)


def page_rows_for(budget: int | None, n_features: int, bits: int) -> int | None:
    """Rows per page so that a page holds about half the budget (>= MIN_PAGE_BYTES)."""
    if budget is None:
        return None
    target = max(budget // 2, MIN_PAGE_BYTES)
    return max(1, (target * 8) // max(1, n_features * bits))


@dataclass
class PageStore:
    """Places pages for one training: in memory within the budget, spilled beyond it."""

    budget: int | None
    backend: object
    spill_dir: str = field(default_factory=lambda: os.environ.get("DGBDT_SPILL_DIR")
                           or tempfile.gettempdir())
    in_memory_bytes: int = 0
    spilled_bytes: int = 0
    spilled_pages: int = 0

    def place(self, page: Page) -> Page:
        """The page where it will live for the training (see the module doc)."""
        nbytes = page.nbytes
        if self.budget is None or self.in_memory_bytes + nbytes <= self.budget:
            self.in_memory_bytes += nbytes
            return page
        if self.backend.name == "cuda":
            raise MemoryError(
                f"the bit-packed pages need more than device_memory_budget={self.budget} bytes "
                f"of GPU memory ({self.in_memory_bytes + nbytes} bytes so far), and streaming "
                "pages through the GPU is not implemented yet. Fix: leave "
                "device_memory_budget unset (pages are then limited by the GPU's memory), "
                "raise it, or train on the CPU (device='cpu') where pages spill to files.")
        words = spill(np.asarray(page.words), self.spill_dir)
        self.spilled_bytes += nbytes
        self.spilled_pages += 1
        return Page(words=words, n_rows=page.n_rows, n_features=page.n_features,
                    bits=page.bits)

    def stats(self) -> dict[str, int]:
        return {"pages_in_memory_bytes": self.in_memory_bytes,
                "pages_spilled_bytes": self.spilled_bytes,
                "pages_spilled": self.spilled_pages}


def spill(words: np.ndarray, directory: str) -> np.ndarray:
    """A read-only memory map of a copy of ``words`` in a file of ``directory`` (unlinked)."""
    os.makedirs(directory, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="dgbdt-page-", suffix=".u32", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(np.ascontiguousarray(words).tobytes())
        mapped = np.memmap(path, dtype=words.dtype, mode="r", shape=words.shape)
    finally:
        os.unlink(path)
    return mapped
