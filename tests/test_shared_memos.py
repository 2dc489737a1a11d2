"""Metrics that read the same pooled vectors of the same backbone share one memo per run: a text
that `sent_cosine`, `deep_am` and ADEM all need (a reference repeated across systems, a
response) runs through MiniLM once, whichever metric asks first, and every metric's values are
what it gives alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")

from dialeval.models.defaults import default_model_dir  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ADEM = default_model_dir("adem")     # read at collection, before conftest hides the defaults per test
NAMES = ["sent_cosine", "deep_am", "adem"]


def _views():
    from dialeval.backbones import cached_backbones

    return [view for bb in cached_backbones() for view in bb._views.values()]


def _run(names):
    from dialeval.backbones import clear_backbones
    from dialeval.data.readers import read_samples
    from dialeval.models import artifacts
    from dialeval.scoring import score

    clear_backbones()
    artifacts.clear_models()
    samples = read_samples(str(ROOT / "examples" / "demo.jsonl"))
    result = score(samples, names, progress=False, adem_model=ADEM)
    views = _views()
    return result, sum(v.encoded for v in views), set().union(*(v.cache for v in views)) if views else set()


@pytest.mark.skipif(ADEM is None, reason="the shipped default models are not installed (run install.sh)")
def test_each_distinct_text_runs_once_across_metrics():
    alone = {name: _run([name]) for name in NAMES}
    together, encoded, texts = _run(NAMES)
    # each distinct text ran once, although three metrics read it
    assert encoded == len(texts) == len(set().union(*(t for _, _, t in alone.values())))
    assert encoded < sum(n for _, n, _ in alone.values())
    for name in NAMES:
        assert np.array_equal(together.sentence[name], alone[name][0].sentence[name], equal_nan=True), name


def test_bertscore_reads_each_text_once_across_shards_and_its_three_metrics(monkeypatch):
    """References repeat across systems, so across shards: BERTScore keeps the token states of
    texts already read (`--bertscore-memo-mb`, beside the backbone, shared by p, r and f) and
    runs each distinct text once; the values are those without the memo, bit for bit."""
    from dialeval.backbones import clear_backbones, encoding
    from dialeval.data.readers import read_samples
    from dialeval.scoring import score

    samples = read_samples(str(ROOT / "examples" / "demo.jsonl"))
    read: list[str] = []
    real = encoding.token_states_at

    def counting(backbone, texts, *args, **kwargs):
        read.extend(texts)
        return real(backbone, texts, *args, **kwargs)

    monkeypatch.setattr(encoding, "token_states_at", counting)
    names = ["bertscore_p", "bertscore_r", "bertscore_f"]
    clear_backbones()
    memo = score(samples, names, progress=False, chunk_size=2)
    once, read[:] = list(read), []
    clear_backbones()
    plain = score(samples, names, progress=False, chunk_size=2, bertscore_memo_mb=0)
    assert len(once) == len(set(once))                   # each text read once
    assert len(read) > len(once)                         # without the memo, shards read references again
    for name in names:
        assert np.array_equal(memo.sentence[name], plain.sentence[name], equal_nan=True), name
