"""Position debiasing of the rank:* objectives (``lambdarank_unbiased=True``): XGBoost's
"Unbiased LambdaMART" (Hu et al. 2019, src/objective/lambdarank_obj.cc,
``LambdaRankUpdatePositionBias``).

A query's rows are taken to be in the order they were shown (row ``i`` of a query was at
position ``i``: XGBoost's ``idx_high`` / ``idx_low``, the index in the input list). The first
``P`` positions are tracked: ``P = lambdarank_num_pair_per_sample`` with topk pairs (default
32), ``min(longest query, 32)`` with mean pairs. Two float64 ratio vectors ``t+`` (of a
relevant row, clicked) and ``t-`` (of an irrelevant row) start at 1 and, each round:

* a pair (``high`` more relevant than ``low``) whose two rows are both among the first ``P``
  positions has its lambda and hessian divided by ``t+[high] t-[low]`` (when both >= 1e-16);
* its cost ``c = log(1 / (1 - sigma)) |delta Z|`` (``|delta Z|`` after the score
  normalization, before the division) adds ``c / t-[low]`` to ``L+[high]`` and
  ``c / t+[high]`` to ``L-[low]`` (eqs. 30-31), summed over every pair of every query;
* after the round's gradients, ``t+[i] = (L+[i] / L+[0]) ** (1 / (1 + p))`` when
  ``L+[0] >= 1e-16`` (else ``t+`` is kept), likewise ``t-`` from ``L-``, with
  ``p = lambdarank_bias_norm`` (XGBoost's code defaults it to 1; its documentation says 2);
  ``L+``, ``L-`` start from 0 again.

The kernel (dgbdt.kernels.cpu_rank) writes each row's own ``L+`` / ``L-`` terms (float64,
summed in the query's pair order as XGBoost). Across queries the per-position sums are exact
(dgbdt.kernels.fixedpoint.ExactSum: the correctly rounded sum whatever the order, partitioning or
worker count; the collective ranks all-reduce them as int64 limbs), where XGBoost adds the
queries' float64 terms in query order: the two differ in the last bits of a sum at most.

The ratios are state carried from round to round; ``PositionBias.rounds`` counts the updates.
A trained model keeps them (Booster.position_bias, saved in dgbdt's model file), and an
in-process training that continues it (xgb_model=) resumes from them, so its rounds are those
of an uninterrupted training. A model without them (trained biased, saved by an older dgbdt,
sliced, or read from XGBoost's format) restarts them from ``t = 1`` with a UserWarning, as
XGBoost's continued training does. A checkpoint's resume and Dask's continued or restarted
trainings are refused rather than silently restarted (refuse_unsupported).
"""
from __future__ import annotations

import numpy as np

from ..kernels.fixedpoint import ExactSum

EPS64 = 1e-16
#: positions tracked with mean pairs at most (XGBoost's hard-coded bound)
MAX_MEAN_POSITIONS = 32


def tracked_positions(pair_method: str, num_pair: int, longest_query: int) -> int:
    """XGBoost's RankingCache::MaxPositionSize: the number of positions ``P`` whose bias is
    estimated (``longest_query``: the longest query of the whole training set)."""
    if pair_method == "topk":
        return int(num_pair)
    return int(min(longest_query, MAX_MEAN_POSITIONS))


def position_sums(li: np.ndarray, lj: np.ndarray, gptr: np.ndarray, n_pos: int) -> list:
    """[ExactSum] * 2P: the per-position sums over the queries of ``gptr`` of the rows' terms
    (``L+`` of positions 0..P-1, then ``L-``)."""
    sizes = np.diff(gptr)
    pos = np.arange(li.shape[0], dtype=np.int64) - np.repeat(gptr[:-1], sizes)
    out = []
    for terms in (li, lj):
        for i in range(n_pos):
            out.append(ExactSum.of(terms[pos == i]))
    return out


class PositionBias:
    """The ratios ``t+`` (``ti``) and ``t-`` (``tj``), float64 [P], and the number of
    updates made (``rounds``: the round whose gradients they weigh next)."""

    def __init__(self, n_pos: int, regularizer: float):
        self.ti = np.ones(n_pos, dtype=np.float64)
        self.tj = np.ones(n_pos, dtype=np.float64)
        self.regularizer = float(regularizer)
        self.rounds = 0

    def check_round(self, epoch: int) -> None:
        """The ratios must be those after ``epoch`` rounds: else the training did not start
        from round 0 with them (see the module docstring)."""
        if self.rounds != epoch:
            raise ValueError(
                f"lambdarank_unbiased=True: round {epoch} needs the position-bias estimates of "
                f"the {epoch} rounds before it, which this training does not have (it "
                "continues a model, resumes a checkpoint or restarts after a lost worker; "
                "the estimates are not stored in models or checkpoints yet). Train it from "
                "round 0 in one run, or with lambdarank_unbiased=False")

    @classmethod
    def start(cls, stored: dict | None, n_pos: int, regularizer: float,
              epoch: int) -> "PositionBias":
        """The ratios a training's first round ``epoch`` weighs with: ones at round 0; for a
        continued model (``epoch`` > 0) its stored estimates (``as_dict``'s) when they are
        those after ``epoch`` rounds over ``n_pos`` positions, else ones again, with a
        UserWarning (XGBoost's restart)."""
        state = cls(n_pos, regularizer)
        if epoch == 0:
            return state
        if stored is not None and int(stored.get("rounds", -1)) == epoch and \
                len(stored["ti+"]) == n_pos and len(stored["tj-"]) == n_pos:
            state.ti = np.array(stored["ti+"], dtype=np.float64)
            state.tj = np.array(stored["tj-"], dtype=np.float64)
        else:
            import warnings
            why = ("has no position-bias estimates" if stored is None else
                   f"holds the estimates of {stored.get('rounds')} rounds over "
                   f"{len(stored['ti+'])} positions, not of its {epoch} rounds over {n_pos}")
            warnings.warn(f"lambdarank_unbiased=True: the model continued (xgb_model=) {why}; "
                          "they restart from 1, as in XGBoost, so the continued rounds differ "
                          "from an uninterrupted training's", UserWarning, stacklevel=2)
        state.rounds = epoch
        return state

    def as_dict(self) -> dict:
        """{"ti+": t+, "tj-": t-, "rounds": updates} (float64 copies; XGBoost's save_config
        names): what Booster.position_bias and the model file keep."""
        return {"ti+": self.ti.copy(), "tj-": self.tj.copy(), "rounds": self.rounds}

    def update(self, sums: list) -> None:
        """XGBoost's eqs. 30-31 from the round's per-position sums (``position_sums``, summed
        over every query of the training)."""
        n = self.ti.shape[0]
        li = np.array([float(s) for s in sums[:n]], dtype=np.float64)
        lj = np.array([float(s) for s in sums[n:]], dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if n and li[0] >= EPS64:
                self.ti = np.power(li / li[0], self.regularizer)
            if n and lj[0] >= EPS64:
                self.tj = np.power(lj / lj[0], self.regularizer)
        self.rounds += 1


def refuse_unsupported(objective, xgb_model=None, checkpoint_dir=None, device: str = "cpu",
                       mode: str | None = None) -> None:
    """The clear errors of what position debiasing does not do yet (a training's arguments:
    ``mode`` is dgbdt.dask.train's, None in-process)."""
    if not vars(objective).get("unbiased", False):     # (a custom obj= makes its own)
        return
    what = "lambdarank_unbiased=True"
    if device != "cpu":
        raise ValueError(f"{what} trains on the CPU for now (the GPU ranking kernel has no "
                         "position debiasing yet): pass device='cpu'")
    if xgb_model is not None and mode is not None:
        raise ValueError(f"{what} cannot continue a model (xgb_model=) in a Dask training "
                         "yet: the workers do not resume the model's position-bias estimates. "
                         "Continue it in-process (dgbdt.train), or train all the rounds in one "
                         "run")
    if checkpoint_dir is not None:
        raise ValueError(f"{what} with checkpoint_dir is not supported yet: checkpoints do not "
                         "store the position-bias estimates, so a resume could not give the "
                         "uninterrupted model. Leave checkpoint_dir out")
    if mode == "graph":
        raise ValueError(f"{what} trains in mode='collective' (the default on CPU clusters) "
                         "or 'task', not in graph mode: the position-bias estimates are sums "
                         "over every worker's queries, reduced between one round's gradients "
                         "and the next")
