"""Draw graph mode's task graph of one round (one PNG), recorded from the real code.

    python benchmarks/plot_graph_mode.py docs/graph-mode.png [--workers 3] [--depth 3]

DaskSeam.grow_round (dgbdt/dask/graph.py) submits a round to a recording client instead of a
cluster: every task it would submit, with the keys of the futures it takes, becomes a node and
its edges. Columns are task hops, rows are workers. Needs matplotlib (not a dependency of
dgbdt).
"""
from __future__ import annotations

import argparse
from types import SimpleNamespace


class _Future:
    def __init__(self, key: str):
        self.key = key


class _Recorder:
    """Takes the client's place: records submit(fn, *args, key=...) and its dependencies."""

    def __init__(self):
        self.tasks: dict[str, tuple[str, list[str]]] = {}

    def submit(self, fn, *args, key=None, **kw):
        deps = [a.key for a in args if isinstance(a, _Future)]
        self.tasks[key] = (fn.__name__, deps)
        return _Future(key)


def record(workers: int, depth: int, objective=None, weighted: bool = False) -> dict:
    """The tasks of one round: key -> (function name, keys it takes). ``objective``: the
    round's (default binary:logistic's stand-in); ``weighted``: whether rows have weights."""
    from dgbdt.dask.graph import DaskSeam
    rec = _Recorder()
    units = {f"w{i}": _Future(f"unit-w{i}") for i in range(workers)}
    seam = DaskSeam(rec, units, n_rows=1000, fan_in=8, nthread=1, weighted=weighted)
    seam.token = "x"
    spec = SimpleNamespace(sampling=None, max_requests=lambda: depth, parallel=1,
                           approx_bins=0, targets=None, draw=lambda epoch, j: epoch)
    spec.forest_trees = lambda: spec
    seam.grow_round(objective or SimpleNamespace(name="binary:logistic"), 1, spec=spec,
                    timers={})
    return rec.tasks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--depth", type=int, default=3)
    a = ap.parse_args()
    tasks = record(a.workers, a.depth)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hop: dict[str, int] = {}

    def column(key: str) -> int:     # the task's hop: one more than its latest dependency
        if key not in hop:
            deps = [d for d in tasks.get(key, ("", []))[1] if d in tasks]
            hop[key] = 1 + max((column(d) for d in deps), default=-1)
        return hop[key]

    def row(key: str) -> int:     # a worker's row; the tree (from worker 0's finish) on row 0
        return int(key.split("-w")[-1].split("-")[0]) if "-w" in key else 0

    pos = {k: (column(k), -row(k)) for k in tasks}
    width = 2.0 * (max(x for x, _ in pos.values()) + 1)
    fig, ax = plt.subplots(figsize=(width, 0.9 * a.workers + 0.8))
    for key, (name, deps) in tasks.items():
        x, y = pos[key]
        for d in deps:
            if d in pos:
                ax.annotate("", xy=(x - 0.28, y), xytext=(pos[d][0] + 0.28, pos[d][1]),
                            arrowprops=dict(arrowstyle="->", color="0.6", lw=0.8))
        label = key.rsplit("-x", 1)[0].replace("dgbdt-", "")
        color = {"first_gradients": "#c6dbef", "_level": "#fdd0a2", "_finish": "#c7e9c0",
                 "_tree_of": "#dadaeb"}.get(name, "white")
        ax.text(x, y, label, ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round", fc=color, ec="0.3"))
    ax.set_xlim(-0.6, max(x for x, _ in pos.values()) + 0.6)
    ax.set_ylim(-a.workers + 0.4, 0.6)
    ax.axis("off")
    ax.set_title(f"graph mode: one round, {a.workers} workers, depth {a.depth} "
                 "(columns: task hops; arrows: inputs)", fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(f"wrote {a.out}: {len(tasks)} tasks, {max(hop.values()) + 1} hops")


if __name__ == "__main__":
    main()
