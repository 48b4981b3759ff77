"""dgbdt.metrics.sorted_scores: binary auc from parts sorted by score, never merged, is the same
integers as RocRuns' runs (so the same auc bits) for any split into parts, with ties inside
and across parts; the collective's rows round trip. Numpy here; the GPU suite runs it on
cupy (tests/gpu/test_gpu_user_path.py)."""
import numpy as np
import pytest

from dgbdt.metrics.registry import AUC, AUCPR, RocRuns
from dgbdt.metrics.sorted_scores import MAX_PARTS, SortedScores


def _rows(n, seed, ties=True):
    rng = np.random.default_rng(seed)
    score = np.round(rng.random(n), 2) if ties else rng.random(n)
    pos = (rng.random(n) < score).astype(np.int64)
    return score, pos, 1 - pos


@pytest.mark.parametrize("n_parts", [1, 2, 3, MAX_PARTS + 3])
@pytest.mark.parametrize("ties", [True, False])
def test_parts_give_the_runs_integers(n_parts, ties):
    score, pos, neg = _rows(3000, n_parts, ties)
    runs = RocRuns.of(score, pos, neg)
    want = (runs.twice_area(len(score)),) + runs.totals()
    cuts = np.sort(np.random.default_rng(9).choice(np.arange(1, 3000), n_parts - 1,
                                                   replace=False))
    parts = [SortedScores.of(s, p, q) for s, p, q in
             zip(np.split(score, cuts), np.split(pos, cuts), np.split(neg, cuts))]
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    assert len(total.bounds) - 1 <= MAX_PARTS
    assert total.exact() and total.stats() == want
    # an empty part changes nothing
    empty = SortedScores.of(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert (total + empty).stats() == want
    # the collective's rows: one sorted part per rank, in rank order
    rows = [p.rows() for p in parts]
    back = SortedScores.from_rows(np.concatenate(rows), [r.shape[0] for r in rows])
    assert back.stats() == want
    # the metrics read it as they read runs
    for m in (AUC(), AUCPR()):
        assert m.value([total]) == m.value([runs])


def test_auc_value_equals_scikit_learn():
    skm = pytest.importorskip("sklearn.metrics")
    score, pos, neg = _rows(5000, 11)
    s = SortedScores.of(score[:2000], pos[:2000], neg[:2000]) + SortedScores.of(
        score[2000:], pos[2000:], neg[2000:])
    assert AUC().value([s]) == pytest.approx(skm.roc_auc_score(pos, score), rel=1e-12)
