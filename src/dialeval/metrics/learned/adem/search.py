"""ADEM's settings search (`dialeval train adem --search`): stage 1 fitted once per combination
of a grid on the same encoded rows, the best by validation Spearman kept.

Why a search: the best PCA size and step size depend on the encoder and the data (with frozen
MiniLM the paper's lr 0.01 leaves M, N worse than the identity after one epoch), and the only
fair judge is the validation split, never a test set. The machinery is the shared
`models.search.SettingsSearch`; what is ADEM's is the grid, the judge and encoding once.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ....errors import DialevalError
from .data import RatedRow
from .training import val_score

# the settings `dialeval train adem --search` tries (pca_dims 0: all dimensions)
SEARCH_GRID = {"pca_dims": [7, 50, 0], "lr": [0.01, 0.001]}


def validation_spearman(model, val: tuple) -> float:
    """Spearman correlation of a fitted model's predictions on (C, R, H, y) validation vectors
    (the early-stopping criterion, so it equals `training_["val_spearman"]`)."""
    return val_score(model.head_, model.head_.project(*val[:3]), val[3])


def vector_search(model, grid: Mapping[str, Sequence], val: tuple, *,
                  progress: Callable[[str], None] | None = None):
    """The settings search of ADEM's stage 1: one `fit_vectors` per combination of `grid`,
    judged by validation Spearman. Every candidate sees the same training and validation rows."""
    from ....models.search import SettingsSearch

    if val is None:
        raise DialevalError("a settings search needs a validation split")
    return SettingsSearch(model, grid, scoring=validation_spearman, validation=val, method="fit_vectors",
                          score_name="val_spearman", describe=lambda m: {"best_epoch": m.training_["best_epoch"]},
                          progress=progress)


def search_rows(model, rows: Sequence[RatedRow], grid: Mapping[str, Sequence], *,
                progress: Callable[[str], None] | None = None, checkpoint=None):
    """(search, best model): the rows encoded once, stage 1 searched over `grid`, then the best
    candidate finished (stage 2 when asked, provenance); its training record keeps the table of
    candidates under "search" as `train adem --search` always reported it."""
    prepared = model.prepare(rows)
    search = vector_search(model, grid, prepared.val, progress=progress).fit(*prepared.train, val=prepared.val)
    best = search.best_estimator_
    best.training_ = searched_record(search)
    return search, best.finish(prepared, progress=progress, checkpoint=checkpoint)


def searched_record(search) -> dict:
    """The winner's training record with the table of candidates and the search's time."""
    return {**search.best_estimator_.training_, "search": search.results_, "search_seconds": search.seconds_}
