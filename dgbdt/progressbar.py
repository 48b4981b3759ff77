"""The training's progress bar: rounds done of the total, time left, the latest eval metric.

Drawn by tqdm (an optional dependency: ``pip install tqdm``, or the ``progress`` extra) on
standard error, where the user is: in the process that called ``dgbdt.train`` or
``dgbdt.dask.train``. When the boosting loop runs there (in-process, Dask's graph mode) it
updates the bar itself; when it runs in a Dask task (the one-task mode, rank 0 of the
collective modes) each round's state travels to the client with the evaluation log lines
(dgbdt.callback.log_to_client) and the client updates the bar.

``progress_bar``: True shows it, False not, None (the default) decides: shown when the user
watches (a notebook, or standard error is a terminal), ``verbosity`` is above 0 and tqdm is
installed, and then only once a training has run for ``AUTO_DELAY`` seconds (short ones stay
quiet). Evaluation lines printed while a bar is shown go above it (``tqdm.write``).
"""
from __future__ import annotations

import contextlib
import sys
import threading

AUTO_DELAY = 2.0       # seconds before an automatic bar appears

_local = threading.local()


def _watched() -> bool:
    """A person is watching: an IPython kernel (notebook), or a terminal on stderr."""
    if "ipykernel" in sys.modules:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _tqdm():
    """tqdm's bar class: the notebook widget in a notebook with ipywidgets, else the text bar
    (tqdm.auto would warn "IProgress not found" in a notebook without ipywidgets)."""
    import importlib.util
    if importlib.util.find_spec("tqdm") is None:
        return None
    if "ipykernel" in sys.modules and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.notebook import tqdm as notebook_bar
        return notebook_bar
    from tqdm.std import tqdm as text_bar
    return text_bar


def wanted(progress_bar, verbosity: int) -> float | None:
    """The delay before the bar appears, or None for no bar (see the module docstring)."""
    if progress_bar is not None and not isinstance(progress_bar, bool):
        raise TypeError(f"progress_bar must be True, False or None (automatic); got "
                        f"{progress_bar!r}")
    if progress_bar is False:
        return None
    if progress_bar is True:
        if _tqdm() is None:
            raise ImportError("progress_bar=True needs tqdm: pip install tqdm (or "
                              "pip install 'dgbdt[progress]')")
        return 0.0
    if verbosity <= 0 or not _watched() or _tqdm() is None:
        return None
    return AUTO_DELAY


class RoundBar:
    """A tqdm bar over the rounds of one training; ``update`` and ``write`` may come from
    any thread (the client's event loop, for Dask tasks)."""

    def __init__(self, total: int, delay: float, desc: str = "dgbdt"):
        tqdm = _tqdm()
        self._bar = tqdm(total=int(total), desc=desc, unit="round", delay=delay,
                         dynamic_ncols=True, leave=True)
        self._lock = threading.Lock()

    def update(self, done: int, postfix: str | None = None) -> None:
        """``done`` rounds of this training are complete (absolute: a resumed training
        continues where it was)."""
        with self._lock:
            if postfix:
                self._bar.set_postfix_str(postfix, refresh=False)
            self._bar.update(max(0, int(done) - self._bar.n))

    def write(self, line: str) -> None:
        with self._lock:
            self._bar.write(line)

    def close(self) -> None:
        with self._lock:
            self._bar.close()


def open_bar(progress_bar, verbosity: int, total: int, desc: str = "dgbdt"):
    """A RoundBar, or None when none is wanted."""
    delay = wanted(progress_bar, verbosity)
    return None if delay is None else RoundBar(total, delay, desc)


@contextlib.contextmanager
def showing(bar):
    """Make ``bar`` (a RoundBar or None) the one this thread's rounds update; close it at the
    end."""
    previous = getattr(_local, "bar", None)
    _local.bar = bar
    try:
        yield bar
    finally:
        _local.bar = previous
        if bar is not None:
            bar.close()


def current():
    """This thread's bar (None: none shown here)."""
    return getattr(_local, "bar", None)


def postfix(scores) -> str | None:
    """The bar's note from a round's scores [(set, metric, value)]: the last one, which early
    stopping watches."""
    if not scores:
        return None
    name, metric, value = scores[-1]
    return f"{name}-{metric}={value:.5f}"
