"""ADEM: the estimator (eq. 1-2), its VHRED encoder, the metrics and the artifact checks.

Models here are tiny (a few thousand parameters, a dozen batches) so the file runs in seconds;
real training lives in benchmarks/bench_adem.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest import DATA, REPO, flip_byte, need  # noqa: E402
from dialeval.errors import DialevalError  # noqa: E402
from dialeval.metrics.learned.adem.data import RatedRow, split_by_context, to_unit_scale  # noqa: E402
from dialeval.metrics.learned.adem.hred import DialogueEncoder, tokenize  # noqa: E402
from dialeval.metrics.learned.adem.model import Adem, average_ranks, spearman  # noqa: E402

CORPUS = [
    ["hi , how are you ?", "i am fine , thanks . and you ?", "great , thank you ."],
    ["what time is it ?", "it is five o'clock .", "thanks a lot ."],
    ["do you like music ?", "yes , i love jazz .", "me too , jazz is great ."],
    ["where do you live ?", "i live in paris .", "paris is lovely ."],
    ["can you help me ?", "sure , what do you need ?", "i need a taxi ."],
    ["are you hungry ?", "yes , let us eat pizza .", "good idea ."],
] * 3


def tiny_encoder(**kw) -> DialogueEncoder:
    params = dict(vocab_size=60, emb_dim=8, utt_dim=8, ctx_dim=12, latent_dim=4, dec_dim=12, batch_size=8,
                  max_steps=40, max_minutes=None, epochs=50, kl_anneal_steps=10, lr=0.02, threads=1)
    params.update(kw)
    return DialogueEncoder(**params).fit(CORPUS)


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("enc") / "hred"
    tiny_encoder().save(path)
    return str(path)


def synthetic(n=240, d=12, seed=0):
    """Vectors and scores from a known bilinear rule (the ADEM form) plus noise."""
    rng = np.random.default_rng(seed)
    C, R, H = (rng.normal(size=(n, d)) for _ in range(3))
    A = rng.normal(size=(d, d)) * 0.2
    y = np.clip(3 + np.einsum("ij,ij->i", C @ A, H) + np.einsum("ij,ij->i", R @ A.T, H)
                + rng.normal(size=n) * 0.2, 1, 5)
    return C, R, H, y, rng.integers(1, 25, n)


# -- statistics ----------------------------------------------------------------------------

def test_average_ranks_and_spearman_by_hand():
    # ties share their mean rank: 3,1,3,2 -> 3.5, 1, 3.5, 2
    assert average_ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]
    # ranks (1,2,3,4) vs (1,3,2,4): 1 - 6 * sum d^2 / (n (n^2 - 1)) = 1 - 6 * 2 / 60 = 0.8
    assert spearman(np.array([1, 2, 3, 4.0]), np.array([10, 30, 20, 40.0])) == pytest.approx(0.8)


def test_scale_mapping():
    assert to_unit_scale(0, 0, 4) == 1 and to_unit_scale(4, 0, 4) == 5 and to_unit_scale(2, 1, 3) == 3


# -- the estimator -------------------------------------------------------------------------

def test_initial_predictions_span_the_human_range_and_training_helps():
    C, R, H, y, lengths = synthetic()
    m = Adem(pca_dims=12, max_epochs=40, patience=40)
    m.fit_vectors(C[:200], R[:200], H[:200], y[:200], lengths[:200], val=(C[200:], R[200:], H[200:], y[200:]))
    init = m.at_initialisation().predict_vectors(C[:200], R[:200], H[:200])
    # alpha and beta put the M = N = I predictions of the training rows exactly on [1, 5]
    assert init.min() == pytest.approx(1.0) and init.max() == pytest.approx(5.0)
    trained = m.predict_vectors(C[200:], R[200:], H[200:])
    assert spearman(trained, y[200:]) > spearman(m.at_initialisation().predict_vectors(C[200:], R[200:], H[200:]),
                                                  y[200:]) + 0.2
    assert m.training_["best_epoch"] >= 1


def test_variants_use_only_their_term():
    C, R, H, y, lengths = synthetic()
    c = Adem(variant="c_adem", pca_dims=6, max_epochs=3).fit_vectors(C, R, H, y, lengths)
    base = c.predict_vectors(C[:5], R[:5], H[:5])
    assert np.allclose(base, c.predict_vectors(C[:5], R[:5] * 0 + 7, H[:5]))      # reference ignored
    r = Adem(variant="r_adem", pca_dims=6, max_epochs=3).fit_vectors(C, R, H, y, lengths)
    assert np.allclose(r.predict_vectors(C[:5], R[:5], H[:5]), r.predict_vectors(C[:5] + 3, R[:5], H[:5]))


def test_l1_preset_shrinks_more_than_nothing():
    C, R, H, y, lengths = synthetic()
    strong = Adem(pca_dims=8, gamma=50.0, max_epochs=30, oversample=False).fit_vectors(C, R, H, y, lengths)
    weak = Adem(pca_dims=8, gamma=0.0, max_epochs=30, oversample=False).fit_vectors(C, R, H, y, lengths)
    assert np.abs(strong.head_.M).sum() < np.abs(weak.head_.M).sum()


def test_search_keeps_the_setting_best_on_validation_and_equals_training_it_directly():
    C, R, H, y, lengths = synthetic()
    val = (C[200:], R[200:], H[200:], y[200:])
    base = dict(max_epochs=15, patience=15)
    m = Adem(**base).search_vectors({"pca_dims": [2, 0], "lr": [0.01, 0.001]}, C[:200], R[:200], H[:200],
                                    y[:200], lengths[:200], val=val)
    tried = m.training_["search"]
    assert [(t["pca_dims"], t["lr"]) for t in tried] == [(2, 0.01), (2, 0.001), (0, 0.01), (0, 0.001)]
    best = max(tried, key=lambda t: t["val_spearman"])
    assert (m.pca_dims, m.lr) == (best["pca_dims"], best["lr"])
    # the rule lives in all 12 dimensions: two PCA dimensions cannot hold it
    assert m.pca_dims == 0 and m.head_.M.shape == (12, 12)
    direct = Adem(**base, pca_dims=m.pca_dims, lr=m.lr).fit_vectors(C[:200], R[:200], H[:200], y[:200],
                                                                    lengths[:200], val=val)
    assert np.array_equal(m.predict_vectors(*val[:3]), direct.predict_vectors(*val[:3]))
    with pytest.raises(DialevalError, match="no setting"):
        Adem().search_vectors({"depth": [1]}, C, R, H, y, lengths, val=val)


def test_adam_in_place_equals_the_textbook_update_bit_for_bit():
    from dialeval.metrics.learned.adem.training import Adam as _Adam

    rng = np.random.default_rng(0)
    ours = [rng.normal(size=(7, 7)), rng.normal(size=(7, 7))]
    book = [p.copy() for p in ours]
    m, v = [np.zeros((7, 7)) for _ in book], [np.zeros((7, 7)) for _ in book]
    adam = _Adam(ours, 0.01)
    for t in range(1, 21):
        grads = [rng.normal(size=(7, 7)), None if t % 5 == 0 else rng.normal(size=(7, 7))]
        adam.step([g if g is None else g.copy() for g in grads])
        for p, g, mm, vv in zip(book, grads, m, v):     # Kingma & Ba, Algorithm 1
            if g is None:
                continue
            mm[:] = 0.9 * mm + (1 - 0.9) * g
            vv[:] = 0.999 * vv + (1 - 0.999) * g * g
            p -= 0.01 * (mm / (1 - 0.9 ** t)) / (np.sqrt(vv / (1 - 0.999 ** t)) + 1e-8)
    assert all(np.array_equal(a, b) for a, b in zip(ours, book))


def test_oversampling_balances_score_classes_within_length_bins():
    from dialeval.metrics.learned.adem.training import oversampled

    y = np.array([1] * 2 + [5] * 10 + [3] * 6, dtype=float)
    lengths = np.array([5] * 18)     # one length: the terciles collapse into one bin
    idx = oversampled(y, lengths, np.random.default_rng(0), max_oversample=10)
    counts = np.bincount(np.rint(y[idx]).astype(int), minlength=6)
    assert counts[1] == counts[3] == counts[5] == 10
    assert set(range(18)) <= set(idx.tolist())          # no original row dropped


def test_split_by_context_keeps_contexts_apart():
    rows = [RatedRow(id=str(i), dataset="d", context=[f"c{i % 7}"], response=f"r{i}", references=["x"], score=3)
            for i in range(70)]
    parts = split_by_context(rows, [0.7, 0.15, 0.15], seed=1)
    assert sorted(i for p in parts for i in p) == list(range(70))
    seen = [{rows[i].context[0] for i in p} for p in parts]
    assert not (seen[0] & seen[1]) and not (seen[0] & seen[2]) and not (seen[1] & seen[2])


# -- the VHRED encoder ---------------------------------------------------------------------

def test_tokenize():
    assert tokenize("I'd like it, Bob!") == ["i'd", "like", "it", ",", "bob", "!"]


@pytest.mark.slow
def test_vhred_training_lowers_perplexity_and_round_trips(tmp_path):
    untrained = tiny_encoder(max_steps=1, lr=1e-9)
    trained = tiny_encoder()
    assert trained.perplexity(CORPUS)["ppl_elbo_bound"] < untrained.perplexity(CORPUS)["ppl_elbo_bound"]
    trained.save(tmp_path / "enc")
    again = DialogueEncoder.load(tmp_path / "enc")
    dialogues = [["hi , how are you ?"], ["what time is it ?", "five ."]]
    assert np.allclose(trained.encode(dialogues), again.encode(dialogues))
    assert again.training_["steps"] == 40


def test_a_dialogues_vector_does_not_depend_on_its_batch(encoder_dir):
    """Alone, in a batch of all, in another order, with repeats: the same bits (the engine's
    sharded, resumed and Dask runs rely on it). A packed, padded batch differs by ~1e-7."""
    enc = DialogueEncoder.load(encoder_dir)
    rng = np.random.default_rng(5)
    words = "hi how are you what time is it fine thanks i love jazz paris pizza , . ?".split()
    dialogues = [[" ".join(rng.choice(words, size=rng.integers(1, 9))) for _ in range(rng.integers(0, 5))]
                 for _ in range(40)] + [[], [""], ["hi"] * 4]
    whole = enc.encode(dialogues)
    alone = np.stack([enc.encode([d])[0] for d in dialogues])
    np.testing.assert_array_equal(whole, alone)
    order = rng.permutation(len(dialogues))
    np.testing.assert_array_equal(enc.encode([dialogues[i] for i in order]), whole[order])
    np.testing.assert_array_equal(enc.encode(dialogues + dialogues[:5])[-5:], whole[:5])
    # an empty dialogue, an empty turn and a one-<unk> turn are the same input
    np.testing.assert_array_equal(whole[-3], whole[-2])


# -- artifacts and the metric --------------------------------------------------------------

def rows_for(n=60):
    rng = np.random.default_rng(3)
    out = []
    for i in range(n):
        d = CORPUS[i % 6]
        good = i % 2 == 0
        out.append(RatedRow(id=str(i), dataset="toy", context=d[:1], references=[d[1]],
                            response=d[1] if good else CORPUS[(i + 1) % 6][2],
                            score=float(np.clip((4.5 if good else 1.5) + rng.normal() * 0.3, 1, 5))))
    return out


@pytest.fixture(scope="module")
def adem_dir(encoder_dir, tmp_path_factory):
    m = Adem(encoder=f"hred:{encoder_dir}", pca_dims=4, max_epochs=20).fit(rows_for())
    path = tmp_path_factory.mktemp("adem") / "adem"
    m.save(path)
    return str(path), m


def test_metric_scores_as_the_model_predicts(adem_dir):
    import dialeval

    path, model = adem_dir
    rows = rows_for(8)
    samples = [{"id": r.id, "context": r.context, "response": r.response, "references": r.references}
               for r in rows]
    result = dialeval.score(samples, ["adem"], adem_model=path)
    got = np.array([rec["scores"]["adem"] for rec in result.records()])
    want = model.predict([r.context for r in rows], [r.references for r in rows], [r.response for r in rows])
    # the metric lifts what falls under 1.2 above the floor of 1 (metrics.softfloor); the rest as predicted
    from dialeval.metrics.softfloor import lift_range

    assert np.allclose(got, lift_range(want, 1.0, 5.0, top=False))
    assert np.all(got > 1.0) and np.array_equal(got[want >= 1.2], want[want >= 1.2])
    assert "encoder:hred:" in result.signatures["adem"]
    cfg = json.loads(open(os.path.join(path, "config.json")).read())
    assert cfg["state"]["scale_mapping_"]["datasets"] == [] or "rule" in cfg["state"]["scale_mapping_"]


def test_hred_model_is_one_folder_that_survives_moving_its_encoder(encoder_dir, tmp_path):
    """The VHRED encoder is copied into the ADEM folder: the model scores the same after the
    training-time encoder folder is gone, and a changed copy of it is refused."""
    enc = tmp_path / "enc"
    shutil.copytree(encoder_dir, enc)
    model = Adem(encoder=f"hred:{enc}", pca_dims=4, max_epochs=5).fit(rows_for())
    saved = tmp_path / "adem"
    model.save(saved)
    rows = rows_for(6)
    args = ([r.context for r in rows], [r.references for r in rows], [r.response for r in rows])
    want = model.predict(*args)
    shutil.rmtree(enc)
    moved = tmp_path / "moved"
    os.replace(saved, moved)
    loaded = Adem.load(moved)
    assert loaded.encoder == f"hred:{moved / 'encoder'}"
    assert np.array_equal(loaded.predict(*args), want)
    with open(moved / "encoder" / "arrays.npz", "ab") as handle:
        handle.write(b"x")
    with pytest.raises(DialevalError, match="changed since the artifact was saved"):
        Adem.load(moved)


def assert_saves_the_same_bytes(folder, tmp_path):
    """`Adem.load(folder).save(...)` writes every file `save` writes with the folder's bytes (a
    shipped folder also holds card.json, which packaging adds and the manifest lists)."""
    again = tmp_path / "again"
    Adem.load(folder).save(again)
    written = sorted(str(p.relative_to(again)) for p in again.rglob("*") if p.is_file())
    assert "config.json" in written and "arrays.npz" in written
    for rel in written:
        if rel != "manifest.json":
            assert (again / rel).read_bytes() == (folder / rel).read_bytes(), rel
    mine, theirs = (json.loads((f / "manifest.json").read_text()) for f in (again, folder))
    assert {k: v for k, v in theirs.items() if k != "files"} == {k: v for k, v in mine.items() if k != "files"}
    assert mine["files"] == {k: v for k, v in theirs["files"].items() if k != "card.json"}


@pytest.mark.parametrize("variant", ["adem", "c_adem", "r_adem"])
def test_shipped_folders_load_and_save_to_the_same_bytes(variant, tmp_path):
    """The fitted parts (head, copy term, encoder state) flatten back to the names and values
    the shipped folders hold: config.json, arrays.npz and the manifest's entries, byte for byte."""
    folder = REPO / "packages" / "dialeval-models" / "src" / "dialeval_models" / variant
    need(folder / "config.json")
    assert_saves_the_same_bytes(folder, tmp_path)


def test_a_trained_hred_model_loads_and_saves_its_state_unchanged(adem_dir, tmp_path):
    """The same for a model with a bundled hierarchical encoder, but for the `encoder` parameter,
    which a loaded model points at its folder's copy of the encoder."""
    from pathlib import Path

    folder, again = Path(adem_dir[0]), tmp_path / "again"
    Adem.load(folder).save(again)
    for rel in ("arrays.npz", "encoder/arrays.npz", "encoder/config.json", "encoder/manifest.json"):
        assert (again / rel).read_bytes() == (folder / rel).read_bytes(), rel
    mine, theirs = (json.loads((f / "config.json").read_text()) for f in (again, folder))
    assert mine["state"] == theirs["state"] and mine["params"]["encoder"] == f"hred:{folder / 'encoder'}"


def test_wrong_variant_is_refused(adem_dir):
    import dialeval

    with pytest.raises(DialevalError, match="holds a adem model"):
        dialeval.score([{"response": "hi", "references": ["hello"]}], ["c_adem"], adem_model=adem_dir[0])


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.run([sys.executable, "-m", "dialeval.cli", *args], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("damage", ["weights", "config", "foreign"])
def test_broken_or_foreign_folder_gives_one_line_and_exit_2(adem_dir, tmp_path, damage):
    path = tmp_path / "model"
    if damage == "foreign":
        # a sentence-transformers folder (no dialeval manifest) passed as an ADEM model
        path.mkdir()
        (path / "modules.json").write_text("[]")
        (path / "config.json").write_text("{}")
    else:
        shutil.copytree(adem_dir[0], path)
        if damage == "weights":
            flip_byte(path / "arrays.npz", -10)
        else:
            (path / "config.json").unlink()
    sample = tmp_path / "s.jsonl"
    sample.write_text(json.dumps({"response": "hi", "references": ["hello"], "context": ["hey"]}) + "\n")
    proc = _cli("score", str(sample), "--metrics", "adem", "--adem-model", str(path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dialeval: error: ")
    assert {"weights": "changed since", "config": "missing", "foreign": "not a dialeval artifact"}[damage] in lines[0]


def test_encoder_folder_that_changed_is_refused(encoder_dir, tmp_path):
    path = tmp_path / "enc"
    shutil.copytree(encoder_dir, path)
    flip_byte(path / "arrays.npz", -10)
    with pytest.raises(DialevalError, match="changed since"):
        DialogueEncoder.load(path)


# -- the rated sets ------------------------------------------------------------------------

def test_predictive_engagement_gets_dailydialog_references():
    from dialeval.metrics.learned.adem.data import load_rated_set

    need(DATA / "predictive-engagement")
    need(DATA / "dailydialog" / "test.zip")
    rows = load_rated_set("predictive-engagement", str(DATA / "predictive-engagement"),
                          dailydialog_test=str(DATA / "dailydialog" / "test.zip"))
    assert len(rows) > 300 and all(len(r.references) == 1 for r in rows)
    norm = lambda t: " ".join(t.lower().split())  # noqa: E731
    assert all(norm(r.response) != norm(r.references[0]) for r in rows)
    assert all(1 <= r.score <= 5 for r in rows)


def test_usr_ground_truth_is_never_a_candidate():
    from dialeval.metrics.learned.adem.data import load_rated_set

    need(DATA / "usr")
    rows = load_rated_set("usr-pc", str(DATA / "usr"))
    assert len(rows) == 240 and not any(r.system == "Original Ground Truth" for r in rows)
    fed = load_rated_set("fed-turn", str(need(DATA / "fed")))
    assert all(r.references == [] for r in fed) and min(r.score for r in fed) >= 1


def rated_file(tmp_path, n=40):
    """`n` rated rows as the JSONL file `train adem --data` reads."""
    data = tmp_path / "rated.jsonl"
    with open(data, "w") as handle:
        for r in rows_for(n):
            handle.write(json.dumps({"id": r.id, "context": r.context, "response": r.response,
                                     "references": r.references, "ratings": {"score": [r.score]}}) + "\n")
    return data


@pytest.mark.slow
def test_cli_trains_from_a_rated_file_and_scores(encoder_dir, tmp_path):
    data = rated_file(tmp_path)
    out = tmp_path / "adem"
    proc = _cli("train", "adem", "--data", str(data), "--encoder", f"hred:{encoder_dir}", "--pca-dims", "4",
                "--max-epochs", "5", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["rows"] == 40 and info["rows"] == sum(info["rows_split"].values())
    proc = _cli("score", str(data), "--metrics", "adem", "--adem-model", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    value = json.loads(proc.stdout)["systems"]
    assert all(1 - 2 < v["adem"] < 5 + 2 for v in value.values())


@pytest.mark.slow
def test_cli_search_records_every_candidate_and_keeps_the_best(encoder_dir, tmp_path):
    data = rated_file(tmp_path)
    out = tmp_path / "adem"
    proc = _cli("train", "adem", "--data", str(data), "--encoder", f"hred:{encoder_dir}", "--search",
                "--max-epochs", "3", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    tried = json.loads(proc.stdout)["search"]
    assert [(t["pca_dims"], t["lr"]) for t in tried] == [(7, 0.01), (7, 0.001), (50, 0.01), (50, 0.001),
                                                          (0, 0.01), (0, 0.001)]
    kept = Adem.load(str(out))
    best = max(tried, key=lambda t: t["val_spearman"])
    assert (kept.pca_dims, kept.lr) == (best["pca_dims"], best["lr"])
