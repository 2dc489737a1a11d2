"""Training corpora: no `Dataset` loader (`dialeval.data.corpus` reads them), but their source,
terms and layout are declared like each loader's, so that `dialeval datasets --sources` names
every folder a recipe reads. The corpora read by name declare theirs on their readers
(`dialeval.data.corpus.named`); `sources()` gathers both."""

from __future__ import annotations

from .base import Source

SOURCES = (
    Source(
        folder="dailydialog",
        title="DailyDialog (Li et al., IJCNLP 2017)",
        origin=("http://yanran.li/files/ijcnlp_dailydialog.zip (holds train.zip, validation.zip, test.zip); "
                "a copy of the three zips is in github.com/Ls-Dai/Deep-Reinforcement-Learning-for-Dialogue-"
                "Generation-in-PyTorch (commit bae51b1, folder data/)"),
        licence="CC BY-NC-SA 4.0 (non-commercial)",
        layout=("train.zip (train/dialogues_train.txt)", "validation.zip", "test.zip"),
        note=("the default models train on train.zip only: GRADE, Gupta, holistic and Predictive Engagement "
              "draw their contexts from the test split")),
    Source(
        folder="ud-english-ewt",
        title="Universal Dependencies English Web Treebank (UD_English-EWT)",
        origin="github.com/UniversalDependencies/UD_English-EWT (commit 15d613d): en_ewt-ud-*.conllu",
        licence="CC BY-SA 4.0 (share-alike)",
        layout=("en_ewt-ud-train.conllu", "en_ewt-ud-dev.conllu"),
        note="trains the part-of-speech tagger of `dialeval augment --method wordnet --treebank`"),
)


def sources() -> list[Source]:
    """The corpora's sources: DailyDialog (a file in dialeval's own format), those read by name,
    then the treebank."""
    import dataclasses

    from ..corpus import corpus_readers

    named = [dataclasses.replace(r.source, note=f"train with `--corpus {r.name}:FILE`; {r.source.note}")
             for r in corpus_readers().values()]
    return [SOURCES[0], *named, *SOURCES[1:]]
