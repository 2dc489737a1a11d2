"""Choosing an estimator's settings on validation data, as its own object (scikit-learn's
`GridSearchCV` shape): the estimator being searched is never changed, each combination of the
grid is tried on a fresh copy, and what was tried stays readable afterwards.

    search = SettingsSearch(Adem(encoder="minilm"), {"pca_dims": [7, 50, 0], "lr": [0.01, 0.001]},
                            scoring=validation_spearman, validation=val, method="fit_vectors")
    search.fit(C, R, H, y, lengths, val=val)
    search.best_params_, search.best_estimator_, search.results_

Why a separate object: a `fit` that searches and then rewrites its own parameters leaves a
model whose constructor settings are not the ones it was built with, and hides the table of
candidates inside its training record. Here the table (`results_`) belongs to the search and
the winner is an ordinary fitted estimator.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any, Callable, Mapping, Sequence

from ..errors import DialevalError
from .estimator import Estimator


class SettingsSearch:
    """Every combination of `grid` (constructor parameter -> values, tried in grid order), fitted
    on the same data and judged by `scoring(fitted_estimator, validation) -> float` (higher is
    better; the first in grid order wins a tie). Never give it a test split.

    Options:
      estimator: the estimator whose other settings every candidate shares (left unfitted)
      grid: parameter name -> the values to try
      scoring: callable (fitted candidate, validation) -> score, higher is better
      validation: the held-out data handed to `scoring`
      method: the candidate's fitting method that `fit(...)` calls with its arguments
      score_name: the name of the score column in `results_`
      describe: callable (fitted candidate) -> extra columns for its row of `results_`
      progress: callable receiving one line per candidate
    """

    def __init__(self, estimator: Estimator, grid: Mapping[str, Sequence[Any]], *,
                 scoring: Callable[[Estimator, Any], float], validation: Any = None, method: str = "fit",
                 score_name: str = "score", describe: Callable[[Estimator], Mapping[str, Any]] | None = None,
                 progress: Callable[[str], None] | None = None):
        self.estimator = estimator
        self.grid = grid
        self.scoring = scoring
        self.validation = validation
        self.method = method
        self.score_name = score_name
        self.describe = describe
        self.progress = progress

    def candidates(self) -> list[dict[str, Any]]:
        """The settings to try, in the order they are tried."""
        known = set(self.estimator.get_params())
        unknown = sorted(set(self.grid) - known)
        if unknown:
            raise DialevalError(f"{type(self.estimator).__name__} has no setting {', '.join(unknown)} to search")
        if not self.grid or any(len(v) == 0 for v in self.grid.values()):
            raise DialevalError("a settings search needs at least one value for every setting it varies")
        names = list(self.grid)
        return [dict(zip(names, values)) for values in itertools.product(*(self.grid[n] for n in names))]

    def fit(self, *args: Any, **kwargs: Any) -> "SettingsSearch":
        """Fit one fresh copy of the estimator per candidate (`method(*args, **kwargs)`), score
        it and keep the best."""
        started = time.time()
        base = self.estimator.get_params()
        results: list[dict[str, Any]] = []
        best, best_score, best_index = None, -math.inf, -1
        for index, chosen in enumerate(self.candidates()):
            candidate = type(self.estimator)(**{**base, **chosen})
            getattr(candidate, self.method)(*args, **kwargs)
            score = float(self.scoring(candidate, self.validation))
            row = {**chosen, self.score_name: score}
            if self.describe is not None:
                row.update(self.describe(candidate))
            results.append(row)
            if self.progress:
                self.progress(f"search {chosen}: {self.score_name.replace('_', ' ')} {score:.4f}")
            if best is None or score > best_score:
                best, best_score, best_index = candidate, score, index
        self.results_ = results
        self.best_index_ = best_index
        self.best_score_ = best_score
        self.best_params_ = {k: results[best_index][k] for k in self.grid}
        self.best_estimator_ = best
        self.seconds_ = round(time.time() - started, 2)
        return self
