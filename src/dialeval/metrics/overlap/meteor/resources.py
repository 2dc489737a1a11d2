"""METEOR 1.5's English data (function words, non-breaking prefixes, WordNet synonyms, the
paraphrase table), found on disk and turned once into a fast local cache.

The files are read from the METEOR 1.5 distribution itself, never bundled: an installed
`pycocoevalcap==1.2` (its `meteor/meteor-1.5.jar` is a zip archive holding the word lists;
`meteor/data/paraphrase-en.gz` lies beside it) or a folder the user names. The paraphrase table
has 5.3 million entries; parsing its 270 MB of text takes about 18 s of CPU even in bulk, so it is
parsed once into flat integer arrays (`.npy`, memory-mapped on load), keyed by the sha256 of the source
files, and every later run starts in a fraction of a second.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
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
CACHE_VERSION = 3
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
    from ....models.cache import cache_dir

    return cache_dir()


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


_ARRAYS = ("para_a_off", "para_a_ids", "para_b_off", "para_b_ids", "para_b_keys", "para_order",
           "para_ukeys", "para_ustart",
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


_STRAY_SPACE = ("\t", "\r", "\f", "  ", "\n ", " \n", "\n\n")


def _side_tokens(lines: list[str], vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and token counts of phrase lines, as the jar's StringTokenizer splits them.

    Table lines are words separated by single spaces; then one C-level split of all lines
    joined gives the tokens, and counting spaces gives the lengths. Lines with other
    whitespace (tabs, runs, leading or trailing spaces, empty lines) go through the general
    tokeniser.
    """
    if not lines:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    joined = "\n".join(lines)
    if lines[0] and lines[-1] and not (joined[0] == " " or joined[-1] == " ") \
            and not any(x in joined for x in _STRAY_SPACE):
        tokens = joined.replace("\n", " ").split(" ")
        lengths = np.fromiter(map(str.count, lines, itertools.repeat(" ")), dtype=np.int32, count=len(lines)) + 1
    else:
        split = [java_tokens(line) for line in lines]
        tokens = list(itertools.chain.from_iterable(split))
        lengths = np.fromiter(map(len, split), dtype=np.int32, count=len(split))
    for word in dict.fromkeys(tokens):     # Python-level work once per distinct word
        if word not in vocab:
            vocab[word] = len(vocab)
    ids = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int32, count=len(tokens))
    return ids, lengths


def _parse_paraphrases(path: Path) -> tuple[list[str], dict[str, np.ndarray]]:
    """(vocabulary, arrays) of the table: entries are (probability, phrase, paraphrase) lines.

    The 270 MB of text are read in blocks of whole lines; each block's phrase lines and
    paraphrase lines are tokenised in bulk (`_side_tokens`). Word ids are only compared for
    equality, so the order in which words get them does not matter.
    """
    vocab: dict[str, int] = {}
    ids: list[list[np.ndarray]] = [[], []]
    lens: list[list[np.ndarray]] = [[], []]
    line_no = 0
    rest = b""
    with gzip.open(path, "rb") as handle:
        while True:
            block = handle.read(1 << 25)
            data = rest + block
            if not block:
                if not data:
                    break
                cut = len(data)
            else:
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    rest = data
                    continue
            rest = data[cut:]
            lines = data[:cut].decode("utf-8").split("\n")
            if lines and lines[-1] == "" and block:
                lines.pop()                       # the block ends with a line break
            for side in (0, 1):
                first = (side + 1 - line_no) % 3  # lines with role side+1 (0 is the probability)
                got_ids, got_len = _side_tokens(lines[first::3], vocab)
                ids[side].append(got_ids)
                lens[side].append(got_len)
            line_no += len(lines)
            if not block:
                break
    if line_no % 3:
        raise MeteorResourceError(f"{path}: truncated paraphrase table ({line_no} lines, not a multiple of 3)")
    arrays: dict[str, np.ndarray] = {}
    for s, name in ((0, "a"), (1, "b")):
        length = np.concatenate(lens[s])
        off = np.zeros(len(length) + 1, dtype=np.int64)
        np.cumsum(length, out=off[1:])
        arrays[f"para_{name}_off"] = off
        arrays[f"para_{name}_ids"] = np.concatenate(ids[s])
    keys = phrase_keys(arrays["para_a_ids"], arrays["para_a_off"])
    order = np.argsort(keys, kind="stable").astype(np.int32)   # file order within a key
    arrays["para_b_keys"] = phrase_keys(arrays["para_b_ids"], arrays["para_b_off"])
    # one row per distinct phrase: its hash and where its run of entries starts in `order`
    sorted_keys = keys[order]
    first = np.flatnonzero(np.concatenate([[True], sorted_keys[1:] != sorted_keys[:-1]]))
    arrays["para_ukeys"] = sorted_keys[first]
    arrays["para_ustart"] = np.concatenate([first, [len(sorted_keys)]]).astype(np.int64)
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
                    "para_max_len": int(max(np.diff(arrays["para_a_off"]).max(initial=0),
                                            np.diff(arrays["para_b_off"]).max(initial=0))),
                    "paraphrase": str(sources.paraphrase),
                    "files": {p.name: p.stat().st_size for p in sorted(tmp.iterdir())}}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
        try:
            os.replace(tmp, target)
        except OSError:
            if not _cache_ok(target):      # another process won the race with a bad folder
                raise
        _prune_stale(target.parent)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _prune_stale(root: Path) -> None:
    """Remove caches written by other versions of this code (they are never read again)."""
    for folder in root.iterdir():
        manifest = folder / "manifest.json"
        if not manifest.is_file():
            continue
        try:
            version = json.loads(manifest.read_text()).get("version")
        except (OSError, ValueError):
            continue
        if version != CACHE_VERSION:
            shutil.rmtree(folder, ignore_errors=True)


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

def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting (numpy 2's hash-based unique is slow on large 64-bit arrays)."""
    values = np.sort(values)
    if len(values) == 0:
        return values
    return values[np.concatenate([[True], values[1:] != values[:-1]])]


def _unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) for uint64 keys: through the compiled kernel's hash
    table where it is built (it sorts only the distinct keys), else numpy's."""
    try:
        from .kernel import unique_inverse_u64
    except ImportError:
        pass
    else:
        return unique_inverse_u64(np.ascontiguousarray(values, dtype=np.uint64))
    uniq, inverse = np.unique(values, return_inverse=True)
    return uniq, inverse.reshape(-1)


def _member(values: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """values isin pool (uint64): through the compiled kernel's hash set where it is built,
    else by binary search in the sorted distinct pool (faster than np.isin for large 64-bit
    arrays)."""
    if len(pool) == 0 or len(values) == 0:
        return np.zeros(len(values), dtype=bool)
    try:
        from .kernel import isin_u64
    except ImportError:
        pass
    else:
        return isin_u64(np.ascontiguousarray(values, dtype=np.uint64), np.ascontiguousarray(pool, dtype=np.uint64))
    pool = _sorted_unique(pool)
    idx = np.searchsorted(pool, values)
    idx[idx == len(pool)] = 0
    return pool[idx] == values


def _code(sent: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """One 64-bit code per (sentence, phrase hash): only compared for equality, and a
    collision can only keep an extra candidate, which the aligner then ignores."""
    return keys * np.uint64(0x9E3779B97F4A7C15) + sent.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)


class ParaphraseTable:
    """Phrase -> paraphrases, looked up by n-gram hash over memory-mapped arrays.

    Entries are (phrase, paraphrase) pairs in table order; `order` sorts them by the phrase's
    hash so that all entries of one phrase are a contiguous run, in table order, and
    `ukeys`/`ustart` give each distinct hash and where its run starts.
    """

    def __init__(self, folder: Path):
        load = lambda n: np.load(folder / f"{n}.npy", mmap_mode="r")  # noqa: E731
        self.a_off, self.a_ids = load("para_a_off"), load("para_a_ids")
        self.b_off, self.b_keys = load("para_b_off"), load("para_b_keys")
        self.order = load("para_order")
        self.ukeys = np.load(folder / "para_ukeys.npy")     # small enough to search in memory
        self.ustart = load("para_ustart")
        words = (folder / "para_vocab.txt").read_text(encoding="utf-8").split("\n")
        self.vocab = dict(zip(words, range(len(words))))
        self.max_len = int(json.loads((folder / "manifest.json").read_text())["para_max_len"])

    def ids(self, words) -> list[int]:
        """The table's ids of `words` (-1 for a word the table does not hold)."""
        get = self.vocab.get
        return [get(w, -1) for w in words]

    def analyse(self, sentences: list[list[int]], pairs: np.ndarray) -> list[tuple[dict, dict]]:
        """Per sentence: (paraphrases, n-grams) as two dicts keyed by phrase hash.

        paraphrases: paraphrase hash -> [(position, phrase length, entry, paraphrase length)]
        for every table entry whose phrase occurs at that position; n-grams: hash -> positions.
        The same content as `rows`, in the form the pure-Python aligner reads; lists are in
        the jar's order (position, length, entry).
        """
        out: list[tuple[dict, dict]] = [({}, {}) for _ in sentences]
        lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        flat = np.fromiter((i for s in sentences for i in s), dtype=np.int64, count=int(lengths.sum()))
        para, ngrams = self.rows(lengths, flat, pairs)
        rank = np.lexsort((para["entry"], para["len"], para["pos"], para["sent"]))
        for sent, pos, length, e, bk, bl in zip(*(para[k][rank].tolist() for k in
                                                   ("sent", "pos", "len", "entry", "key", "plen"))):
            out[sent][0].setdefault(bk, []).append((pos, length, e, bl))
        for sent, pos, k in zip(ngrams["sent"].tolist(), ngrams["pos"].tolist(), ngrams["key"].tolist()):
            out[sent][1].setdefault(k, []).append(pos)
        return out

    def rows(self, lengths: np.ndarray, flat: np.ndarray, pairs: np.ndarray) -> tuple[dict, dict]:
        """The paraphrase facts of a batch as flat arrays: (paraphrases, n-grams). The
        sentences are `lengths` (int64, one per sentence) and `flat`, their word ids (`ids`)
        one after the other.

        paraphrases: one row per table entry whose phrase occurs in a sentence: `sent`,
        `pos` (where the phrase starts), `len` (its length), `entry` (table order), `key`
        (hash of the paraphrase) and `plen` (the paraphrase's length); n-grams: `sent`, `pos`,
        `key` for every n-gram that some partner's paraphrase equals, by position.
        `pairs` ((k, 2) sentence indices) are the sentences that will be aligned together;
        both keep only what can meet across such a pair (a paraphrase that is an n-gram
        of a partner, an n-gram that is a partner's paraphrase), so the aligner loops over
        real candidates only.
        """
        para = {k: np.zeros(0, dtype=np.int64) for k in ("sent", "pos", "len", "entry", "plen")}
        para["key"] = np.zeros(0, dtype=np.uint64)
        ngrams = {"sent": para["sent"], "pos": para["pos"], "key": para["key"]}
        if len(flat) == 0 or self.max_len == 0:
            return para, ngrams
        sent_of = np.repeat(np.arange(len(lengths)), lengths)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        end = starts[sent_of] + lengths[sent_of]
        key = np.zeros(len(flat), dtype=np.uint64)
        alive = np.ones(len(flat), dtype=bool)
        span_tok, span_len, span_key = [], [], []
        for k in range(self.max_len):
            idx = np.arange(len(flat)) + k
            alive &= idx < end
            ok = np.flatnonzero(alive)
            alive[ok] &= flat[idx[ok]] >= 0
            ok = np.flatnonzero(alive)
            if len(ok) == 0:
                break
            key[ok] = key[ok] * HASH_MUL + (flat[idx[ok]].astype(np.uint64) + np.uint64(1))
            span_tok.append(ok)
            span_len.append(np.full(len(ok), k + 1, dtype=np.int64))
            span_key.append(key[ok].copy())
        if not span_tok:
            return para, ngrams
        s_tok = np.concatenate(span_tok)
        s_len = np.concatenate(span_len)
        s_key = np.concatenate(span_key)
        # look each distinct n-gram up once, in sorted order (the table's keys are far larger
        # than the cache: sorted needles walk them in order)
        needles, back = _unique_inverse(s_key)
        u = np.searchsorted(self.ukeys, needles)
        u[u >= len(self.ukeys)] = 0
        u = u[back]
        known = np.flatnonzero(self.ukeys[u] == s_key) if len(self.ukeys) else np.zeros(0, dtype=np.int64)
        lo = np.zeros(len(s_key), dtype=np.int64)
        hi = np.zeros(len(s_key), dtype=np.int64)
        lo[known] = self.ustart[u[known]]
        hi[known] = self.ustart[u[known] + 1]
        count = hi - lo
        total = int(count.sum())
        if total == 0:
            return para, ngrams
        span = np.repeat(np.arange(len(s_key)), count)
        first = np.repeat(np.cumsum(count) - count, count)
        entry = np.asarray(self.order[lo[span] + (np.arange(total) - first)], dtype=np.int64)
        # verify the phrase itself (hash collisions)
        a0 = np.asarray(self.a_off[entry])
        alen = np.asarray(self.a_off[entry + 1]) - a0
        good = alen == s_len[span]
        for k in range(self.max_len):
            rows = np.flatnonzero(good & (alen > k))
            if len(rows) == 0:
                break
            good[rows] &= np.asarray(self.a_ids[a0[rows] + k]) == flat[s_tok[span[rows]] + k]
        entry, span = entry[good], span[good]
        bkey = np.asarray(self.b_keys[entry])
        keep = _member(bkey, needles)                     # needles: the distinct s_key
        entry, span, bkey = entry[keep], span[keep], bkey[keep]
        ng = np.flatnonzero(_member(s_key, bkey))          # n-grams that are some paraphrase
        # partner filter: (sentence, key) codes, matched across the aligned pairs
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        n_sent = len(lengths)
        both = _sorted_unique(np.concatenate([pairs[:, 0] * n_sent + pairs[:, 1], pairs[:, 1] * n_sent + pairs[:, 0]]))
        both = np.stack([both // n_sent, both % n_sent], axis=1)
        part_off = np.zeros(n_sent + 1, dtype=np.int64)
        np.cumsum(np.bincount(both[:, 0], minlength=n_sent), out=part_off[1:])
        part_of = both[:, 1]                                  # partners of s: part_of[off[s]:off[s+1]]

        def spread(sent: np.ndarray, keys: np.ndarray) -> np.ndarray:
            """codes (partner, key) for every row (sentence, key) and every partner of it"""
            count = part_off[sent + 1] - part_off[sent]
            rows = np.repeat(np.arange(len(sent)), count)
            first = np.repeat(np.cumsum(count) - count, count)
            partner = part_of[part_off[sent[rows]] + (np.arange(len(rows)) - first)]
            return _code(partner, keys[rows])

        ng_sent = sent_of[s_tok[ng]]
        ent_sent = sent_of[s_tok[span]]
        keep = _member(_code(ent_sent, bkey), spread(ng_sent, s_key[ng]))
        ng = ng[_member(_code(ng_sent, s_key[ng]), spread(ent_sent[keep], bkey[keep]))]
        entry, span, bkey = entry[keep], span[keep], bkey[keep]
        blen = np.asarray(self.b_off[entry + 1]) - np.asarray(self.b_off[entry])
        tok = s_tok[span]
        para = {"sent": sent_of[tok], "pos": tok - starts[sent_of[tok]], "len": s_len[span], "entry": entry,
                "key": bkey, "plen": blen.astype(np.int64)}
        ng = ng[np.argsort(s_tok[ng], kind="stable")]
        tok = s_tok[ng]
        ngrams = {"sent": sent_of[tok], "pos": tok - starts[sent_of[tok]], "key": s_key[ng]}
        return para, ngrams


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
        import sys
        import time

        began = time.time()
        print(f"dialeval: METEOR: first use: building the synonym/paraphrase cache in {folder} "
              "(once; it takes a while)", file=sys.stderr, flush=True)
        build_cache(sources, folder)
        print(f"dialeval: METEOR: cache built in {time.time() - began:.0f} s", file=sys.stderr, flush=True)
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
