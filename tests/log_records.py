"""What a block of code logs, for tests that check what dgbdt says (the developers' suite runs
with pytest's log capture off: ``-p no:logging``)."""
import contextlib
import logging


@contextlib.contextmanager
def logged(name: str = "dgbdt.dask", level: int = logging.INFO):
    """Yields a list that receives the messages logged to ``name`` at ``level`` or above
    inside the block (the logger's level lowered to ``level`` meanwhile, where it was higher)."""
    got: list[str] = []
    handler = logging.Handler(level)
    handler.emit = lambda record: got.append(record.getMessage())
    log = logging.getLogger(name)
    before = log.level
    log.addHandler(handler)
    if not log.isEnabledFor(level):
        log.setLevel(level)
    try:
        yield got
    finally:
        log.removeHandler(handler)
        log.setLevel(before)
