"""XGBoost's global configuration (``xgboost.set_config``, ``get_config``,
``config_context``) for code written for XGBoost.

The settings are per thread, as XGBoost's are (a thread starts from the defaults; a
``config_context`` restores the values it found on exit). XGBoost's keys and what dgbdt
does with each:

* ``verbosity`` (0 to 3, default 1): recorded only. dgbdt prints no log of its own; its
  warnings go through Python's ``warnings`` module (filter them there) and a training's
  progress through ``verbose_eval`` / the ``verbosity`` training parameter.
* ``use_rmm`` (default False): recorded only. dgbdt's GPU memory comes from CuPy's memory
  pool; to draw it from RMM, set CuPy's allocator
  (``cupy.cuda.set_allocator(rmm.allocators.cupy.rmm_cupy_allocator)``).
* ``use_cuda_async_pool`` (default False): recorded only, as ``use_rmm``.
* ``nthread`` (default 0: all cores): recorded only. dgbdt's CPU kernels run numba's
  threads; a training's ``nthread`` parameter (or ``NUMBA_NUM_THREADS``) sets them.

An unknown key, or a verbosity outside 0..3, raises XGBoostError (a ValueError).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

from ._common import XGBoostError

_DEFAULTS = {"nthread": 0, "use_cuda_async_pool": False, "use_rmm": False, "verbosity": 1}
_local = threading.local()


def _state() -> dict:
    state = getattr(_local, "config", None)
    if state is None:
        state = _local.config = dict(_DEFAULTS)
    return state


def _checked(key: str, value) -> Any:
    if key not in _DEFAULTS:
        raise XGBoostError(f"Unknown global parameters: {{ {key} }}; XGBoost's global "
                           f"configuration has {sorted(_DEFAULTS)}")
    if key in ("use_rmm", "use_cuda_async_pool"):
        return bool(value)
    try:
        value = int(value)
    except (TypeError, ValueError):
        raise XGBoostError(f"global parameter {key} must be an integer; got {value!r}") \
            from None
    if key == "verbosity" and not 0 <= value <= 3:
        raise XGBoostError(f"value {value} for Parameter verbosity exceed bound [0,3]")
    if key == "nthread" and value < 0:
        raise XGBoostError(f"global parameter nthread must be >= 0 (0: all cores); got {value}")
    return value


def set_config(**new_config: Any) -> None:
    """Set global configuration values of this thread (see the module doc); a value None
    leaves its key as it is."""
    checked = {k: _checked(k, v) for k, v in new_config.items() if v is not None}
    _state().update(checked)


def get_config() -> dict[str, Any]:
    """This thread's global configuration: a new dict of every key and its value."""
    return dict(_state())


@contextmanager
def config_context(**new_config: Any) -> Iterator[None]:
    """Within the ``with`` block, the given values (set_config's); on leaving it, the
    values from before, even when the block raised."""
    old = get_config()
    set_config(**new_config)
    try:
        yield
    finally:
        _state().clear()
        _state().update(old)


__all__ = ["config_context", "get_config", "set_config"]
