"""Word-vector files: formats, the memory-mapped cache, artifacts, and errors that name the line."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest

from dialeval.cli import main
from dialeval.errors import DialevalError, InputError
from dialeval.metrics.embedding.vectors import (detect_format, load_vectors, load_vectors_artifact,
                                                read_vector_file, save_vectors_artifact)

WORDS = ["the", "cat", "sat", "Émile", "."]
MATRIX = np.array([[0.5, -1.25, 2.0], [1e-3, 0.0, -3.5], [7.0, 8.0, 9.0], [-0.1, 0.2, -0.3], [1.5, 2.5, 3.5]],
                  dtype=np.float32)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))


def write_text(path, header: bool, trailing_space: bool = False):
    lines = [f"{w} " + " ".join(repr(float(x)) for x in row) + (" " if trailing_space else "")
             for w, row in zip(WORDS, MATRIX)]
    if header:
        lines.insert(0, f"{len(WORDS)} {MATRIX.shape[1]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_binary(path):
    with open(path, "wb") as handle:
        handle.write(f"{len(WORDS)} {MATRIX.shape[1]}\n".encode())
        for w, row in zip(WORDS, MATRIX):
            handle.write(w.encode("utf-8") + b" " + struct.pack(f"<{len(row)}f", *row) + b"\n")
    return path


@pytest.mark.parametrize("kind", ["glove", "word2vec", "fasttext-vec", "word2vec-binary", "glove-trailing-space"])
def test_every_format_reads_the_same_vectors(tmp_path, kind):
    if kind == "glove":
        path, fmt = write_text(tmp_path / "v.txt", header=False), "glove"
    elif kind == "glove-trailing-space":
        path, fmt = write_text(tmp_path / "v.txt", header=False, trailing_space=True), "glove"
    elif kind == "word2vec":
        path, fmt = write_text(tmp_path / "v.txt", header=True), "word2vec"
    elif kind == "fasttext-vec":
        path, fmt = write_text(tmp_path / "v.vec", header=True), "word2vec"
    else:
        path, fmt = write_binary(tmp_path / "v.bin"), "word2vec-binary"
    assert detect_format(str(path)) == fmt
    words, matrix, _ = read_vector_file(path)
    assert words == WORDS
    assert matrix.dtype == np.float32
    np.testing.assert_array_equal(matrix, MATRIX)


def test_cache_is_memory_mapped_and_follows_file_changes(tmp_path):
    path = write_text(tmp_path / "v.txt", header=False)
    first = load_vectors(path)
    second = load_vectors(path)
    assert isinstance(second.matrix, np.memmap)
    assert second.words == WORDS and second.digest == first.digest
    np.testing.assert_array_equal(np.asarray(second.matrix), MATRIX)
    assert len(os.listdir(tmp_path / "cache" / "vectors")) == 1
    # A changed file gets a new key, so stale cached vectors are never used.
    path.write_text(path.read_text().replace("7.0 8.0 9.0", "1.0 1.0 1.0"), encoding="utf-8")
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))
    third = load_vectors(path)
    assert third.digest != first.digest
    np.testing.assert_array_equal(np.asarray(third.matrix)[2], [1, 1, 1])


def test_unknown_word_vector_is_the_mean():
    from dialeval.metrics.embedding.vectors import WordVectors

    vectors = WordVectors(WORDS, MATRIX)
    np.testing.assert_allclose(vectors.unk, MATRIX.mean(axis=0), rtol=1e-6)
    assert vectors.lookup(["cat", "dog", "."]).tolist() == [1, -1, 4]


def test_wrong_dimension_names_the_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("a 1 2 3\nb 4 5 6\nc 7 8\nd 1 1 1\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_vector_file(path)
    assert f"{path}:3:" in str(err.value) and "expected a word and 3 values, found 2" in str(err.value)


def test_extra_value_in_word2vec_file_names_the_line(tmp_path):
    path = tmp_path / "bad.vec"
    path.write_text("3 2\na 1 2\nb 3 4 5\nc 6 7\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_vector_file(path)
    assert f"{path}:3:" in str(err.value) and "found 3 values" in str(err.value)


def test_malformed_value_names_the_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("a 1 2\nb 3 x4\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_vector_file(path)
    assert f"{path}:2:" in str(err.value) and "value 2 is not a number: 'x4'" in str(err.value)


def test_header_count_mismatch(tmp_path):
    path = tmp_path / "bad.vec"
    path.write_text("5 2\na 1 2\nb 3 4\n", encoding="utf-8")
    with pytest.raises(InputError, match="header says 5 vectors but the file holds 2"):
        read_vector_file(path)


def test_truncated_binary_file(tmp_path):
    path = write_binary(tmp_path / "v.bin")
    data = path.read_bytes()
    path.write_bytes(data[:-8])
    with pytest.raises(InputError, match="vector 5 of 5 is truncated"):
        read_vector_file(path)


def test_cli_reports_bad_vector_file_with_exit_2(tmp_path, capsys):
    vectors = tmp_path / "bad.txt"
    vectors.write_text("hello 1 2\nworld 3\n", encoding="utf-8")
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"response": "hello world", "references": ["hello"]}) + "\n", encoding="utf-8")
    code = main(["score", str(data), "--metrics", "emb_average", "--word-vectors", str(vectors)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == f"dialeval: error: {vectors}:2: expected a word and 2 values, found 1 values"


def test_artifact_round_trip_and_tamper_refusal(tmp_path):
    folder = save_vectors_artifact(tmp_path / "art", WORDS, MATRIX, {"method": "test"})
    loaded = load_vectors_artifact(folder)
    assert loaded.words == WORDS
    np.testing.assert_array_equal(loaded.matrix, MATRIX)
    with open(os.path.join(folder, "vocab.txt"), "a", encoding="utf-8") as handle:
        handle.write("extra\n")
    with pytest.raises(DialevalError, match="changed since the artifact was saved"):
        load_vectors(folder)
