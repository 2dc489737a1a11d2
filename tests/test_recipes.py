"""The default models' recipes (`dialeval.recipes`): the data sets they read are named by the
data-set registry and ADEM's list of rated sets, and the command lines are the ones the shipped
folders were built with (a changed line would rebuild other bytes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dialeval.data.datasets import get_spec
from dialeval.metrics.learned.adem.data import RATED_SETS, WITH_REFERENCES

SHIPPED = Path(__file__).resolve().parents[1] / "packages" / "dialeval-models" / "src" / "dialeval_models"


@pytest.mark.parametrize("name", ["amfm", "adem", "c_adem", "r_adem", "mme", "lm", "compose", "compose_ref"])
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
