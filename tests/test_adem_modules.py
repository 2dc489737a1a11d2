"""ADEM's estimator split by concern (encoding.py, training.py, search.py beside model.py):
the estimator's parameters and the names other code imports from model.py stay, and its rated
sets are the data-set registry's. The numbers are tests/test_adem*.py's."""

from __future__ import annotations

import pytest

pytest.importorskip("numpy")

from dialeval.data.datasets import get_spec  # noqa: E402
from dialeval.metrics.learned.adem import encoding, model, search, training  # noqa: E402
from dialeval.metrics.learned.adem.data import RATED_SETS, WITH_REFERENCES, RatedSet  # noqa: E402

PARAMS = ["encoder", "variant", "preset", "pca_dims", "gamma", "lr", "batch_size", "max_epochs", "patience",
          "val_fraction", "context_turns", "oversample", "max_oversample", "seed", "finetune_layers", "finetune_lr",
          "finetune_epochs", "finetune_minutes", "rank_weight", "rank_margin", "standardise", "centre",
          "hard_negatives", "copy_term", "device"]


def test_the_estimators_parameters_are_unchanged():
    """The saved parameters are as they were, `hard_negatives` and `copy_term` in the schema
    versions they arrived in (written only from those versions on): `device` (how training runs)
    is never written."""
    assert dict(model.Adem.since) == {"hard_negatives": 2, "copy_term": 3} and model.Adem.schema == 3
    assert model.Adem._param_names() == PARAMS
    assert model.Adem.runtime_params == ("device",)
    assert model.Adem.kind == "adem"


def test_names_imported_from_model_py_are_the_concerns_own():
    assert model.SEARCH_GRID is search.SEARCH_GRID and model.search_rows is search.search_rows
    assert model.vector_search is search.vector_search and model.validation_spearman is search.validation_spearman
    assert model.negative_rows is training.negative_rows and model.NEGATIVE_SCORE == training.NEGATIVE_SCORE
    assert model.pairwise_hinge is training.pairwise_hinge
    assert model.standardise_per_set is training.standardise_per_set
    assert model.PreparedRows is training.PreparedRows and model.BUNDLED_ENCODER == encoding.BUNDLED_ENCODER


def test_rated_sets_take_folder_and_reference_systems_from_the_registry():
    assert set(WITH_REFERENCES) <= set(RATED_SETS)
    for name, rated in RATED_SETS.items():
        assert rated.name == name and rated.folder == get_spec(name).folder
    assert [n for n, s in RATED_SETS.items() if s.references == "none"] == ["fed-turn", "holistic-coherence"]
    assert RatedSet("usr-tc", "engaging").folder == "usr"


def test_a_fitted_model_is_its_parts_and_saves_them_under_the_old_names():
    """State has one owner: the bilinear head (bilinear.py) holds the PCA, M, N, alpha and beta;
    a model made from another gets its own head; a folder still names them M_, alpha_, ..."""
    import numpy as np

    from dialeval.metrics.learned.adem.bilinear import BilinearHead

    rng = np.random.default_rng(0)
    C, R, H = (rng.normal(size=(40, 6)) for _ in range(3))
    m = model.Adem(pca_dims=4, max_epochs=2, oversample=False).fit_vectors(C, R, H, rng.uniform(1, 5, 40))
    assert m.fitted_attributes() == ["head_", "training_"]
    assert sorted(k for k in vars(m) if k.endswith("_")) == ["head_", "training_"]
    assert isinstance(m.head_, BilinearHead) and m.head_.dims == 4
    init = m.at_initialisation()
    assert np.array_equal(init.head_.M, np.eye(4)) and not np.array_equal(m.head_.M, np.eye(4))
    assert init.head_.alpha == m.head_.alpha and init.training_ is m.training_
    values, arrays = m._state()
    assert list(arrays) == ["M_", "N_", "pca_components_", "pca_mean_"]
    assert sorted(values) == ["alpha_", "beta_", "training_"]


def test_a_damaged_head_is_refused_in_one_line():
    """A folder whose head lacks a value or whose arrays disagree in size is refused naming the
    folder and what is wrong, not read into a model that scores wrongly."""
    import numpy as np

    from dialeval.errors import DialevalError
    from dialeval.metrics.learned.adem.bilinear import BilinearHead

    arrays = {"M_": np.eye(3), "N_": np.eye(3), "pca_components_": np.zeros((3, 8)), "pca_mean_": np.zeros(8)}
    values = {"alpha_": 0.5, "beta_": 2.0}
    head = BilinearHead.from_state("adem", values, arrays, "DIR")
    assert head.dims == 3 and (head.alpha, head.beta) == (0.5, 2.0)
    with pytest.raises(DialevalError, match=r"^DIR: incomplete ADEM artifact \(missing alpha_\)$"):
        BilinearHead.from_state("adem", {"beta_": 2.0}, arrays, "DIR")
    with pytest.raises(DialevalError, match=r"^DIR: ADEM arrays do not fit together \(M \(4, 4\), PCA \(3, 8\)\)$"):
        BilinearHead.from_state("adem", values, {**arrays, "M_": np.eye(4)}, "DIR")
