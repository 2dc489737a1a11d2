"""`SettingsSearch`: every grid combination fitted on a fresh copy, judged on validation data;
the searched estimator is left as it was and the table of candidates is kept."""

from __future__ import annotations

import numpy as np
import pytest

from dialeval.errors import DialevalError
from dialeval.models.estimator import Estimator
from dialeval.models.search import SettingsSearch


class Shifted(Estimator):
    """Predicts mean(y) * scale + shift: a hand-checkable estimator."""

    kind = "shifted-test"

    def __init__(self, shift: float = 0.0, scale: float = 1.0):
        self.shift = shift
        self.scale = scale

    def fit(self, y):
        self.value_ = float(np.mean(y)) * self.scale + self.shift
        return self


def closeness(model, val):
    return -abs(model.value_ - float(np.mean(val)))


def test_best_setting_by_hand_and_estimator_left_alone():
    base = Shifted(shift=9.0)
    # training mean 2, validation mean 5: value = 2 * scale + shift
    #   (shift, scale): (0,1) -> 2 |3|; (0,2) -> 4 |1|; (1,1) -> 3 |2|; (1,2) -> 5 |0|; (3,1) -> 5 |0|; (3,2) -> 7 |2|
    search = SettingsSearch(base, {"shift": [0, 1, 3], "scale": [1, 2]}, scoring=closeness,
                            validation=[4, 6]).fit([1, 3])
    assert [(r["shift"], r["scale"]) for r in search.results_] == [(0, 1), (0, 2), (1, 1), (1, 2), (3, 1), (3, 2)]
    assert [r["score"] for r in search.results_] == [-3, -1, -2, 0, 0, -2]
    assert search.best_params_ == {"shift": 1, "scale": 2}      # first of the tie in grid order
    assert search.best_index_ == 3 and search.best_score_ == 0
    assert search.best_estimator_.value_ == 5 and search.best_estimator_.get_params() == {"shift": 1, "scale": 2}
    assert base.get_params() == {"shift": 9.0, "scale": 1.0} and not base.is_fitted()


def test_unknown_or_empty_setting_refused():
    with pytest.raises(DialevalError, match="Shifted has no setting depth"):
        SettingsSearch(Shifted(), {"depth": [1]}, scoring=closeness).fit([1])
    with pytest.raises(DialevalError, match="at least one value"):
        SettingsSearch(Shifted(), {"shift": []}, scoring=closeness).fit([1])

