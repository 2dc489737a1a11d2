"""Published tables reproduced from the shared data."""

from __future__ import annotations

import pytest

from conftest import DATA, need
from dialeval.meta.correlation import correlation

# UniEval README, TopicalChat (turn level): Pearson / Spearman of predict_scores vs scores.
UNIEVAL_TC = {
    "naturalness": (0.443666, 0.513986),
    "coherence": (0.595143, 0.612942),
    "engagingness": (0.556510, 0.604739),
    "groundedness": (0.536209, 0.574954),
    "understandability": (0.380038, 0.467807),
    "overall": (0.632796, 0.662583),
}


def test_unieval_topicalchat_table():
    from dialeval.data.datasets.usr import load_unieval

    human, predicted = load_unieval(need(DATA / "usr" / "unieval_topicalchat").parent)
    for quality, (pearson, spearman) in UNIEVAL_TC.items():
        x = [p[quality] for p in predicted]
        y = [h[quality] for h in human]
        assert round(correlation(x, y, "pearson")[0], 6) == pearson
        assert round(correlation(x, y, "spearman")[0], 6) == spearman


# AM-FM paper (D'Haro et al.), Table 1: Pearson over the 20 DSTC6 systems of each system's
# metric score with its human mean, and the p-values.
AMFM_TABLE1 = {"bleu4": (-0.5108, 0.0214), "rouge_l": (0.1450, 0.5420), "cider_d": (-0.1827, 0.4408)}


@pytest.mark.slow
@pytest.mark.slow
def test_amfm_table1_system_level():
    from dialeval.data.datasets import load_dataset
    from dialeval.meta.evaluate import system_level_rows
    from dialeval.scoring import score

    ds = load_dataset("dstc6", need(DATA / "dstc6-eval"))
    result = score(ds.samples, list(AMFM_TABLE1))
    rows = system_level_rows(result.systems, {s: v["overall"] for s, v in ds.system_ratings.items()},
                             quality="overall", methods=["pearson"])
    for row in rows:
        r, p = AMFM_TABLE1[row["metric"]]
        assert row["n"] == 20
        assert round(row["r"], 4) == r
        assert round(row["p"], 4) == p
