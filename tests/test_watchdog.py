"""The collective watchdog (dgbdt.dask.collective.Watchdog): a thread that ends a communicator
from outside when the training stops, even while the rank's own thread is stuck in a call that
only the abort can end (as a rank blocked behind an all-reduce whose peer is gone)."""
import threading
import time

import pytest

from dgbdt.dask.collective import ABORT_POLL, CollectiveError, Watchdog


class Fake:
    """A communicator whose ``stuck`` call returns only once it was aborted."""

    def __init__(self):
        self.reason = None
        self.aborted = threading.Event()
        self.log: list[str] = []

    def check(self):
        return self.reason

    def abort(self):
        self.log.append("abort")
        self.aborted.set()

    def stuck(self):
        self.log.append("stuck call")
        assert self.aborted.wait(10), "the watchdog never aborted"
        self.log.append("stuck call returned")

    def short(self, seconds):
        self.log.append("short call")
        time.sleep(seconds)
        self.log.append("short call returned")
        return 7


def test_a_stuck_call_is_ended_by_the_abort_and_the_reason_reaches_the_rank():
    c = Fake()
    dog = Watchdog("rank 1", c.check, c.abort)
    out = {}

    def rank():
        t = time.perf_counter()
        dog.call(c.stuck)
        out["seconds"] = time.perf_counter() - t
        try:
            dog.call(c.short, 0)
        except CollectiveError as e:
            out["error"] = str(e)

    th = threading.Thread(target=rank)
    th.start()
    time.sleep(0.3)
    c.reason = "rank 0 failed: ValueError: boom"
    th.join(10)
    assert not th.is_alive()
    # the lock was held by the stuck call: the watchdog waits a second, then aborts anyway
    assert 1.0 <= out["seconds"] < 1.0 + 4 * ABORT_POLL + 1.0
    assert out["error"] == ("rank 1: the collective was stopped because rank 0 failed: "
                            "ValueError: boom")
    assert c.log == ["stuck call", "abort", "stuck call returned"]
    with pytest.raises(CollectiveError, match="rank 0 failed"):
        dog.check()                   # a wait that ended because of the abort sees it
    dog.end(c.abort)                  # the rank's own abort afterwards: not a second one
    assert c.log.count("abort") == 1


def test_an_abort_waits_for_a_call_in_progress_to_return():
    c = Fake()
    dog = Watchdog("rank 0", c.check, c.abort)
    c.reason = "the client stopped the training"
    assert dog.call(c.short, 0.6) == 7        # the watchdog's look comes during the call
    assert c.aborted.wait(5)
    assert c.log == ["short call", "short call returned", "abort"]
    with pytest.raises(CollectiveError, match="the client stopped the training"):
        dog.call(c.short, 0)


def test_a_quiet_training_ends_with_one_close_and_no_abort():
    c = Fake()
    closed = []
    dog = Watchdog("rank 0", c.check, c.abort)
    for _ in range(3):
        assert dog.call(c.short, 0.1) == 7
    dog.end(lambda: closed.append(1))
    dog.end(lambda: closed.append(2))
    assert closed == [1] and "abort" not in c.log
    dog.check()
    with pytest.raises(CollectiveError, match="communicator was closed"):
        dog.call(c.short, 0)


def test_a_failing_check_stops_the_training():
    c = Fake()

    def check():
        raise OSError("scheduler gone")
    dog = Watchdog("rank 2", check, c.abort)
    assert c.aborted.wait(5)
    with pytest.raises(CollectiveError, match="could not be read.*scheduler gone"):
        dog.check()
