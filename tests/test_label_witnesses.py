"""Device labels are checked through a few of their own values (objective_base.label_witnesses):
for every objective, a label array breaks a check_labels rule iff its witnesses do."""
import itertools

import numpy as np
import pytest

from dgbdt.objectives.registry import OBJECTIVES, get_objective
from dgbdt.objectives.base import label_witnesses

VALUES = [np.nan, np.inf, -np.inf, -2.0, -1.0, -0.5, 0.0, 0.3, 1.0, 2.0, 2.5, 3.0, 5.0]


def _fails(obj, y, k) -> bool:
    try:
        obj.check_labels(y, k)
    except ValueError:
        return True
    return False


def _label_sets():
    rng = np.random.default_rng(7)
    for size in (1, 2, 3):
        for combo in itertools.combinations(VALUES, size):
            yield rng.permutation(np.repeat(np.array(combo), rng.integers(1, 4, size)))
    for _ in range(200):
        yield rng.choice(VALUES, size=rng.integers(1, 30))


@pytest.mark.parametrize("name", OBJECTIVES)
def test_labels_fail_iff_their_witnesses_fail(name):
    obj = get_objective(name)
    k = 3 if name.startswith("multi:") else None
    checked = failing = 0
    for y in _label_sets():
        w = label_witnesses(y)
        assert len(w) <= 4 and all(v in y or (np.isnan(v) and np.isnan(y).any()) for v in w)
        fails = _fails(obj, y, k)
        assert _fails(obj, w, k) == fails, (name, y, w)
        checked += 1
        failing += fails
    if name == "survival:aft":          # labels are [n, 2] intervals: any 1-D array fails
        assert failing == checked
    else:
        assert 0 < failing < checked   # both outcomes were exercised


def test_witnesses_of_clean_and_empty_labels():
    assert label_witnesses(np.zeros(0)).shape == (0,)
    np.testing.assert_array_equal(label_witnesses(np.array([1.0, 0.0, 1.0])), [0.0, 1.0])
    w = label_witnesses(np.array([0.5, np.nan, 2.0, 3.0]))
    assert np.isnan(w[0]) and list(w[1:]) == [0.5, 3.0, 0.5]


def test_check_label_array_on_host_labels_keeps_the_row_in_the_message():
    obj = get_objective("binary:logistic")
    with pytest.raises(ValueError, match=r"first bad at row 2"):
        obj.check_label_array(np.array([0.0, 1.0, 2.0]))
    obj.check_label_array(np.array([0.0, 1.0, 1.0]))


def test_label_stats_on_device_for_the_common_objectives():
    """squared error and the logistic family keep GPU labels on the GPU for the intercept;
    the others get host copies (their label_stats use numpy)."""
    assert get_objective("reg:squarederror").stats_on_device()
    assert get_objective("binary:logistic").stats_on_device()
    assert get_objective("binary:logistic", {"scale_pos_weight": 3.0}).stats_on_device()
    assert not get_objective("multi:softprob").stats_on_device()
    assert not get_objective("reg:absoluteerror").stats_on_device()
