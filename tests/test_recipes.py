"""The default models' recipes (`dialeval.recipes`): the data sets they read are named by the
data-set registry and ADEM's list of rated sets, and the command lines are the ones the shipped
folders were built with (a changed line would rebuild other bytes)."""

from __future__ import annotations

from dialeval.data.datasets import get_spec
from dialeval.metrics.learned.adem.data import RATED_SETS, WITH_REFERENCES

RATED = ("--data usr-tc:<data-root>/usr --data usr-pc:<data-root>/usr --data grade-dailydialog:<data-root>/grade "
         "--data grade-convai2:<data-root>/grade --data grade-empatheticdialogues:<data-root>/grade "
         "--data gupta:<data-root>/dailydialog-multiref-gupta "
         "--data predictive-engagement:<data-root>/predictive-engagement")
COMMANDS = {
    "amfm": "dialeval train amfm --corpus <data-root>/dailydialog/train.zip --dims 10 --order 2 --seed 0 "
            "-o <models>/amfm",
    **{v: f"dialeval train adem {RATED} --encoder minilm --variant {v} --preset released --search --no-centre "
          f"--standardise --rank-weight 1.0 --seed 0 -o <models>/{v}" for v in ("adem", "c_adem", "r_adem")},
    "compose": "dialeval fit compose --method ridge --positive --data usr-tc:<data-root>/usr --data "
               "usr-pc:<data-root>/usr --data fed-turn:<data-root>/fed "
               "--data gupta:<data-root>/dailydialog-multiref-gupta "
               "--metrics mme_fm,mme_rm,mme_tcm,mme_em,mme_sm_nll --quality overall --exclude-system "
               "'Original Ground Truth' --seed 0 -o <models>/compose",
    "compose_ref": "dialeval fit compose --method ridge --positive --data usr-tc:<data-root>/usr --data "
                   "usr-pc:<data-root>/usr --data gupta:<data-root>/dailydialog-multiref-gupta --metrics "
                   "mme_fm,mme_rm,mme_tcm,mme_em,mme_sm_nll,sent_cosine,bertscore_f --quality overall "
                   "--exclude-system 'Original Ground Truth' --seed 0 -o <models>/compose_ref",
}


def test_command_lines_are_the_shipped_ones():
    from dialeval.recipes import command_text

    for name, line in COMMANDS.items():
        assert command_text(name) == line, name


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
