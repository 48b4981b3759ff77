"""Faults injected into the ranks of a collective GPU fit, for the multi-GPU tests."""
import os

import dgbdt


def patch_level_step(client, worker, behaviour):
    """Make Shard.level_step misbehave on one worker's process at its 5th call, once:
    ``"raise"`` raises, a number of seconds as a string sleeps that long first."""
    def patch(behaviour=behaviour):
        import time as t
        from dgbdt.engine.shard import Shard
        original = Shard.level_step
        calls = [0]

        def level_step(self, req, hist_ptrs):
            calls[0] += 1
            if calls[0] == 5:
                Shard.level_step = original         # once only
                if behaviour == "raise":
                    raise RuntimeError("injected failure on this rank")
                t.sleep(float(behaviour))
            return original(self, req, hist_ptrs)
        Shard.level_step = level_step
    client.run(patch, workers=[worker])


class KillAt(dgbdt.callback.TrainingCallback):
    """Exits the process of worker ``victim`` after round ``at`` (once: a marker file)."""

    def __init__(self, at, victim, marker):
        self.at, self.victim, self.marker = at, victim, marker

    def after_iteration(self, model, epoch, evals_log):
        from distributed import get_worker
        if (epoch == self.at and get_worker().address == self.victim
                and not os.path.exists(self.marker)):
            open(self.marker, "w").close()
            os._exit(1)
        return False
