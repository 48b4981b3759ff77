"""Stop means stop (issue 44): what an interrupt, a dead client and a failing callback leave on
the cluster. Cancelling a future cannot stop a running task: before, the abandoned ranks
(collective mode), the one training task (task mode) or the rounds submitted ahead (graph
mode) went on training, wrote checkpoints, and the next fit waited for them (36 s, 17 s and
10 s here; minutes on the issue's data). Now a training's tasks ask whether the client still
wants them (dgbdt.dask.stop) every round and every collective, and graph mode submits at most
a few rounds ahead.

A worker SIGKILLed at a random round of a training (a callback kills it), in each mode, gives
the undisturbed model's bytes (dgbdt.dask.recovery; tests/test_recovery.py kills at chosen
rounds). It found a hang: graph mode with callbacks fetched each round's trees with a plain
result(), which waits for ever on a dead worker's tree.

Each case runs in its own interpreter: a SIGALRM handler raises the interrupt in the main
thread, as a notebook's button does, on a process cluster of one thread a worker (a task
still running would hold the only thread the next training's tasks can use). The handler
fires again every second until the interrupt lands: Python drops a KeyboardInterrupt raised
inside a finalizer or a gc callback (distributed has both), as a notebook user who presses
the button twice knows. The random delays come from a seed, printed on failure.
"""
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("distributed")
pytestmark = [pytest.mark.slow, pytest.mark.dask]   # process clusters, interrupted trainings

COMMON = textwrap.dedent('''
    import glob, os, random, signal, sys, time
    import numpy as np
    import dask.array as da
    from distributed import Client, LocalCluster
    from dgbdt import dask as dgd

    def cluster(mode):
        """Worker processes of one thread (one worker for the one-task mode): a task still
        running holds the only thread the next training's tasks can use."""
        return LocalCluster(n_workers=1 if mode == "task" else 2, threads_per_worker=1,
                            processes=True, dashboard_address=None)

    def data(client):
        rng = np.random.default_rng(0)
        X = rng.standard_normal((40_000, 10)).astype(np.float32)
        y = (X[:, 0] + 0.1 * rng.standard_normal(40_000) > 0).astype(np.float32)
        return dgd.DaskDataset(client, da.from_array(X, chunks=(10_000, 10)),
                               da.from_array(y, chunks=10_000))

    def written(folder):
        """Each file's mtime; a checkpoint's temporary file may be renamed between the glob
        and its stat (the training is still writing), so a file that went is left out."""
        out = {}
        for f in glob.glob(os.path.join(folder, "*")):
            try:
                out[f] = os.stat(f).st_mtime_ns
            except FileNotFoundError:
                pass
        return out

    def interrupt(*_):
        raise KeyboardInterrupt

    def running(dask_worker):
        # the worker's own view: a task the scheduler forgot (cancelled) may still run
        return len(dask_worker.state.executing) + len(dask_worker.state.long_running)

    def idle(client, seconds):
        """True once no task runs on any worker (within ``seconds``)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if not any(client.run(running).values()):
                return True
            time.sleep(0.05)
        return False
''')

INTERRUPTS = COMMON + textwrap.dedent('''
    mode, seed, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    P = {"max_depth": 4}
    with cluster(mode) as c, Client(c) as client:
        d = data(client)
        ref = dgd.train(client, P, d, 5, mode=mode)["booster"].save_raw()   # compiles too
        signal.signal(signal.SIGALRM, interrupt)
        for k in range(2):
            folder = os.path.join(tmp, f"ckpt{k}")
            delay = rng.uniform(1.0, 3.0)
            signal.setitimer(signal.ITIMER_REAL, delay, 1.0)
            t = time.monotonic()
            try:        # far more rounds than the test could wait for
                dgd.train(client, {"max_depth": 8}, d, 1_000_000, mode=mode,
                          checkpoint_dir=folder)
                print("NOT INTERRUPTED")
                sys.exit(1)
            except KeyboardInterrupt:
                signal.setitimer(signal.ITIMER_REAL, 0)
            back = time.monotonic() - t - delay
            t = time.monotonic()
            stopped = idle(client, 30)
            stop_s = time.monotonic() - t
            files = written(folder)
            t = time.monotonic()
            out = dgd.train(client, P, d, 5, mode=mode)
            next_s = time.monotonic() - t
            time.sleep(0.5)
            same = out["booster"].save_raw() == ref
            print(f"CASE delay={delay:.2f} back={back:.2f} stopped={stopped} "
                  f"stop_s={stop_s:.2f} next_s={next_s:.2f} mode={out['mode']} same={same} "
                  f"checkpoints_after={written(folder) != files}", flush=True)
''')


def _cases(out: str) -> list[dict]:
    rows = []
    for line in out.splitlines():
        if line.startswith("CASE "):
            rows.append(dict(kv.split("=", 1) for kv in line[5:].split()))
    return rows


@pytest.mark.parametrize("mode", ["collective", "task", "graph"])
def test_an_interrupted_training_stops_on_the_workers_too(mode, tmp_path):
    seed = int.from_bytes(os.urandom(2), "little")
    r = subprocess.run([sys.executable, "-c", INTERRUPTS, mode, str(seed), str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    where = f"seed {seed}\n{r.stdout}\n{r.stderr[-3000:]}"
    assert r.returncode == 0, where
    rows = _cases(r.stdout)
    assert len(rows) == 2, where
    for row in rows:
        assert row["mode"] == mode, where
        # the interrupt reaches the caller at once (the handler fires every second)
        assert float(row["back"]) < 5, where
        # every task of the abandoned training ends within 2 s (a round here takes ~50 ms)
        assert row["stopped"] == "True" and float(row["stop_s"]) < 2, where
        # the cluster is free: a 5-round training of 40k rows takes well under a second
        # there; an abandoned training would hold the workers' only thread
        assert float(row["next_s"]) < 10, where
        assert row["same"] == "True", where            # and it is the same model
        assert row["checkpoints_after"] == "False", where


CLIENT_DIES = COMMON + textwrap.dedent('''
    import subprocess
    mode, tmp = sys.argv[1], sys.argv[2]
    child = """
    import sys
    from distributed import Client
    from dgbdt import dask as dgd
    exec(sys.argv[3])
    client = Client(sys.argv[1])
    d = data(client)
    print("TRAINING", flush=True)
    dgd.train(client, {"max_depth": 8}, d, 1_000_000, mode=sys.argv[2], checkpoint_dir=sys.argv[4])
    """
    helpers = open(sys.argv[3]).read()
    with cluster(mode) as c, Client(c) as client:
        folder = os.path.join(tmp, "ckpt")
        p = subprocess.Popen([sys.executable, "-c", child, c.scheduler_address, mode, helpers,
                              folder], stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().startswith("TRAINING")
        end = time.monotonic() + 120
        while not written(folder) and time.monotonic() < end:    # the training is under way
            time.sleep(0.1)
        time.sleep(1.0)
        p.kill()
        p.wait()
        t = time.monotonic()
        stopped = idle(client, 30)
        stop_s = time.monotonic() - t
        files = written(folder)
        time.sleep(1.0)
        print(f"CASE stopped={stopped} stop_s={stop_s:.2f} "
              f"checkpoints_after={written(folder) != files}", flush=True)
''')


@pytest.mark.parametrize("mode", ["collective", "task"])
def test_a_dead_client_s_training_stops(mode, tmp_path):
    helpers = tmp_path / "helpers.py"
    helpers.write_text(COMMON)
    r = subprocess.run([sys.executable, "-c", CLIENT_DIES, mode, str(tmp_path), str(helpers)],
                       capture_output=True, text=True, timeout=300)
    where = f"{r.stdout}\n{r.stderr[-3000:]}"
    assert r.returncode == 0, where
    rows = _cases(r.stdout)
    assert len(rows) == 1, where
    # the scheduler releases a lost client's keys; the tasks see it within a round
    assert rows[0]["stopped"] == "True" and float(rows[0]["stop_s"]) < 5, where
    assert rows[0]["checkpoints_after"] == "False", where


class _Info:
    """A client's scheduler_info: one worker with a memory_limit and its process memory."""

    def __init__(self, limit, now):
        self.workers = {"tcp://w:1": {"memory_limit": limit, "metrics": {"memory": now}}}

    def scheduler_info(self, n_workers=-1):
        return {"workers": self.workers}


class _Rows:
    part_rows, num_col = [1_000_000, 1_000_000], 40

    def resolve_max_bin(self, max_bin):
        return max_bin


def test_a_training_too_big_for_its_worker_says_so():
    """Issue 44, item 3: before, the nanny killed and restarted the workers until none was
    left, and the training waited past 240 s or failed with 'reason: unknown'. On a real
    2-worker cluster of memory_limit=300MB (2M rows of 40 features) it now ends in 4 s with
    the message below; here the arithmetic, which decides it."""
    from dgbdt.dask.memory import WorkerMemoryError, check_worker_memory
    p = {"device": "cpu", "max_bin": 256}
    # 2M rows on the worker: 40 * 9 bits = 45 B of pages and 40 B of state a row: 162 MiB
    need = 200 * 2**20 + 2_000_000 * (45 + 40)
    with pytest.raises(WorkerMemoryError, match=r"tcp://w:1 would need at least 362 MiB .* "
                       r"memory_limit is 300 MiB .*2,000,000 rows of 40 features"):
        check_worker_memory(_Info(300 * 2**20, 200 * 2**20), _Rows(), p, 1,
                            ["tcp://w:1", "tcp://w:1"])
    check_worker_memory(_Info(int(need / 0.95) + 1, 200 * 2**20), _Rows(), p, 1,
                        ["tcp://w:1"] * 2)                              # fits: no error
    check_worker_memory(_Info(0, 200 * 2**20), _Rows(), p, 1, ["tcp://w:1"] * 2)  # no limit
    check_worker_memory(_Info(1, 200 * 2**20), _Rows(), {**p, "device": "cuda"}, 1,
                        ["tcp://w:1"] * 2)                     # GPU pages: not host memory


@pytest.mark.parametrize("mode", ["collective", "graph"])
def test_a_raising_callback_ends_the_training_and_frees_the_cluster(client2, mode):
    import time

    import dask.array as da
    import numpy as np

    from dgbdt import dask as dgd
    from dgbdt.callback import TrainingCallback

    class Boom(TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            if epoch == 3:
                raise ValueError("boom at round 3")
            return False

    rng = np.random.default_rng(0)
    X = rng.standard_normal((4000, 5))
    d = dgd.DaskDataset(client2, da.from_array(X, chunks=(1000, 5)),
                        da.from_array(X[:, 0] > 0, chunks=1000).astype(np.float32))
    with pytest.raises(Exception, match="boom at round 3"):
        dgd.train(client2, {"max_depth": 3}, d, 100_000, mode=mode, callbacks=[Boom()])
    t = time.monotonic()
    out = dgd.train(client2, {"max_depth": 3}, d, 3, mode=mode)
    assert out["mode"] == mode and time.monotonic() - t < 20


KILLS = COMMON + textwrap.dedent('''
    from dgbdt.callback import TrainingCallback

    class KillAt(TrainingCallback):
        """SIGKILLs the victim worker at round ``at``, wherever the loop runs (the client in
        graph mode, the workers otherwise; every rank's copy tries, one succeeds)."""
        def __init__(self, pid, at):
            self.pid, self.at = pid, at

        def after_iteration(self, model, epoch, evals_log):
            if epoch == self.at:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            return False

    mode, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    P = {"max_depth": 4, "subsample": 0.8}
    with cluster(mode) as c, Client(c) as client:
        d = data(client)
        ref = dgd.train(client, P, d, 60, mode=mode)["booster"].save_raw()
        pids = client.run(os.getpid)
        victim = pids[sorted(pids)[rng.randrange(len(pids))]]
        at = rng.randrange(5, 50)
        out = dgd.train(client, P, d, 60, mode=mode, callbacks=[KillAt(victim, at)])
        print(f"CASE at={at} restarts={out['restarts']} "
              f"same={out['booster'].save_raw() == ref}", flush=True)
''')


@pytest.mark.parametrize("mode", ["collective", "task", "graph"])
def test_a_worker_killed_at_a_random_round_gives_the_same_model(mode):
    seed = int.from_bytes(os.urandom(2), "little")
    r = subprocess.run([sys.executable, "-c", KILLS, mode, str(seed)],
                       capture_output=True, text=True, timeout=300)
    where = f"seed {seed}\n{r.stdout}\n{r.stderr[-3000:]}"
    assert r.returncode == 0, where
    rows = _cases(r.stdout)
    assert len(rows) == 1 and rows[0]["same"] == "True", where
    assert int(rows[0]["restarts"]) >= 1, where      # the kill landed inside the training


IN_PROCESS = textwrap.dedent('''
    import signal, time
    import numpy as np
    import dgbdt
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40_000, 10)).astype(np.float32)
    d = dgbdt.Dataset(X, (X[:, 0] > 0).astype(np.float32))
    dgbdt.train({"max_depth": 8}, d, 2)                 # compiles
    # and the leaf update of a tree that stops before max_depth, which the long training
    # reaches later: compiled there, at the interrupt, numba's cache save once failed in CI
    dgbdt.train({"max_depth": 8, "gamma": 1e9}, d, 2)

    def interrupt(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.5, 1.0)
    t = time.monotonic()
    try:
        dgbdt.train({"max_depth": 8}, d, 1_000_000)
    except KeyboardInterrupt:
        signal.setitimer(signal.ITIMER_REAL, 0)
    print(f"CASE back={time.monotonic() - t - 1.5:.2f}")
''')


def test_an_in_process_training_stops_within_a_round_on_ctrl_c():
    r = subprocess.run([sys.executable, "-c", IN_PROCESS], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = _cases(r.stdout)
    # a round of 40k rows at depth 8 takes well under a second here
    assert len(rows) == 1 and float(rows[0]["back"]) < 2, r.stdout


def test_a_kernel_s_interrupt_is_a_keyboard_interrupt():
    """A Ctrl-C landing as a numba dispatcher returns surfaced as SystemError ('returned a
    result with an exception set', one run in six above); the caller gets the interrupt."""
    from dgbdt.kernels.interrupts import keyboard_interrupts

    def dispatcher_return():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise SystemError("CPUDispatcher(<f>) returned a result with an exception set") \
                from e
    with pytest.raises(KeyboardInterrupt):
        with keyboard_interrupts():
            dispatcher_return()

    def through_two_frames():
        try:
            dispatcher_return()
        except SystemError as e:
            raise SystemError("<function _numba_unpickle> returned a result with an "
                              "exception set") from e
    with pytest.raises(KeyboardInterrupt):
        with keyboard_interrupts():
            through_two_frames()
    with pytest.raises(SystemError, match="other"):          # other SystemErrors unchanged
        with keyboard_interrupts():
            raise SystemError("other")
