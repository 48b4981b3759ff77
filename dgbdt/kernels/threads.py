"""CPU kernels' threads sleep soon after a launch instead of spinning.

numba runs the parallel kernels on its OpenMP pool (GNU libgomp with numba's wheels on
Linux). libgomp's default lets a thread that finished its share spin for 300,000 rounds before
it sleeps, so that the next launch finds it awake. A round of boosting is many short launches
with host work between them, so the pool spins most of the time; on a machine busy with
anything else (other processes, Dask's other workers) the spinning threads take the cores the
work needs: small fits run two orders of magnitude slower there (docs/benchmarks.md,
"CPU threads").

``GOMP_SPINCOUNT=1000`` keeps a short spin and then sleeps: a little slower on an idle
machine, and no slowdown from a busy one. A passive wait (``OMP_WAIT_POLICY=PASSIVE``, no spin
at all) was as good busy and 4x slower idle. OpenMP reads these when its runtime starts, so
the setting is made here, at dgbdt's import, before numba starts the pool, and only where
the user set neither variable
(``OMP_WAIT_POLICY=ACTIVE`` or any ``GOMP_SPINCOUNT`` choose otherwise). An OpenMP runtime
that another library started earlier in the process keeps its own setting: ``spin_policy()``
says what applies. Intel's and LLVM's runtimes (KMP_BLOCKTIME) are left alone: not measured.
"""
from __future__ import annotations

import os

__all__ = ["SPINCOUNT", "kernel_threads", "prefer_short_spin", "serial_below", "spin_policy"]

SPINCOUNT = "1000"
_USER = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def _openmp_loaded() -> bool:
    """Whether an OpenMP runtime is already mapped into this process (Linux)."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return False
    return any(lib in maps for lib in ("libgomp", "libiomp", "libomp."))


_STARTED_BEFORE = _openmp_loaded()
_CHOSEN_BY_USER = any(v in os.environ for v in _USER)


def prefer_short_spin() -> None:
    """GOMP_SPINCOUNT=1000 unless the user chose a wait policy (module docstring)."""
    if not any(v in os.environ for v in _USER):
        os.environ["GOMP_SPINCOUNT"] = SPINCOUNT


def spin_policy() -> str:
    """What dgbdt's CPU kernels wait under: "short-spin" (dgbdt's setting), "user" (the
    user's OMP_WAIT_POLICY or GOMP_SPINCOUNT), or "unknown" (an OpenMP runtime had started
    before dgbdt was imported and read the environment then)."""
    if _STARTED_BEFORE:
        return "unknown"
    return "user" if _CHOSEN_BY_USER else "short-spin"


def serial_below(work: int, grain: int) -> int:
    """The threads for a kernel call of ``work`` units: 1 below ``grain`` units, else
    numba's. A parallel region wakes the pool's sleeping threads and waits for the last to
    finish: tens of microseconds on a 2-core machine (more when it is busy), the time of
    ``grain`` units of work or more, so small work (a small data set's) runs on the calling
    thread alone. The kernels' results do not depend on their
    thread count (integer sums, stable partitions, ties broken in a fixed order)."""
    return 1 if work < grain else numba_threads()


def numba_threads() -> int:
    """numba's thread count for kernels called from this thread."""
    import numba
    return numba.get_num_threads()


class kernel_threads:
    """The kernels called inside run on ``n`` of numba's threads (n below the current
    count: one thread is a region that wakes nobody); restored after. ``with`` gives the
    count the kernels run on. A class, not a generator context manager: a boosting round
    enters one around each of its few dozen kernel calls (issue 47)."""

    __slots__ = ("n", "previous")

    def __init__(self, n: int):
        self.n = n
        self.previous = None

    def __enter__(self) -> int:
        import numba
        previous = self.previous = numba.get_num_threads()
        if self.n >= previous:
            return previous
        numba.set_num_threads(self.n)
        return self.n

    def __exit__(self, *exc) -> bool:
        if self.n < self.previous:
            import numba
            numba.set_num_threads(self.previous)
        return False


prefer_short_spin()
