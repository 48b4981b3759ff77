"""A scheduler plugin counting a DaskDataset's raw parts (make_part results) in memory, and a
look into the workers' memory for Part objects: what a dataset holds of the raw rows."""
from distributed.diagnostics.plugin import SchedulerPlugin


class RawPartsInMemory(SchedulerPlugin):
    """The raw parts in memory now, the largest number (and bytes) at once, and how many times
    one was computed (read and checked)."""

    def __init__(self):
        self.now, self.peak, self.bytes, self.peak_bytes, self.computed = set(), 0, {}, 0, 0

    def transition(self, key, start, finish, *args, **kwargs):
        if not str(key).startswith("make_part"):
            return
        if finish == "memory":
            self.now.add(key)
            self.computed += 1
            ts = self.scheduler.tasks.get(key)
            self.bytes[key] = ts.nbytes if ts is not None and ts.nbytes else 0
        elif start == "memory":
            self.now.discard(key)
            self.bytes.pop(key, None)
        self.peak = max(self.peak, len(self.now))
        self.peak_bytes = max(self.peak_bytes, sum(self.bytes.values()))

    def start(self, scheduler):
        self.scheduler = scheduler


def watch(client) -> RawPartsInMemory:
    """A new plugin on the (in-process) cluster's scheduler."""
    plugin = RawPartsInMemory()
    scheduler = client.cluster.scheduler
    plugin.start(scheduler)
    scheduler.add_plugin(plugin, name=f"raw-parts-{id(plugin)}")
    return plugin


def parts_on_workers(client) -> int:
    """Part objects (checked raw rows) in the workers' memory, found by type."""
    def count(dask_worker=None):
        from dgbdt.dask.data import Part
        return sum(isinstance(v, Part) for v in list(dask_worker.data.values()))
    return sum(client.run(count).values())
