"""Word vectors: reading GloVe / word2vec / fastText files fast, and a memory-mapped cache.

nlg-eval needs gensim and a converted 6 GB model; a user here points at the text file they
have. Parsing 120 million floats with a Python loop takes minutes, so the numbers are handed
to a C parser (pandas' CSV reader) in one call and the result is cached as a `.npy` that
later runs memory-map, so a second load costs milliseconds however large the file.

Formats, detected from the file:

- GloVe text: `word v1 ... vD` per line, no header;
- word2vec / fastText `.vec` text: the same after a header line `N D`;
- word2vec binary: header line `N D`, then per word `word<space>` and D little-endian float32.

A line that does not fit (wrong number of values, a value that is not a number) stops the
load with an `InputError` naming the file and line: a silently shifted matrix would give
plausible but wrong scores.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

import numpy as np

from ...errors import DialevalError, InputError

def cache_base() -> str:
    """dialeval's cache folder (see `dialeval.models.cache`)."""
    from ...models.cache import cache_dir

    return str(cache_dir())


def cache_root() -> str:
    return os.path.join(cache_base(), "vectors")


@dataclass
class WordVectors:
    """A vocabulary and a float32 matrix (possibly memory-mapped); `source` names where they came from.

    `unk` is nlg-eval's out-of-vocabulary vector: the mean of all vectors (float32).
    """

    words: list[str]
    matrix: np.ndarray
    source: str = ""
    digest: str = ""
    index: dict[str, int] = field(default_factory=dict)
    name: str = ""   # the name it was asked for by (glove-6b-50d, minilm), shown in signatures

    def __post_init__(self):
        if not self.index:
            index: dict[str, int] = {}
            for i, w in enumerate(self.words):
                index.setdefault(w, i)   # the first of duplicated words wins
            self.index = index
        self._unk = None

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    @property
    def unk(self) -> np.ndarray:
        if self._unk is None:
            self._unk = np.asarray(self.matrix, dtype=np.float32).mean(axis=0, dtype=np.float32)
        return self._unk

    def lookup(self, tokens: list[str]) -> np.ndarray:
        """Row ids of `tokens`; -1 for out-of-vocabulary."""
        get = self.index.get
        return np.fromiter((get(t, -1) for t in tokens), dtype=np.int64, count=len(tokens))


# -- reading --------------------------------------------------------------------------------

def _header(first_line: bytes) -> tuple[int, int] | None:
    parts = first_line.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


def _looks_binary(sample: bytes) -> bool:
    return any(b < 9 or 13 < b < 32 for b in sample)


def detect_format(path: str) -> str:
    """`glove`, `word2vec` (text with header) or `word2vec-binary`."""
    with open(path, "rb") as handle:
        first = handle.readline()
        rest = handle.read(4096)
    if _header(first) is None:
        return "glove"
    return "word2vec-binary" if _looks_binary(rest) else "word2vec"


def read_vector_file(path: str | os.PathLike, fmt: str | None = None) -> tuple[list[str], np.ndarray, str]:
    """(words, float32 matrix, format) parsed from `path`; no caching."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise InputError("no such word-vector file", path=path)
    fmt = fmt or detect_format(path)
    if fmt == "word2vec-binary":
        words, matrix = _read_binary(path)
    elif fmt in ("glove", "word2vec"):
        words, matrix = _read_text(path, skip_header=fmt == "word2vec")
    else:
        raise DialevalError(f"unknown word-vector format {fmt!r}; use glove, word2vec or word2vec-binary")
    if not words:
        raise InputError("no vectors in the file", path=path)
    return words, matrix, fmt


def _read_text(path: str, skip_header: bool) -> tuple[list[str], np.ndarray]:
    with open(path, "rb") as handle:
        header = handle.readline() if skip_header else b""
        first = handle.readline().rstrip(b"\r\n")
    expected = None
    if skip_header:
        count, expected = _header(header)  # type: ignore[misc]
    dim = expected if expected is not None else len(first.rstrip(b" ").split(b" ")) - 1
    offset = 1 + skip_header

    def body() -> bytes:
        with open(path, "rb") as handle:
            if skip_header:
                handle.readline()
            return handle.read()
    if dim <= 0:
        _validate_lines(path, body(), dim, offset=offset)
    try:
        words, matrix = _parse_fast(path, dim, skiprows=int(skip_header))
    except Exception:
        _validate_lines(path, body(), dim, offset=offset)
        raise
    if np.isnan(matrix).any():
        _validate_lines(path, body(), dim, offset=offset)
    if skip_header and count != len(words):
        raise InputError(f"header says {count} vectors but the file holds {len(words)}", path=path, line=1)
    return words, matrix


def _parse_fast(path: str, dim: int, skiprows: int) -> tuple[list[str], np.ndarray]:
    """Words and vectors of `word v1 .. vD` lines with the C CSV parser (one call, no Python loop per value)."""
    import csv

    from ...optional import require

    pd = require("pandas", "reading word-vector text files", "embeddings")
    frame = pd.read_csv(path, sep=" ", header=None, quoting=csv.QUOTE_NONE, na_filter=False,
                        engine="c", encoding="utf-8", skip_blank_lines=True, skiprows=skiprows,
                        dtype={0: object, **{i: np.float32 for i in range(1, dim + 1)}})
    if frame.shape[1] == dim + 2 and (frame.iloc[:, -1] == "").all():   # lines ending in a space
        frame = frame.iloc[:, :-1]
    if frame.shape[1] != dim + 1:
        raise ValueError("ragged lines")
    words = frame[0].astype(str).tolist()
    matrix = np.ascontiguousarray(frame.iloc[:, 1:].to_numpy(dtype=np.float32))
    return words, matrix


def _validate_lines(path: str, body: bytes, dim: int, offset: int) -> None:
    """The slow path, run only when the fast parser failed: find the first bad line and name it."""
    if dim <= 0:
        raise InputError("the first vector line holds a word but no values", path=path, line=offset)
    for number, raw in enumerate(body.split(b"\n"), offset):
        line = raw.rstrip(b"\r")
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 at column {exc.start + 1}", path=path, line=number) from None
        parts = text.rstrip(" ").split(" ")
        if len(parts) - 1 != dim:
            raise InputError(f"expected a word and {dim} values, found {len(parts) - 1} values",
                             path=path, line=number)
        for column, value in enumerate(parts[1:], 1):
            try:
                number_value = float(value)
            except ValueError:
                raise InputError(f"value {column} is not a number: {value!r}", path=path, line=number) from None
            if number_value != number_value:
                raise InputError(f"value {column} is NaN", path=path, line=number)
    raise InputError("could not parse the vectors", path=path)


def _read_binary(path: str) -> tuple[list[str], np.ndarray]:
    with open(path, "rb") as handle:
        data = handle.read()
    end = data.find(b"\n")
    count, dim = _header(data[:end])  # type: ignore[misc]
    width = 4 * dim
    matrix = np.empty((count, dim), dtype=np.float32)
    words: list[str] = []
    pos = end + 1
    for i in range(count):
        while pos < len(data) and data[pos] in (10, 13):   # the newline some writers add after a vector
            pos += 1
        space = data.find(b" ", pos)
        if space < 0 or space + 1 + width > len(data):
            raise InputError(f"vector {i + 1} of {count} is truncated (file ends at byte {len(data)})",
                             path=path, line=i + 2)
        try:
            words.append(data[pos:space].decode("utf-8"))
        except UnicodeDecodeError:
            raise InputError(f"word of vector {i + 1} is not valid UTF-8", path=path, line=i + 2) from None
        matrix[i] = np.frombuffer(data, dtype="<f4", count=dim, offset=space + 1)
        pos = space + 1 + width
    return words, matrix


# -- cache ----------------------------------------------------------------------------------

def file_key(path: str) -> str:
    """Cache key: the file's real path, size, mtime and the sha256 of its first and last MiB."""
    st = os.stat(path)
    digest = hashlib.sha256(f"{os.path.realpath(path)}|{st.st_size}|{st.st_mtime_ns}".encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(1 << 20))
        if st.st_size > 2 << 20:
            handle.seek(-(1 << 20), os.SEEK_END)
            digest.update(handle.read())
    return digest.hexdigest()[:32]


def load_vectors(path: str | os.PathLike, *, cache: bool = True, cache_dir: str | None = None) -> WordVectors:
    """Word vectors from a file or a trained vectors artifact folder, through the cache."""
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "meta.json")) and os.path.isfile(os.path.join(path, "vectors.npy")):
            return load_vectors_folder(path)
        return load_vectors_artifact(path)
    if not os.path.isfile(path):
        raise InputError("no such word-vector file", path=path)
    key = file_key(path)
    folder = os.path.join(cache_dir or cache_root(), key)
    if cache:
        cached = _load_cached(folder)
        if cached is not None:
            words, matrix = cached
            return WordVectors(words, matrix, source=path, digest=key)
    words, matrix, fmt = read_vector_file(path)
    if cache:
        _save_cache(folder, words, matrix, {"source": os.path.realpath(path), "format": fmt})
        cached = _load_cached(folder)
        if cached is not None:
            words, matrix = cached
    return WordVectors(words, matrix, source=path, digest=key)


def load_vectors_folder(folder: str | os.PathLike) -> WordVectors:
    """A memory-mapped vectors folder (vectors.npy, vocab.txt, meta.json) as the cache holds
    them, e.g. the prepared packaged GloVe; its digest is the one meta.json records."""
    folder = os.fspath(folder)
    cached = _load_cached(folder)
    if cached is None:
        raise DialevalError(f"{folder}: vectors.npy, vocab.txt and meta.json disagree or cannot be read")
    with open(os.path.join(folder, "meta.json"), encoding="utf-8") as handle:
        meta = json.load(handle)
    words, matrix = cached
    digest = meta.get("digest") or hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()
    return WordVectors(words, matrix, source=folder, digest=digest[:32])


def _load_cached(folder: str) -> tuple[list[str], np.ndarray] | None:
    try:
        with open(os.path.join(folder, "meta.json"), encoding="utf-8") as handle:
            meta = json.load(handle)
        matrix = np.load(os.path.join(folder, "vectors.npy"), mmap_mode="r", allow_pickle=False)
        with open(os.path.join(folder, "vocab.txt"), encoding="utf-8") as handle:
            words = handle.read().split("\n")
    except (OSError, ValueError):
        return None
    if words and words[-1] == "" and len(words) == matrix.shape[0] + 1:
        words.pop()
    if len(words) != matrix.shape[0] or meta.get("rows") != matrix.shape[0]:
        return None
    return words, matrix


def _save_cache(folder: str, words: list[str], matrix: np.ndarray, meta: dict) -> None:
    """Write the cache folder atomically; a cache that cannot be written is simply skipped."""
    import shutil
    import tempfile

    if any("\n" in w for w in words):
        return
    try:
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(folder))
        from ...data.writers import current_umask

        os.chmod(staging, 0o777 & ~current_umask())   # mkdtemp gives 0700 whatever the umask
        np.save(os.path.join(staging, "vectors.npy"), np.ascontiguousarray(matrix, dtype=np.float32))
        with open(os.path.join(staging, "vocab.txt"), "w", encoding="utf-8") as handle:
            handle.write("\n".join(words))
        with open(os.path.join(staging, "meta.json"), "w", encoding="utf-8") as handle:
            json.dump({**meta, "rows": int(matrix.shape[0]), "dim": int(matrix.shape[1])}, handle)
        try:
            os.replace(staging, folder)
        except OSError:   # another process cached it first
            shutil.rmtree(staging, ignore_errors=True)
    except OSError:
        return


# -- trained vectors artifacts --------------------------------------------------------------

ARTIFACT_KIND = "word-vectors"


def save_vectors_artifact(directory: str | os.PathLike, words: list[str], matrix: np.ndarray,
                          config: dict) -> str:
    """A vectors artifact: config.json, arrays.npz (`vectors`), vocab.txt, manifest.json."""
    import tempfile

    from ...models.store import save_artifact

    if any("\n" in w or w == "" for w in words):
        raise DialevalError("a word holds a newline or is empty; cannot store it in vocab.txt")
    with tempfile.TemporaryDirectory() as tmp:
        vocab = os.path.join(tmp, "vocab.txt")
        with open(vocab, "w", encoding="utf-8") as handle:
            handle.write("\n".join(words) + "\n")
        config = {**config, "rows": len(words), "dim": int(matrix.shape[1])}
        return save_artifact(directory, ARTIFACT_KIND, config,
                             arrays={"vectors": np.asarray(matrix, dtype=np.float32)},
                             files={"vocab.txt": vocab})


def load_vectors_artifact(directory: str | os.PathLike) -> WordVectors:
    from ...models.store import load_artifact

    config, arrays, folder = load_artifact(directory, kind=ARTIFACT_KIND)
    with open(os.path.join(folder, "vocab.txt"), encoding="utf-8") as handle:
        words = handle.read().split("\n")[:-1]
    matrix = arrays.get("vectors")
    if matrix is None or matrix.shape != (len(words), config.get("dim")):
        raise DialevalError(f"{folder}: vectors and vocab.txt disagree in size")
    manifest_digest = hashlib.sha256(open(os.path.join(folder, "manifest.json"), "rb").read()).hexdigest()[:32]
    return WordVectors(words, matrix.astype(np.float32, copy=False), source=os.fspath(directory),
                       digest=manifest_digest)
