"""BERTScore runs its encoder only up to the layer it reads; the cut must not move a bit.

The whole pass (`whole=True`) is the reference: token states of the cut pass and BERTScore's P, R
and F must equal it exactly (np.array_equal, not a tolerance), because a score that moved in its
last bits would break the promise that a resumed, sharded or re-run evaluation gives the same
numbers as before. Skipped where the packaged encoders are absent.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from dialeval import score  # noqa: E402
from dialeval.metrics.embedding.bertscore import _Reader, default_layer, resolve_model  # noqa: E402

TEXTS = ["ok", "hi there !", "i would love to go to the beach tomorrow .", "Sure! See you at 9.",
         "what time does the train leave ? " * 40, "word " * 700]     # the last one truncated at 512
SAMPLES = [{"response": TEXTS[i], "references": [TEXTS[(i + 1) % len(TEXTS)], TEXTS[(i + 2) % len(TEXTS)]]}
           for i in range(len(TEXTS))]
METRICS = ["bertscore_p", "bertscore_r", "bertscore_f"]


def backbone_of(name):
    from dialeval.backbones import load_backbone

    try:
        folder = resolve_model(name)[0]
    except Exception as exc:  # MPNet is prepared by install.sh; without it the row is skipped
        pytest.skip(f"{name} encoder not available: {exc}")
    return load_backbone(folder, kind="hf")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["minilm", "mpnet"])
def test_cut_pass_equals_the_whole_pass_bit_for_bit(name):
    from dialeval.backbones.encoding import token_states_at

    bb = backbone_of(name)
    depth = int(bb.model.config.num_hidden_layers)
    layers = sorted({0, 1, default_layer(depth), depth})
    whole = token_states_at(bb, TEXTS, layers, batch_size=4, max_length=512, whole=True)
    ran: list[int] = []
    hooks = [layer.register_forward_hook(lambda *a, k=k: ran.append(k))
             for k, layer in enumerate(bb.model.encoder.layer)]
    try:
        for layer in layers:
            ran.clear()
            cut = token_states_at(bb, TEXTS, [layer], batch_size=4, max_length=512)[layer]
            assert set(ran) == set(range(layer))             # no layer above the one read ran
            for a, b in zip(cut, whole[layer]):
                assert a.input_ids == b.input_ids
                assert np.array_equal(a.states, b.states), (name, layer)
    finally:
        for hook in hooks:
            hook.remove()


@pytest.mark.parametrize("layer", [0, None, 6])
@pytest.mark.parametrize("idf", [False, True])
def test_bertscore_values_unchanged_by_the_cut(monkeypatch, layer, idf):
    bb = backbone_of("minilm")
    top: list[int] = []
    hook = bb.model.encoder.layer[-1].register_forward_hook(lambda *a: top.append(1))
    try:
        # no memo of token states: each run must run the encoder (the cut, then the whole)
        cut = score(SAMPLES, METRICS, bertscore_layer=layer, bertscore_idf=idf, bertscore_rescale=True,
                    bertscore_memo_mb=0).sentence
        assert bool(top) == (layer == 6)                     # the last layer runs only when it is read
        monkeypatch.setattr(_Reader, "whole", True)
        whole = score(SAMPLES, METRICS, bertscore_layer=layer, bertscore_idf=idf, bertscore_rescale=True,
                      bertscore_memo_mb=0).sentence
        assert top                                           # the reference did run the whole encoder
    finally:
        hook.remove()
    for m in METRICS:
        assert np.array_equal(np.asarray(cut[m]), np.asarray(whole[m]), equal_nan=True), m
