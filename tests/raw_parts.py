"""What a DaskDataset holds of its raw rows: a scheduler plugin counting its raw parts
(make_part results) in memory and how often each was computed, and a look into the workers'
memory for Part objects. Counts can be restricted to one dataset's parts (``keys_of``), so that
other tests' data on a shared cluster do not count."""
from collections import Counter

from distributed.diagnostics.plugin import SchedulerPlugin


class RawPartsInMemory(SchedulerPlugin):
    """The raw parts in memory now, the largest number (and bytes) at once, and how many times
    each was computed (read and checked)."""

    def __init__(self):
        self.now, self.peak, self.bytes, self.peak_bytes = set(), 0, {}, 0
        self.reads = Counter()

    @property
    def computed(self) -> int:
        return sum(self.reads.values())

    def transition(self, key, start, finish, *args, **kwargs):
        if not str(key).startswith("make_part"):
            return
        if finish == "memory":
            self.now.add(key)
            self.reads[key] += 1
            ts = self.scheduler.tasks.get(key)
            self.bytes[key] = ts.nbytes if ts is not None and ts.nbytes else 0
        elif start == "memory":
            self.now.discard(key)
            self.bytes.pop(key, None)
        self.peak = max(self.peak, len(self.now))
        self.peak_bytes = max(self.peak_bytes, sum(self.bytes.values()))

    def start(self, scheduler):
        self.scheduler = scheduler

    def held(self, keys) -> int:
        """How many of these parts are in memory now."""
        return len(self.now & set(keys))

    def computed_of(self, keys) -> int:
        """How many times these parts were computed."""
        return sum(self.reads[k] for k in keys)


def watch(client) -> RawPartsInMemory:
    """A new plugin on the (in-process) cluster's scheduler."""
    plugin = RawPartsInMemory()
    scheduler = client.cluster.scheduler
    plugin.start(scheduler)
    scheduler.add_plugin(plugin, name=f"raw-parts-{id(plugin)}")
    return plugin


def keys_of(dataset) -> list[str]:
    """The keys of a DaskDataset's raw parts."""
    return [str(g.key) for g in dataset._graph]


def parts_on_workers(client, keys=None) -> int:
    """Part objects (checked raw rows) in the workers' memory, found by type; only those of
    ``keys`` when given."""
    def count(dask_worker=None, keys=None):
        from dgbdt.dask.parts import Part
        return sum(isinstance(v, Part) and (keys is None or str(k) in keys)
                   for k, v in list(dask_worker.data.items()))
    return sum(client.run(count, keys=None if keys is None else set(keys)).values())
