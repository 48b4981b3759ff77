"""Where a training's pages live: where kernels run up to ``device_memory_budget``, the rest
streamed.

A page is read once per pass over the data (a tree level: partition and histograms; the end of a
tree), always as a whole, so where its words live changes no result: the model is byte-identical
for every budget.

* CPU backend: pages are kept in memory while their total stays within the budget; every
  further page is written to a spill file and memory-mapped read-only (the numba kernels read a
  memory map like any array; the operating system pages it in per level). A spill file is
  unlinked as soon as it is mapped, so nothing is left behind whatever happens to the process;
  the space is freed when the page is.
* CUDA backend: a page set that fits the budget stays on the GPU. A larger one lives in pinned
  host memory (or, when host memory runs short, in spill files) and streams through as many
  device slots of one page as the budget holds (at least two), once per pass
  (dgbdt.data.page_stream).

The budget is bytes (an int) or a fraction of the memory free where training runs (a float).
Unset (None) it is automatic: unlimited on the CPU; on a GPU, the free memory less what the
rows' training state and the histograms will take and a reserve (``auto_budget``), so a page set
too large for the GPU streams instead of failing. With a budget, in-process training cuts the
data into pages of about a quarter (GPU) or half (CPU) of the budget, at least 1 MiB.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np

from ..backends.device import is_device_array
from ..kernels.pages import COLUMNS_SHARE, Page, bits_for

MIN_PAGE_BYTES = 1 << 20
RESERVE_BYTES = 1 << 30        # GPU memory auto_budget leaves for temporaries (sketch, sorts)
HOST_RESERVE = 0.1             # fraction of host memory pinned pages leave free
#: per row on the GPU besides pages, K = 1 (dgbdt.engine.shard): label, weight, margin, g, h 8
#: each, fixed-point gradients 16, row order and its scratch 4 each, the row-order
#: partition's node 4 and direction 1 (dgbdt.backends.cuda_routes)
ROW_STATE_BYTES = 69
STREAM_ON_CPU = False          # tests: stream pages through slots on the CPU too (numpy)


class BudgetWarning(UserWarning):
    """A page larger than device_memory_budget (a partition that cannot be cut) streams whole."""


def free_memory(backend) -> int:
    """Bytes free where the backend computes: GPU memory (with what CuPy's pool holds free),
    or available host memory."""
    if backend.caps.device_memory:
        return backend.free_bytes()
    return host_free_memory()


def host_free_memory() -> int:
    """Available host memory in bytes (MemAvailable where /proc/meminfo says it)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - non-Linux
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1 << 62


def move_page(page: Page, backend) -> Page:
    """The page with its words where the backend computes (a copy only when they are not);
    a streamed page is left where it is."""
    if page.streamed or is_device_array(page.words) == (backend.caps.device_memory):
        return page
    return page.with_words(backend.asarray(page.words))


def budget_bytes(budget, backend, n_rows: int = 0, n_outputs: int = 1,
                 hist_bytes: int = 0) -> int | None:
    """The budget in bytes (None: no limit). Unset on a GPU: ``auto_budget``."""
    if budget is None:
        if not backend.caps.device_memory:
            return None
        return auto_budget(free_memory(backend), n_rows, n_outputs, hist_bytes)
    if isinstance(budget, float):
        return max(1, int(budget * free_memory(backend)))
    return int(budget)


def auto_budget(free: int, n_rows: int, n_outputs: int, hist_bytes: int) -> int:
    """GPU page budget when none is given: ``free - rows * (69 + 24 (K - 1)) - histograms -
    reserve`` (the rows' state of dgbdt.engine.shard: gradients, margins, labels, row order), at least
    one MiB."""
    state = n_rows * (ROW_STATE_BYTES + 24 * (n_outputs - 1))
    return max(MIN_PAGE_BYTES, free - state - hist_bytes - RESERVE_BYTES)


def bound_route_columns(shards, budget, backend, room: int | None = None) -> None:
    """Keep the feature-major copies of in-memory pages that rows are routed from
    (Shard.route_columns: dgbdt.backends.cuda_routes, backends.cpu) within memory: they are a
    second copy of the pages. Within a ``device_memory_budget`` the user gave they are made
    only when the pages fit it twice; with none, on a GPU the backend decides at a shard's
    first tree (cuda_routes.columns_fit), on the CPU they may take COLUMNS_SHARE of ``room``
    (default: the available host memory; a Dask worker passes what its limit leaves)."""
    total = sum(s.page.nbytes for s in shards
                if not s.page.streamed and not isinstance(s.page.words, np.memmap))
    if budget is not None:
        fits = 2 * total <= budget_bytes(budget, backend)
    elif backend.caps.device_memory:
        return
    else:
        fits = total <= COLUMNS_SHARE * (free_memory(backend) if room is None else room)
    if not fits:
        for s in shards:
            s.route_columns = False


def page_rows_for(budget: int | None, n_features: int, bits: int,
                  streaming: bool = False) -> int | None:
    """Rows per page so that a page holds at most half the budget (a quarter when pages
    stream: the budget then holds four device slots), at least MIN_PAGE_BYTES. A page's words
    round up and end with a padding word (dgbdt.kernels.pages): 8 bytes are kept for them, else
    a page a few bytes over the quarter leaves room for three slots, not four."""
    if budget is None:
        return None
    target = max(budget // (4 if streaming else 2) - 8, MIN_PAGE_BYTES)
    return max(1, (target * 8) // max(1, n_features * bits))


def plan_pages(budget, backend, n_rows: int, n_features: int, cuts, max_nodes: int,
               n_outputs: int, page_rows: int | None = None, bits: int | None = None):
    """The PageStore of a training's pages and their row ranges: None when the page set fits
    the budget whole (the caller's own pages), else ranges of ``page_rows_for`` rows (at most
    ``page_rows``). ``n_features`` symbols of ``bits`` bits a row (default: a dense page's;
    sparse rows' ELLPACK pages: dgbdt.data.sparse.planned_layout)."""
    bits = bits_for(cuts.max_bins) if bits is None else int(bits)
    total = packed_bytes(n_rows, n_features, bits)
    store = PageStore(budget_bytes(budget, backend, n_rows, n_outputs,
                                   hist_bytes(cuts, max_nodes)), backend, total=total)
    if store.budget is None or total <= store.budget:
        return store, None
    step = page_rows_for(store.budget, n_features, bits, store.streaming)
    step = min(step, page_rows) if page_rows else step
    step = -(-n_rows // -(-n_rows // step))     # as many pages, of even size (no tiny last one)
    return store, [(a, min(a + step, n_rows)) for a in range(0, n_rows, step)]


def hist_bytes(cuts, max_nodes: int) -> int:
    """GPU memory for a level's histograms: the deepest level's nodes x slots x 16 bytes, for
    the shard's partials, their sum and the split search's copy."""
    return 3 * (max_nodes // 4) * int(cuts.hist_ptrs()[-1]) * 16


TRAINING_FIX = (
    "pass a smaller device_memory_budget (bytes, or a fraction of the free GPU memory) so that "
    "more pages stream from host memory; besides pages every row keeps about 64 bytes of "
    "training state on the GPU (docs/memory.md), so for more rows than that allows train on "
    "several GPUs (dgbdt.dask) or on the CPU (device='cpu').")


@contextlib.contextmanager
def gpu_memory_errors(p: dict, what: str, fix: str = TRAINING_FIX):
    """Turn a GPU out-of-memory error into a MemoryError that says what to change."""
    try:
        yield
    except Exception as e:
        if not is_gpu_oom(e):
            raise
        pages = (f" Pages took device_memory_budget={p['device_memory_budget']!r} (None: "
                 "automatic, the free memory less the rows' state)."
                 if "device_memory_budget" in p else "")
        raise MemoryError(f"the GPU ran out of memory while {what} ({type(e).__name__}: "
                          f"{e}).{pages} Fix: {fix}") from e


def is_gpu_oom(e: BaseException) -> bool:
    """Whether e is CuPy's out-of-memory error, a CUDA allocation failure, or RMM's
    (CuPy allocates through RMM where RAPIDS set it as CuPy's allocator: a MemoryError
    "std::bad_alloc: out_of_memory: ... cudaErrorMemoryAllocation")."""
    name, module = type(e).__name__, type(e).__module__ or ""
    if name == "OutOfMemoryError" and module.startswith("cupy"):
        return True
    if isinstance(e, MemoryError) and "out_of_memory" in str(e) and "CUDA" in str(e):
        return "the GPU ran out of memory while" not in str(e)   # not ours again
    return module.startswith("cupy") and "cudaErrorMemoryAllocation" in str(e)


def packed_bytes(n_rows: int, n_features: int, bits: int) -> int:
    """Bytes of the pages of n_rows rows (the padding words aside)."""
    return (int(n_rows) * int(n_features) * int(bits) + 7) // 8


@dataclass
class PageStore:
    """Places pages for one training: where kernels run within the budget, the rest spilled
    (CPU) or streamed (GPU; ``streaming`` overrides the choice, e.g. to test streaming on the
    CPU). ``total`` is the whole page set's size when known ahead: a set within the budget stays
    whole; a larger one keeps room for two staging buffers when streaming."""

    budget: int | None
    backend: object
    total: int | None = None
    streaming: bool | None = None
    spill_dir: str = field(default_factory=lambda: os.environ.get("DGBDT_SPILL_DIR")
                           or tempfile.gettempdir())
    in_memory_bytes: int = 0
    max_page: int = 0
    host_bytes: int = 0
    host_pages: int = 0
    spilled_bytes: int = 0
    spilled_pages: int = 0

    def __post_init__(self):
        if self.streaming is None:
            self.streaming = self.backend.caps.device_memory or STREAM_ON_CPU

    def place(self, page: Page) -> Page:
        """The page where it will live for the training (see the module doc)."""
        nbytes = page.nbytes
        self.max_page = max(self.max_page, nbytes)
        whole = self.total is None or self.total <= (self.budget or 0)
        if self.budget is None or ((whole or not self.streaming)
                                   and self.in_memory_bytes + nbytes <= self.budget):
            self.in_memory_bytes += nbytes
            return page
        if not self.streaming:
            return self._spill(page)
        if not self.backend.caps.device_memory:           # STREAM_ON_CPU: the host page itself
            words = np.asarray(page.words)
        elif host_free_memory() * (1 - HOST_RESERVE) > nbytes:
            words = pinned_copy(page.words, self.backend)
        else:
            return self._spill(page, streamed=True)
        self.host_bytes += nbytes
        self.host_pages += 1
        return page.with_words(words, streamed=True)

    @property
    def slots(self) -> int:
        """Device slots for streamed pages: as many of the largest page as the budget holds
        (at least two)."""
        if not self.budget or not self.max_page:
            return 2
        return max(2, (self.budget - self.in_memory_bytes) // self.max_page)

    def _spill(self, page: Page, streamed: bool = False) -> Page:
        words = spill(to_host_words(page.words), self.spill_dir)
        self.spilled_bytes += page.nbytes
        self.spilled_pages += 1
        return page.with_words(words, streamed=streamed)

    def stats(self) -> dict[str, int]:
        return {"pages_budget_bytes": -1 if self.budget is None else int(self.budget),
                "pages_in_memory_bytes": self.in_memory_bytes,
                "pages_host_bytes": self.host_bytes, "pages_host": self.host_pages,
                "pages_spilled_bytes": self.spilled_bytes, "pages_spilled": self.spilled_pages}


def to_host_words(words) -> np.ndarray:
    """The words as a numpy array (a device copy when they are on a GPU)."""
    if is_device_array(words):
        import cupy
        return cupy.asnumpy(words)
    return np.asarray(words)


def pinned_copy(words, backend) -> np.ndarray:
    """A copy of the words in pinned (page-locked) host memory, which the GPU copies from
    asynchronously at full link rate; the array keeps its memory alive."""
    cp = backend.xp
    n = int(words.size)
    mem = cp.cuda.alloc_pinned_memory(max(4 * n, 4))
    out = np.frombuffer(mem, np.uint32, n)
    if is_device_array(words):
        with backend.device:
            words.get(out=out)
    else:
        out[:] = words
    return out


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
