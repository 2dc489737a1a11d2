"""The script rule (metrics/base.py): a reply written mostly in another script than the Latin
text it answers scores the floor on a metric that declares `floors_other_script` (the MME
sub-metrics and the compositions). Their models read English alone: before the rule a Cyrillic
transliteration of a good answer outscored the answer itself on a fifth of gupta's probe items
for `compose`. Text in one other script throughout is left to the English-only warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import REPO
from dialeval.metrics.base import Batch, Metric, in_other_script

SHIPPED = REPO / "packages" / "dialeval-models" / "src" / "dialeval_models"


def test_which_replies_are_in_another_script():
    latin = ["how was your weekend ?"]
    cyrillic = ["как прошли выходные ?"]
    assert in_other_script("ит шас греат .", latin, [])           # transliterated English
    assert in_other_script("我不知道。", latin, [])                  # Chinese to an English turn
    assert not in_other_script("it was great .", latin, [])
    assert not in_other_script("ит шас греат .", cyrillic, [])     # one script throughout: no mismatch
    assert not in_other_script("😂 😂", latin, [])                  # no letters: not a script at all
    assert not in_other_script("café, naïve, Ærø", latin, [])      # Latin with diacritics
    # more Latin letters than Cyrillic ones: mostly Latin (text/scripts.py counts letters)
    assert not in_other_script("we met Борис at the station", latin, [])
    # without a context the references say what is answered; with neither, nothing is
    assert in_other_script("ит шас греат .", [], ["it was great ."])
    assert in_other_script("ит шас греат .", ["", "  "], ["it was great ."])
    assert not in_other_script("ит шас греат .", [], [])
    assert not in_other_script("ит шас греат .", ["12 : 30 ?"], [])


class ToyLength(Metric):
    """Letters of the response over 10, capped at 1: a Cyrillic reply scores like any other."""

    name = "toy_letters"
    needs_references = False
    score_range = (0.0, 1.0)

    def multi_stats(self, batch):
        return np.array([[min(sum(c.isalpha() for c in h) / 10.0, 1.0), 1.0] for h in batch.hyps])

    def sentence_from_stats(self, stats):
        return stats[:, 0] / stats[:, 1]


class ToyLengthWithRule(ToyLength):
    name = "toy_letters_ruled"
    floors_other_script = True


def test_the_rule_sets_the_floor_and_signs_itself():
    batch = Batch(["ит шас", "it was", "ит шас", ""],
                  [[], [], [], []],
                  [["how was it ?"], ["how was it ?"], ["как дела ?"], ["how was it ?"]])
    plain = ToyLength().compute(batch).sentence
    ruled = ToyLengthWithRule().compute(batch)
    # 5 letters each: 0.5, except the blank reply (the floor by the blank rule)
    assert plain.tolist() == [0.5, 0.5, 0.5, 0.0]
    # the Cyrillic reply to an English turn goes to the floor; to a Russian turn it stays
    assert ruled.sentence.tolist() == [0.0, 0.5, 0.5, 0.0]
    assert ruled.corpus == pytest.approx(0.25)     # the corpus value is the rows' mean
    assert "|script:floor|" in str(ToyLengthWithRule().signature())
    assert "script" not in str(ToyLength().signature())


ROWS = [
    {"id": "good", "context": ["how was your weekend ?"], "response": "it was great , we went hiking .",
     "references": ["we went to the beach ."]},
    {"id": "transliterated", "context": ["how was your weekend ?"], "response": "ит шас греат , ше шент хикинг .",
     "references": ["we went to the beach ."]},
    {"id": "russian-chat", "context": ["как прошли выходные ?"], "response": "ит шас греат , ше шент хикинг .",
     "references": ["we went to the beach ."]},
    {"id": "blank", "context": ["how was your weekend ?"], "response": "", "references": ["we went to the beach ."]},
]
RULED = ["mme_fm", "mme_rm", "mme_rm_cross", "compose", "compose_ref"]


@pytest.fixture(scope="module")
def shipped():
    """The rows below scored with the shipped models, and what the run warned (scored here: the
    suite's per-test environment hides the shipped models)."""
    if not (SHIPPED / "compose").is_dir():
        pytest.skip("the shipped default models are not in this checkout")
    import dialeval
    from dialeval.metrics.compose import ComposeSignatureWarning

    mp = pytest.MonkeyPatch()
    mp.setenv("DIALEVAL_MODELS_DIR", str(SHIPPED))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # the shipped compositions were fitted before the rule, which moves no row a fit read
            warnings.simplefilter("error", ComposeSignatureWarning)
            result = dialeval.score(ROWS, RULED)
        return result, caught
    finally:
        mp.undo()




def test_shipped_metrics_floor_a_reply_in_another_script(shipped):
    from dialeval.progress import ForeignScriptWarning, ScriptFloorWarning

    result, caught = shipped
    for metric in RULED:
        good, transliterated, russian, blank = result.sentence[metric]
        assert transliterated == blank < good, metric            # the floor, as silence
        assert russian > blank, metric                            # no mismatch: scored (and warned of)
        assert "|script:floor|" in str(result.signatures[metric])
    said = {type(w.message): w.message for w in caught}
    # one row scored at the floor, said once; the Russian chat's row is the one whose scores mean little
    assert said[ScriptFloorWarning].count == 1 and said[ScriptFloorWarning].metrics == tuple(RULED)
    assert said[ForeignScriptWarning].count == 1
