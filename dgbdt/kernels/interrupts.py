"""Ctrl-C inside a compiled kernel reaches the caller as KeyboardInterrupt.

CPython runs a signal handler between bytecodes; when it raises (Ctrl-C's KeyboardInterrupt)
while a numba dispatcher is returning, CPython sees a result *and* a pending exception and
raises ``SystemError: CPUDispatcher(...) returned a result with an exception set`` instead,
with the KeyboardInterrupt as its cause (one SystemError for each compiled frame it crossed:
numba calls back into Python to unpickle a kernel's constants). ``keyboard_interrupts()`` raises the interrupt
itself, which is what the user pressed and what a notebook and ``except KeyboardInterrupt``
expect; any other SystemError passes unchanged.
"""
from __future__ import annotations

import contextlib

__all__ = ["keyboard_interrupts"]


@contextlib.contextmanager
def keyboard_interrupts():
    try:
        yield
    except SystemError as e:
        cause = e.__cause__
        while isinstance(cause, SystemError):     # one a compiled frame it crossed
            cause = cause.__cause__
        if isinstance(cause, KeyboardInterrupt):
            raise KeyboardInterrupt(*cause.args) from None
        raise
