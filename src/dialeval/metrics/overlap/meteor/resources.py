"""METEOR 1.5's English data (function words, non-breaking prefixes, WordNet synonyms, the
paraphrase table), found on disk and turned once into a fast local cache.

The files are read from the METEOR 1.5 distribution itself, never bundled: an installed
`pycocoevalcap==1.2` (its `meteor/meteor-1.5.jar` is a zip archive holding the word lists;
`meteor/data/paraphrase-en.gz` lies beside it) or a folder the user names. The paraphrase table
has 5.3 million entries; parsing its 270 MB of text takes tens of seconds, so it is parsed once
into flat integer arrays (`.npy`, memory-mapped on load), keyed by the sha256 of the source
files, and every later run starts in a fraction of a second.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ....errors import DialevalError
from .normalize import java_tokens, parse_nonbreaking

ENV_RESOURCES = "DIALEVAL_METEOR_RESOURCES"
JAR = "meteor-1.5.jar"
LEXICON = {  # name inside the jar -> role
    "function/english.words": "function words",
    "nonbreaking/english.prefixes": "non-breaking prefixes",
    "synonym/english.exceptions": "WordNet exceptions",
    "synonym/english.synsets": "WordNet synsets",
}
PARAPHRASE = ("data/paraphrase-en.gz", "paraphrase-en.gz")
CACHE_VERSION = 1
HASH_MUL = np.uint64(0x100000001B3)


class MeteorResourceError(DialevalError):
    pass


def _missing(what: str, where: str) -> MeteorResourceError:
    return MeteorResourceError(
        f"METEOR resource missing: {what} (looked in {where}); provide it either by installing "
        f"pycocoevalcap (pip install pycocoevalcap==1.2) or with --meteor-resources DIR "
        f"(a folder holding {JAR} and data/paraphrase-en.gz)")


# -- locating the files ---------------------------------------------------------------------

@dataclass(frozen=True)
class Sources:
    """Where the lexicon (a jar, or a folder of its extracted files) and the table are."""

    lexicon: Path          # the jar, or the folder holding function/, nonbreaking/, synonym/
    paraphrase: Path

    def read_lexicon(self, name: str) -> bytes:
        if self.lexicon.is_dir():
            return (self.lexicon / name).read_bytes()
        with zipfile.ZipFile(self.lexicon) as jar:
            return jar.read(name)


def _installed_dir() -> Path | None:
    import importlib.util

    try:
        spec = importlib.util.find_spec("pycocoevalcap")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        candidate = Path(root) / "meteor"
        if candidate.is_dir():
            return candidate
    return None


def locate(path: str | os.PathLike | None = None) -> Sources:
    """The METEOR files from `path`, $DIALEVAL_METEOR_RESOURCES or an installed pycocoevalcap."""
    given = path or os.environ.get(ENV_RESOURCES)
    if given:
        root = Path(given).expanduser()
        if not root.is_dir():
            raise _missing(f"folder {root}", "--meteor-resources")
        where = str(root)
    else:
        found = _installed_dir()
        if found is None:
            raise _missing(f"{JAR} (pycocoevalcap is not installed)", "the Python environment")
        root, where = found, str(found)
    jar = root / JAR
    if jar.is_file():
        lexicon = jar
        try:
            with zipfile.ZipFile(jar) as z:
                names = set(z.namelist())
        except zipfile.BadZipFile:
            raise MeteorResourceError(f"{jar} is not a readable jar (zip) file") from None
        for name in LEXICON:
            if name not in names:
                raise _missing(f"{name} inside {jar}", where)
    else:
        lexicon = root
        for name in LEXICON:
            if not (root / name).is_file():
                raise _missing(f"{JAR} (or its extracted {name})", where)
    for name in PARAPHRASE:
        if (root / name).is_file():
            return Sources(lexicon, root / name)
    raise _missing(PARAPHRASE[0], where)


# -- cache ------------------------------------------------------------------------------------

def cache_root() -> Path:
    if os.environ.get("DIALEVAL_CACHE_DIR"):
        return Path(os.environ["DIALEVAL_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dialeval"


def _file_sha256(path: Path, stamps: Path) -> str:
    """sha256 of a file, remembered per (path, size, mtime) so that a run need not re-read it."""
    st = path.stat()
    stamp = hashlib.sha1(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
    stamp_file = stamps / stamp
    if stamp_file.is_file():
        return stamp_file.read_text().strip()
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    stamps.mkdir(parents=True, exist_ok=True)
    tmp = stamps / f".{stamp}.{os.getpid()}"
    tmp.write_text(digest.hexdigest())
    os.replace(tmp, stamp_file)
    return digest.hexdigest()


def cache_dir_for(sources: Sources) -> Path:
    root = cache_root() / "meteor"
    stamps = root / "stamps"
    if sources.lexicon.is_dir():
        lex = hashlib.sha256(b"".join(sources.read_lexicon(n) for n in LEXICON)).hexdigest()
    else:
        lex = _file_sha256(sources.lexicon, stamps)
    para = _file_sha256(sources.paraphrase, stamps)
    key = hashlib.sha256(f"v{CACHE_VERSION}|{lex}|{para}".encode()).hexdigest()[:24]
    return root / key


_ARRAYS = ("para_a_off", "para_a_ids", "para_b_off", "para_b_ids", "para_keys", "para_order",
           "syn_off", "syn_ids")
_TEXTS = ("para_vocab.txt", "syn_words.txt", "function.words", "nonbreaking.prefixes",
          "exceptions.txt")


def phrase_keys(ids: np.ndarray, off: np.ndarray) -> np.ndarray:
    """64-bit polynomial hash of each phrase ids[off[k]:off[k+1]] (ids are >= 0)."""
    lengths = np.diff(off)
    keys = np.zeros(len(lengths), dtype=np.uint64)
    for k in range(int(lengths.max(initial=0))):
        rows = np.flatnonzero(lengths > k)
        keys[rows] = keys[rows] * HASH_MUL + (ids[off[rows] + k].astype(np.uint64) + np.uint64(1))
    return keys


def _parse_paraphrases(path: Path) -> tuple[list[str], dict[str, np.ndarray]]:
    """(vocabulary, arrays) of the table: entries are (probability, phrase, paraphrase) lines."""
    vocab: dict[str, int] = {}
    sides: list[list[np.ndarray]] = [[], []]
    lens: list[list[np.ndarray]] = [[], []]
    buf_ids: list[list[int]] = [[], []]
    buf_len: list[list[int]] = [[], []]
    setdefault = vocab.setdefault

    def flush() -> None:
        for s in (0, 1):
            sides[s].append(np.asarray(buf_ids[s], dtype=np.int32))
            lens[s].append(np.asarray(buf_len[s], dtype=np.int32))
            buf_ids[s].clear()
            buf_len[s].clear()

    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as handle:
        line_no = 0
        for line in handle:
            role = line_no % 3
            line_no += 1
            if role == 0:
                continue
            words = java_tokens(line)
            ids = [setdefault(w, len(vocab)) for w in words]
            buf_ids[role - 1].extend(ids)
            buf_len[role - 1].append(len(ids))
            if role == 2 and len(buf_len[1]) >= 500_000:
                flush()
    if line_no % 3:
        raise MeteorResourceError(f"{path}: truncated paraphrase table ({line_no} lines, not a multiple of 3)")
    flush()
    arrays: dict[str, np.ndarray] = {}
    for s, name in ((0, "a"), (1, "b")):
        length = np.concatenate(lens[s])
        off = np.zeros(len(length) + 1, dtype=np.int64)
        np.cumsum(length, out=off[1:])
        arrays[f"para_{name}_off"] = off
        arrays[f"para_{name}_ids"] = np.concatenate(sides[s])
    keys = phrase_keys(arrays["para_a_ids"], arrays["para_a_off"])
    order = np.argsort(keys, kind="stable").astype(np.int32)   # file order within a key
    arrays["para_keys"] = keys[order]
    arrays["para_order"] = order
    return list(vocab), arrays


def _parse_synsets(text: str) -> tuple[list[str], dict[str, np.ndarray]]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    words = [ln.rstrip("\r") for ln in lines[0::2]]
    sets = [[int(t) for t in java_tokens(ln)] for ln in lines[1::2]]
    off = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sets], out=off[1:])
    ids = np.fromiter((i for s in sets for i in s), dtype=np.int64, count=int(off[-1]))
    return words[:len(sets)], {"syn_off": off, "syn_ids": ids}


def build_cache(sources: Sources, target: Path) -> None:
    """Parse every resource and write the cache folder atomically (a temp folder, renamed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        vocab, arrays = _parse_paraphrases(sources.paraphrase)
        # The jar reads the synset list in the platform charset (ASCII under LC_ALL=C); the
        # file is pure ASCII, so UTF-8 decoding gives the same strings.
        syn_words, syn_arrays = _parse_synsets(sources.read_lexicon("synonym/english.synsets").decode("utf-8"))
        arrays.update(syn_arrays)
        texts = {
            "para_vocab.txt": "\n".join(vocab),
            "syn_words.txt": "\n".join(syn_words),
            "function.words": sources.read_lexicon("function/english.words").decode("utf-8"),
            "nonbreaking.prefixes": sources.read_lexicon("nonbreaking/english.prefixes").decode("utf-8"),
            "exceptions.txt": sources.read_lexicon("synonym/english.exceptions").decode("utf-8"),
        }
        for name, value in arrays.items():
            np.save(tmp / f"{name}.npy", value, allow_pickle=False)
        for name, value in texts.items():
            (tmp / name).write_text(value, encoding="utf-8")
        manifest = {"version": CACHE_VERSION, "lexicon": str(sources.lexicon),
                    "para_max_len": int(np.diff(arrays["para_a_off"]).max(initial=0)),
                    "paraphrase": str(sources.paraphrase),
                    "files": {p.name: p.stat().st_size for p in sorted(tmp.iterdir())}}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
        try:
            os.replace(tmp, target)
        except OSError:
            if not _cache_ok(target):      # another process won the race with a bad folder
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _cache_ok(folder: Path) -> bool:
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    files = manifest.get("files", {})
    if manifest.get("version") != CACHE_VERSION:
        return False
    expected = {f"{a}.npy" for a in _ARRAYS} | set(_TEXTS)
    if not expected <= set(files):
        return False
    for name, size in files.items():
        p = folder / name
        if not p.is_file() or p.stat().st_size != size:
            return False
    return True


# -- loaded tables ----------------------------------------------------------------------------

class ParaphraseTable:
    """Phrase -> paraphrases, looked up by n-gram hash over memory-mapped arrays."""

    def __init__(self, folder: Path):
        load = lambda n: np.load(folder / f"{n}.npy", mmap_mode="r")  # noqa: E731
        self.a_off, self.a_ids = load("para_a_off"), load("para_a_ids")
        self.b_off, self.b_ids = load("para_b_off"), load("para_b_ids")
        self.keys, self.order = load("para_keys"), load("para_order")
        words = (folder / "para_vocab.txt").read_text(encoding="utf-8").split("\n")
        self.vocab = dict(zip(words, range(len(words))))
        self.max_len = int(json.loads((folder / "manifest.json").read_text())["para_max_len"])

    def ids(self, words: tuple[str, ...]) -> list[int]:
        get = self.vocab.get
        return [get(w, -1) for w in words]

    def paths(self, sentences: list[list[int]]) -> list[list[list[tuple[int, tuple[int, ...]]]]]:
        """For every sentence and start position, the (phrase length, paraphrase ids) entries
        whose phrase starts there, ordered by phrase length, then table order (the jar's
        transducer order)."""
        out: list[list[list[tuple[int, tuple[int, ...]]]]] = [[[] for _ in s] for s in sentences]
        if not sentences or self.max_len == 0:
            return out
        lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        flat = np.fromiter((i for s in sentences for i in s), dtype=np.int64, count=int(lengths.sum()))
        sent_of = np.repeat(np.arange(len(sentences)), lengths)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        pos = np.arange(len(flat)) - starts[sent_of]
        end = starts[sent_of] + lengths[sent_of]
        key = np.zeros(len(flat), dtype=np.uint64)
        alive = np.ones(len(flat), dtype=bool)
        found_span, found_len, found_lo, found_hi = [], [], [], []
        for k in range(self.max_len):
            idx = np.arange(len(flat)) + k
            alive &= idx < end
            ok = np.flatnonzero(alive)
            alive[ok] &= flat[idx[ok]] >= 0
            ok = np.flatnonzero(alive)
            if len(ok) == 0:
                break
            key[ok] = key[ok] * HASH_MUL + (flat[idx[ok]].astype(np.uint64) + np.uint64(1))
            lo = np.searchsorted(self.keys, key[ok], side="left")
            hi = np.searchsorted(self.keys, key[ok], side="right")
            hit = hi > lo
            found_span.append(ok[hit])
            found_len.append(np.full(int(hit.sum()), k + 1))
            found_lo.append(lo[hit])
            found_hi.append(hi[hit])
        if not found_span:
            return out
        span = np.concatenate(found_span)
        plen = np.concatenate(found_len)
        los = np.concatenate(found_lo)
        his = np.concatenate(found_hi)
        # order by (token position, phrase length) so each list is built in transducer order
        sort = np.lexsort((plen, span))
        flat_list = flat.tolist()
        for t in sort.tolist():
            p, L = int(span[t]), int(plen[t])
            phrase = flat_list[p:p + L]
            entries = np.sort(np.asarray(self.order[los[t]:his[t]]))
            bucket = out[int(sent_of[p])][int(pos[p])]
            for e in entries.tolist():
                a0, a1 = int(self.a_off[e]), int(self.a_off[e + 1])
                if a1 - a0 != L or self.a_ids[a0:a1].tolist() != phrase:
                    continue   # hash collision
                b0, b1 = int(self.b_off[e]), int(self.b_off[e + 1])
                bucket.append((L, tuple(self.b_ids[b0:b1].tolist())))
        return out


class SynonymTable:
    """WordNet synsets of a word, with the jar's morphological fallback for inflected forms."""

    _SUFFIXES = (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
                 ("shes", "sh"), ("men", "man"), ("ies", "y"), ("s", ""), ("ies", "y"),
                 ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""),
                 ("er", ""), ("est", ""), ("er", "e"), ("est", "e"))

    def __init__(self, folder: Path):
        words = (folder / "syn_words.txt").read_text(encoding="utf-8").split("\n")
        self.row = dict(zip(words, range(len(words))))
        self.off = np.load(folder / "syn_off.npy")
        self.ids = np.load(folder / "syn_ids.npy")
        self.bases: dict[str, list[str]] = {}
        lines = (folder / "exceptions.txt").read_text(encoding="utf-8").split("\n")
        for base, forms in zip(lines[0::2], lines[1::2]):
            for form in java_tokens(forms):
                self.bases.setdefault(form, []).append(base)
        self._memo: dict[str, frozenset[int]] = {}

    def synsets(self, word: str) -> frozenset[int]:
        r = self.row.get(word)
        if r is None:
            return frozenset()
        return frozenset(self.ids[self.off[r]:self.off[r + 1]].tolist())

    def _morph(self, word: str) -> str:
        end = "ful" if word.endswith("ful") else ""
        if word.endswith("ss") or len(word) <= 2:
            return word
        for suffix, repl in self._SUFFIXES:
            if word.endswith(suffix):
                candidate = word[:len(word) - len(suffix)] + repl
                if candidate in self.row:
                    return candidate + end
        return ""

    def all_synsets(self, word: str) -> frozenset[int]:
        """Own synsets plus those of its base forms (exception list, else suffix rules)."""
        got = self._memo.get(word)
        if got is None:
            bases = self.bases.get(word)
            if bases is not None:
                stem_sets: frozenset[int] = frozenset().union(*(self.synsets(b) for b in bases))
            else:
                stem_sets = self.synsets(self._morph(word))
            got = self.synsets(word) | stem_sets
            self._memo[word] = got
        return got


@dataclass
class MeteorResources:
    function_words: frozenset[str]
    nonbreaking: dict[str, int]
    synonyms: SynonymTable
    paraphrases: ParaphraseTable
    cache: Path


_LOADED: dict[str, MeteorResources] = {}


def load_resources(path: str | os.PathLike | None = None, *, build: bool = True) -> MeteorResources:
    """Locate, cache (first use only) and load the English resources; memoised per process."""
    sources = locate(path)
    folder = cache_dir_for(sources)
    memo_key = str(folder)
    if memo_key in _LOADED:
        return _LOADED[memo_key]
    if not _cache_ok(folder):
        if not build:
            raise MeteorResourceError(f"no METEOR cache at {folder}")
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        build_cache(sources, folder)
    function_words = frozenset(
        ln.rstrip("\r") for ln in (folder / "function.words").read_text(encoding="utf-8").split("\n"))
    res = MeteorResources(
        function_words=function_words,
        nonbreaking=parse_nonbreaking((folder / "nonbreaking.prefixes").read_text(encoding="utf-8")),
        synonyms=SynonymTable(folder),
        paraphrases=ParaphraseTable(folder),
        cache=folder,
    )
    _LOADED[memo_key] = res
    return res
