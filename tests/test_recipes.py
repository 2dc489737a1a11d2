"""The default models' recipes (`dialeval.recipes`): the data sets they read are named by the
data-set registry and ADEM's list of rated sets, and the command lines are the ones the shipped
folders were built with (a changed line would rebuild other bytes)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dialeval.data.datasets import get_spec
from dialeval.metrics.learned.adem.data import RATED_SETS, WITH_REFERENCES

SHIPPED = Path(__file__).resolve().parents[1] / "packages" / "dialeval-models" / "src" / "dialeval_models"


@pytest.mark.parametrize("name", ["amfm", "adem", "c_adem", "r_adem", "mme", "mme_cross", "lm", "compose", "compose_ref"])
def test_command_lines_are_the_shipped_ones(name):
    """Each recipe's command line is the one its shipped folder's card records (the folder was
    built by it: a recipe changed without a rebuild would rebuild other bytes)."""
    from dialeval.recipes import command_text

    card = SHIPPED / name / "card.json"
    if not card.exists():
        pytest.skip(f"no shipped {name} folder in this checkout")
    assert command_text(name) == json.loads(card.read_text(encoding="utf-8"))["command"]


def test_rated_sets_are_the_registrys():
    from dialeval.recipes import ADEM_SETS, COMPOSE_SETS

    for name, rated in RATED_SETS.items():
        assert rated.folder == get_spec(name).folder
    assert ADEM_SETS == [(name, get_spec(name).folder) for name in WITH_REFERENCES]
    assert all(folder == get_spec(name).folder for name, folder in COMPOSE_SETS)


def test_old_import_path_still_resolves():
    import dialeval.recipes as recipes
    from dialeval.cli.models_build import ORDER, RECIPES, build, card_markdown, normalise

    assert RECIPES is recipes.RECIPES and ORDER is recipes.ORDER
    assert (build, card_markdown, normalise) == (recipes.build, recipes.card_markdown, recipes.normalise)
    assert set(ORDER) == set(RECIPES)


def test_recipe_environment_names_the_blas_kernels(monkeypatch):
    """A recipe's process gets its thread count and, when the recipe names them, its OpenBLAS
    kernels; an inherited OPENBLAS_CORETYPE never reaches a recipe that names none."""
    from dialeval.recipes.build import recipe_env

    monkeypatch.setenv("OPENBLAS_CORETYPE", "Zen")
    plain = recipe_env(2)
    assert "OPENBLAS_CORETYPE" not in plain
    assert plain["OMP_NUM_THREADS"] == plain["MKL_NUM_THREADS"] == plain["OPENBLAS_NUM_THREADS"] == "2"
    assert plain["PYTHONHASHSEED"] == "0"
    assert recipe_env(1, "Haswell")["OPENBLAS_CORETYPE"] == "Haswell"


@pytest.mark.parametrize("name", ["amfm", "adem", "c_adem", "r_adem", "mme", "mme_cross", "lm", "compose",
                                  "compose_ref", "compose_judge"])
def test_cards_say_what_a_rebuild_pins(name):
    """The shipped card names its recipe's thread count (one: not written), and the card's page
    names the OpenBLAS kernels the recipe pins (the shipped folders' manifests, and so their
    hashes, stay as built)."""
    from dialeval.recipes import RECIPES, card_markdown

    folder = SHIPPED / name
    if not (folder / "card.json").exists():
        pytest.skip(f"no shipped {name} folder in this checkout")
    recipe = RECIPES[name]
    assert json.loads((folder / "card.json").read_text(encoding="utf-8")).get("threads", 1) == recipe.threads
    page = card_markdown(name, str(folder))
    assert ("OPENBLAS_CORETYPE" in page) == bool(recipe.blas)
    if recipe.blas:
        assert f"OpenBLAS's {recipe.blas} kernels" in page


def test_a_default_needing_an_optional_install_is_built_only_when_named(tmp_path, monkeypatch):
    """`models build` leaves out a recipe that names an optional install (the judge's
    composition) and builds it with `--only NAME`; the shipped table marks that one alone."""
    import importlib

    from dialeval.recipes.table import RECIPES, Recipe

    build_module = importlib.import_module("dialeval.recipes.build")
    assert [n for n, r in RECIPES.items() if r.optional] == ["compose_judge"]
    data = tmp_path / "data"
    (data / "corpus").mkdir(parents=True)
    (data / "corpus" / "a.txt").write_text("\n\n".join(["how are you\nfine thanks", "what is it\na cat"] * 6) + "\n")

    def amfm(root, out):
        return ["train", "amfm", "--corpus", os.path.join(root, "corpus", "a.txt"), "--dims", "2", "--order", "2",
                "--seed", "0", "-o", out]
    monkeypatch.setitem(RECIPES, "tiny_plain", Recipe("tiny_plain", ("am",), "a test corpus", "none", amfm,
                                                      needs=("corpus",)))
    monkeypatch.setitem(RECIPES, "tiny_extra", Recipe("tiny_extra", ("am",), "a test corpus", "none", amfm,
                                                      needs=("corpus",), optional="an optional model"))
    monkeypatch.setattr(build_module, "ORDER", ["tiny_plain", "tiny_extra"])
    assert build_module.build(str(data), str(tmp_path / "all")) == ["tiny_plain"]
    assert sorted(os.listdir(tmp_path / "all")) == ["tiny_plain"]
    assert build_module.build(str(data), str(tmp_path / "named"), only=["tiny_extra"]) == ["tiny_extra"]
