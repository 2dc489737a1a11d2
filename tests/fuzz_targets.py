"""Fuzz targets shared by tests/test_fuzz.py (hypothesis, bounded) and benchmarks/fuzz.py
(10^5 examples per target).

A target takes a `random.Random` and a scratch folder, builds one random input (a file for a
reader, a batch of samples for a metric), runs dialeval on it and checks what came back. The
only outcomes allowed are a correct result or a `DialevalError` whose message is one line;
anything else (another exception, a broken invariant) propagates. `run_example` turns one
example into ("ok" | "error" | "crash", detail) for the benchmark's counts.

Metric invariants (per sample and per corpus): scores in the metric's documented range or NaN;
the same input gives the same scores; permuting the samples permutes the sentence scores and
keeps the corpus value; a hypothesis equal to its reference scores what the original
implementations give (BLEU-n and ROUGE-L, METEOR and the embedding metrics 1).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import string
from pathlib import Path
from typing import Callable

import numpy as np

from dialeval.errors import DialevalError

# -- random text ---------------------------------------------------------------------------

WORDS = ("the a of to and i you it is that what do not have hello yes no good day time "
         "weather nice today food like love go home work music movie book read play dog cat "
         "where when how why because very really think know want").split()
ALPHABETS = [string.ascii_letters, string.digits, string.punctuation, " \t", "éüßçñ", "αβγδ",
             "абвгд", "مرحبا", "你好世界", "😀🎉", "\u200b\u00a0\u2028", "'\"`<>|;,"]


def random_word(rng: random.Random) -> str:
    if rng.random() < 0.7:
        w = rng.choice(WORDS)
        return w.upper() if rng.random() < 0.1 else w
    alphabet = rng.choice(ALPHABETS)
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))


def random_text(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.08:
        return ""
    if kind < 0.12:
        return rng.choice([" ", "\t", "  \n ", ".", "?!", "...", "'", "-"])
    if kind < 0.16:        # very long
        return " ".join(random_word(rng) for _ in range(rng.randint(300, 1500)))
    if kind < 0.22:        # duplicated words
        return " ".join([random_word(rng)] * rng.randint(2, 60))
    if kind < 0.27:        # any unicode code points (no surrogates)
        return "".join(chr(rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0xd7ff),
                                       rng.randint(0xe000, 0x10ffff)]))
                       for _ in range(rng.randint(1, 30)))
    return " ".join(random_word(rng) for _ in range(rng.randint(1, 25)))


# -- scraped-chat text: lone surrogates and unspaced CJK -----------------------------------------

CJK = "你好世界今天天气很好我们去吃饭吧谢谢没有问题こんにちは元気ですか안녕하세요감사합니다"
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00"]


def wild_text(rng: random.Random) -> str:
    """Text as scraped chat logs have it: unspaced Chinese/Japanese/Korean runs (short and long),
    halves of emoji (lone UTF-16 surrogates), whole emoji, and ordinary words, mixed."""
    parts = []
    for _ in range(rng.randint(0, 6)):
        kind = rng.random()
        if kind < 0.35:
            parts.append("".join(rng.choice(CJK) for _ in range(rng.choice([1, 3, 8, 40, 120]))))
        elif kind < 0.55:
            parts.append(rng.choice(SURROGATES))
        elif kind < 0.65:
            parts.append(rng.choice(["😀", "🎉", "\ud83d\ude00", "\ufffd"]))
        else:
            parts.append(random_word(rng))
    sep = rng.choice(["", " ", "", "\u3000"])
    return sep.join(parts)


def has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def wild_jsonl_bytes(rng: random.Random) -> bytes:
    """JSON lines of records whose strings come from `wild_text` (escaped with ensure_ascii, as
    a lone surrogate can only be written in JSON as an escape)."""
    records = []
    for i in range(rng.randint(1, 6)):
        record = {"id": str(i), "response": wild_text(rng),
                  "references": [wild_text(rng) for _ in range(rng.randint(0, 3))]}
        if rng.random() < 0.3:
            record["context"] = [wild_text(rng)]
        if rng.random() < 0.2:
            record["system"] = rng.choice(["a", wild_text(rng)[:4]])
        if rng.random() < 0.1:
            record["note"] = {wild_text(rng)[:3]: wild_text(rng)}
        records.append(record)
    return "".join(json.dumps(r, ensure_ascii=True) + "\n" for r in records).encode("ascii")


def _check_clean(samples) -> None:
    """Every string of every sample can be written as UTF-8 (no surrogate is left)."""
    for s in samples:
        for text in [s.id, s.response, s.system or "", *s.references, *s.context,
                     json.dumps(s.meta, ensure_ascii=False)]:
            text.encode("utf-8")


def target_jsonl_wild(rng: random.Random, tmp: Path) -> None:
    """The JSONL reader on lone surrogates and CJK: every surrogate becomes U+FFFD, the rows
    can be written back as UTF-8 output lines."""
    import warnings

    from dialeval.data.readers import read_samples
    from dialeval.engine.rows import rows_text

    path = tmp / "wild.jsonl"
    data = wild_jsonl_bytes(rng)
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = read_samples(path)
    _check_samples(samples)
    _check_clean(samples)
    rows_text(samples, ["m"], [[0.5] * len(samples)]).encode("utf-8")


def one_line(message: str) -> bool:
    return "\n" not in message and "\r" not in message and message.strip() != ""


# -- readers ---------------------------------------------------------------------------------

def _random_json_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 2 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 3, 2**63, 1e308, -0.5, 4.5])
    if kind == 3:
        return rng.choice([float("nan"), float("inf")]) if rng.random() < 0.3 else rng.random() * 10
    if kind in (4, 5):
        return random_text(rng)
    if kind in (6, 7):
        return [_random_json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {random_text(rng)[:10]: _random_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def random_record(rng: random.Random) -> dict:
    """A record that is valid most of the time, with fields sometimes of the wrong type."""
    record: dict = {"response": random_text(rng)}
    if rng.random() < 0.8:
        record["references"] = [random_text(rng) for _ in range(rng.randint(0, 5))]
    if rng.random() < 0.2:
        record["reference"] = random_text(rng)
    if rng.random() < 0.5:
        record["context"] = [random_text(rng) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.4:
        record["id"] = rng.choice([random_text(rng)[:8], rng.randint(0, 5)])
    if rng.random() < 0.4:
        record["system"] = rng.choice(["A", "B", random_text(rng)[:6]])
    if rng.random() < 0.4:
        record["ratings"] = {rng.choice(["overall", "fluency", random_text(rng)[:5]]):
                             rng.choice([[rng.randint(1, 5) for _ in range(rng.randint(0, 3))],
                                         rng.random() * 5, "4", "N/A", [None, 2]])
                             for _ in range(rng.randint(0, 2))}
    if rng.random() < 0.2:
        record["meta"] = _random_json_value(rng)
    for _ in range(rng.randint(0, 1) if rng.random() < 0.3 else 0):   # a field of the wrong type
        record[rng.choice(["response", "references", "context", "id", "system", "ratings"])] = \
            _random_json_value(rng)
    if rng.random() < 0.05:
        record.pop("response", None)
    return record


def jsonl_bytes(rng: random.Random) -> bytes:
    lines = []
    for _ in range(rng.randint(0, 8)):
        kind = rng.random()
        if kind < 0.75:
            lines.append(json.dumps(random_record(rng), ensure_ascii=rng.random() < 0.5).encode())
        elif kind < 0.82:
            lines.append(json.dumps(_random_json_value(rng)).encode())
        elif kind < 0.88:
            lines.append(b"")
        elif kind < 0.94:
            lines.append(random_text(rng).encode("utf-8"))
        else:
            lines.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 12))))
    data = b"\n".join(lines) + (b"\n" if rng.random() < 0.8 else b"")
    if rng.random() < 0.05:
        data = b"\xef\xbb\xbf" + data
    return data


TABLE_COLUMNS = ["response", "references", "reference", "ref1", "ref2", "context", "id", "system",
                 "rating:overall", "rating:fluency", "extra", "ref"]


def table_bytes(rng: random.Random, delimiter: str) -> bytes:
    columns = rng.sample(TABLE_COLUMNS, rng.randint(1, 6))
    if "response" not in columns and rng.random() < 0.9:
        columns.insert(rng.randrange(len(columns) + 1), "response")

    def cell(column: str) -> str:
        r = rng.random()
        if column.startswith("rating:") and r < 0.7:
            return ";".join(str(rng.choice([1, 2, 3, 4.5, "x", "", "nan"])) for _ in range(rng.randint(1, 3)))
        if column in ("references", "context") and r < 0.4:
            return json.dumps(_random_json_value(rng) if rng.random() < 0.3 else
                              [random_text(rng) for _ in range(rng.randint(0, 3))])
        return random_text(rng)

    def quote(text: str) -> str:
        if any(ch in text for ch in (delimiter, '"', "\n", "\r")) or rng.random() < 0.1:
            return '"' + text.replace('"', '""') + '"'
        return text

    rows = [[c for c in columns]] + [[cell(c) for c in columns] for _ in range(rng.randint(0, 6))]
    for row in rows[1:]:
        if rng.random() < 0.1:
            row.pop() if row and rng.random() < 0.5 else row.append(random_text(rng))
    text = "\n".join(delimiter.join(quote(c) for c in row) for row in rows)
    if rng.random() < 0.05:
        text = text.replace('"', "", 1)                 # an unbalanced quote
    data = text.encode("utf-8")
    if rng.random() < 0.05:
        pos = rng.randrange(len(data) + 1)
        data = data[:pos] + b"\xff\xfe" + data[pos:]
    return data


def _check_samples(samples) -> None:
    assert isinstance(samples, list) and samples
    for s in samples:
        assert isinstance(s.response, str) and isinstance(s.id, str)
        assert all(isinstance(r, str) for r in s.references)
        assert all(isinstance(c, str) for c in s.context)
        assert s.system is None or isinstance(s.system, str)
        for q, values in s.ratings.items():
            assert isinstance(q, str) and all(isinstance(v, float) for v in values)


def target_jsonl(rng: random.Random, tmp: Path) -> None:
    from dialeval.data.readers import read_samples

    path = tmp / rng.choice(["in.jsonl", "in.json", "in.ndjson"])
    path.write_bytes(jsonl_bytes(rng))
    _check_samples(read_samples(path))


def target_csv(rng: random.Random, tmp: Path) -> None:
    from dialeval.data.readers import read_samples

    path = tmp / "in.csv"
    path.write_bytes(table_bytes(rng, ","))
    _check_samples(read_samples(path))


def target_tsv(rng: random.Random, tmp: Path) -> None:
    from dialeval.data.readers import read_samples

    path = tmp / "in.tsv"
    path.write_bytes(table_bytes(rng, "\t"))
    _check_samples(read_samples(path))


def _lines_file(rng: random.Random, path: Path, n: int) -> None:
    lines = [random_text(rng).replace("\n", " ").replace("\r", " ") for _ in range(n)]
    data = "\n".join(lines).encode("utf-8") + (b"\n" if rng.random() < 0.8 else b"")
    if rng.random() < 0.05:
        data += b"\xc3"
    path.write_bytes(data)


def target_parallel(rng: random.Random, tmp: Path) -> None:
    from dialeval.data.readers import read_parallel

    n = rng.randint(0, 6)
    hyps = [tmp / f"hyp{i}.txt" for i in range(rng.randint(1, 3))]
    refs = [tmp / f"ref{i}.txt" for i in range(rng.randint(0, 3))]
    for p in hyps + refs:
        _lines_file(rng, p, n if rng.random() < 0.85 else rng.randint(0, 6))
    systems = None
    if rng.random() < 0.3:
        systems = [random_text(rng)[:5] or "s" for _ in range(len(hyps) + (rng.random() < 0.2))]
    _check_samples(read_parallel(hyps, refs, systems=systems))


def target_corpus(rng: random.Random, tmp: Path) -> None:
    from dialeval.data.corpus import read_corpus

    kind = rng.choice(["dailydialog", "jsonl", "text", None])
    path = tmp / rng.choice(["c.txt", "c.jsonl"])
    if kind == "dailydialog" or (kind is None and rng.random() < 0.3):
        lines = [" __eou__ ".join(random_text(rng) for _ in range(rng.randint(0, 4))) + " __eou__"
                 for _ in range(rng.randint(0, 5))]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif kind == "jsonl":
        path.write_bytes(b"\n".join(json.dumps(rng.choice([{"turns": [random_text(rng) for _ in range(3)]},
                                                           _random_json_value(rng)])).encode()
                                    for _ in range(rng.randint(0, 5))))
    else:
        _lines_file(rng, path, rng.randint(0, 8))
    dialogues = read_corpus(path, kind)
    assert all(isinstance(t, str) for d in dialogues for t in d)


def target_scores(rng: random.Random, tmp: Path) -> None:
    """`correlate`'s input reader and the correlation on what it read."""
    from dialeval.meta.evaluate import columns, correlation_rows, read_scores

    rows = []
    for i in range(rng.randint(0, 12)):
        row = {"id": str(i), "scores": {"m1": rng.choice([rng.random(), None, 0.5]),
                                        "m2": rng.random()},
               "ratings": {"overall": [rng.randint(1, 5) for _ in range(rng.randint(0, 3))]}}
        if rng.random() < 0.1:
            row[rng.choice(["scores", "ratings"])] = _random_json_value(rng)
        rows.append(json.dumps(row))
    path = tmp / "scores.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    rows = read_scores(path)
    values, human, _, _ = columns(rows, "overall")
    out = correlation_rows(values, human, quality="overall", n_boot=rng.choice([0, 5]), seed=0)
    for r in out:
        assert math.isnan(r["r"]) or -1 - 1e-9 <= r["r"] <= 1 + 1e-9


READER_TARGETS: dict[str, Callable[[random.Random, Path], None]] = {
    "jsonl": target_jsonl, "jsonl-wild": target_jsonl_wild, "csv": target_csv, "tsv": target_tsv, "parallel": target_parallel,
    "corpus": target_corpus, "scores": target_scores,
}


# -- dataset loaders on mutated copies --------------------------------------------------------

_FILES_READ: dict[str, list[str]] = {}


def files_read(name: str, folder: Path) -> list[str]:
    """Files (relative to the folder) a loader opens on a clean load, found with an audit hook."""
    import sys

    from dialeval.data.datasets import load_dataset

    if name not in _FILES_READ:
        opened: list[str] = []
        root = str(folder.resolve())
        active = [True]

        def hook(event, args):
            if active[0] and event == "open" and isinstance(args[0], str) and args[0].startswith(root):
                opened.append(args[0])
        sys.addaudithook(hook)      # hooks cannot be removed; this one switches itself off
        try:
            load_dataset(name, folder)
        finally:
            active[0] = False
        _FILES_READ[name] = sorted({os.path.relpath(p, root) for p in opened})
    return _FILES_READ[name]


def _mutate_json(rng: random.Random, data):
    """Change one node of a JSON tree: drop it, retype it, or empty it."""
    def nodes(value, path=()):
        yield path
        if isinstance(value, dict):
            for k, v in list(value.items())[:50]:
                yield from nodes(v, path + (k,))
        elif isinstance(value, list):
            for i in rng.sample(range(len(value)), min(len(value), 8)):
                yield from nodes(value[i], path + (i,))
    paths = [p for p in nodes(data) if p]
    if not paths:
        return _random_json_value(rng)
    path = rng.choice(paths)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    op = rng.random()
    if op < 0.3:
        del parent[path[-1]]
    elif op < 0.45:
        parent[path[-1]] = None
    elif op < 0.6:
        parent[path[-1]] = random_text(rng)
    elif op < 0.7:
        parent[path[-1]] = rng.choice([[], {}, 0, -7, 1e9, "nan", True])
    else:
        parent[path[-1]] = _random_json_value(rng)
    return data


def mutate_bytes(rng: random.Random, data: bytes, suffix: str) -> bytes:
    """A structural mutation for JSON files (usually), else a line or byte mutation."""
    if suffix == ".json" and rng.random() < 0.7:
        try:
            tree = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            tree = None
        if tree is not None:
            for _ in range(rng.randint(1, 3)):
                tree = _mutate_json(rng, tree)
            return json.dumps(tree).encode("utf-8")
    lines = data.split(b"\n")
    op = rng.random()
    i = rng.randrange(len(lines))
    if op < 0.15:
        del lines[i]
    elif op < 0.25:
        lines.insert(i, lines[i])
    elif op < 0.4:
        lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
    elif op < 0.55:
        lines[i] = random_text(rng).encode("utf-8")
    elif op < 0.7:                        # change one cell of a delimited line
        sep = b"\t" if b"\t" in lines[i] else b","
        cells = lines[i].split(sep)
        cells[rng.randrange(len(cells))] = rng.choice([b"", b"x", b"nan", b"-3", b"99",
                                                       random_text(rng).encode("utf-8")])
        lines[i] = sep.join(cells)
    elif op < 0.8:
        return data[:rng.randrange(len(data) + 1)]
    elif op < 0.9:
        pos = rng.randrange(len(data) + 1)
        return data[:pos] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 4))) + data[pos:]
    else:
        lines = lines[: rng.randint(0, 2)]
    return b"\n".join(lines)


def loader_target(name: str, folder: Path) -> Callable[[random.Random, Path], None]:
    """A target that loads `name` from a copy of `folder` with one of its files mutated (the
    others are symbolic links to the originals, which are never written)."""
    def target(rng: random.Random, tmp: Path) -> None:
        from dialeval.data.datasets import load_dataset

        files = files_read(name, folder)
        victim = rng.choice(files)
        copy = tmp / "set"
        if copy.exists():
            shutil.rmtree(copy)
        for rel in files:
            dest = copy / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if rel == victim:
                dest.write_bytes(mutate_bytes(rng, (folder / rel).read_bytes(), dest.suffix))
            else:
                os.symlink((folder / rel).resolve(), dest)
        dataset = load_dataset(name, copy)
        _check_samples(dataset.samples) if dataset.samples else None
        dataset.describe()
    return target


# -- metrics -----------------------------------------------------------------------------------

RANGES = {"bleu1": (0, 1), "bleu2": (0, 1), "bleu3": (0, 1), "bleu4": (0, 1), "rouge_l": (0, 1),
          "meteor": (0, 1), "cider_d": (0, 10), "cider": (0, 10),
          "emb_average": (-1, 1), "emb_extrema": (-1, 1), "emb_greedy": (-1, 1)}
CHEAP_METRICS = list(RANGES)
TOL = 1e-5


def vectors_file(folder: Path) -> str:
    """A small GloVe-style file over WORDS (seeded), so embedding metrics need no built default."""
    path = folder / "fuzz-vectors.txt"
    if not path.exists():
        gen = np.random.default_rng(0)
        path.write_text("".join(f"{w} {' '.join(f'{x:.5f}' for x in gen.normal(size=8))}\n"
                                for w in WORDS), encoding="utf-8")
    return str(path)


def random_samples(rng: random.Random, n: int) -> list[dict]:
    out = []
    for i in range(n):
        k = rng.choice([0, 1, 1, 2, 3, 5]) if rng.random() < 0.9 else rng.randint(10, 40)
        out.append({"id": str(i), "response": random_text(rng),
                    "references": [random_text(rng) for _ in range(k)]})
    return out


def _options(metric: str, folder: Path) -> dict:
    return {"word_vectors": vectors_file(folder)} if metric.startswith("emb_") else {}


def _same(a: np.ndarray, b: np.ndarray, rel: float = 0.0) -> bool:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return bool(np.array_equal(np.isnan(a), np.isnan(b)) and
                np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=rel, atol=rel))


def check_metric(metric: str, samples: list[dict], folder: Path, rng: random.Random) -> None:
    """Every invariant of one metric on one batch of samples."""
    import warnings

    from dialeval.scoring import score

    options = _options(metric, folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = score(samples, [metric], progress=False, **options)
        again = score(samples, [metric], progress=False, **options)
        perm = list(range(len(samples)))
        rng.shuffle(perm)
        shuffled = score([samples[i] for i in perm], [metric], progress=False, **options)
    s, c = first.sentence[metric], first.corpus[metric]
    lo, hi = RANGES[metric]
    finite = s[~np.isnan(s)]
    assert np.all((finite >= lo - TOL) & (finite <= hi + TOL)), (metric, finite.min(), finite.max())
    assert math.isnan(c) or lo - TOL <= c <= hi + TOL, (metric, c)
    assert _same(s, again.sentence[metric]) and _same([c], [again.corpus[metric]]), "not deterministic"
    assert _same(s[perm], shuffled.sentence[metric], 1e-9), "permuting samples changed sentence scores"
    assert _same([c], [shuffled.corpus[metric]], 1e-9), "permuting samples changed the corpus value"


def check_identity(metric: str, folder: Path, rng: random.Random) -> None:
    """A response equal to its only reference (known words): BLEU-n (n tokens or more),
    ROUGE-L, METEOR and the embedding metrics give 1, as the original implementations do."""
    if metric.startswith("cider"):
        return                         # depends on the set's document frequencies
    n = int(metric[-1]) if metric.startswith("bleu") else 1
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(n, 12))) for _ in range(rng.randint(1, 6))]
    from dialeval.scoring import score

    out = score([{"response": t, "references": [t]} for t in texts], [metric], progress=False,
                **_options(metric, folder))
    np.testing.assert_allclose(out.sentence[metric], 1.0, atol=1e-6, err_msg=metric)


WILD_METRICS = ["bleu2", "meteor", "emb_average", "sent_cosine"]
RANGES["sent_cosine"] = (-1, 1)


def wild_samples(rng: random.Random, n: int, tmp: Path):
    """`n` samples of `wild_text`, written as JSON lines and read back by the reader (where the
    surrogate rule applies), as a user's scraped file reaches the metrics."""
    import warnings

    from dialeval.data.readers import read_samples

    path = tmp / "wild-samples.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "response": wild_text(rng),
                                        "references": [wild_text(rng) for _ in range(rng.choice([0, 1, 1, 2, 3]))]})
                            + "\n" for i in range(n)), encoding="ascii")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_samples(path)


def wild_metric_target(metric: str) -> Callable[[random.Random, Path], None]:
    def target(rng: random.Random, tmp: Path, n: int | None = None) -> None:
        check_metric(metric, wild_samples(rng, n or rng.randint(1, 6), tmp), tmp.parent, rng)
    return target


def metric_target(metric: str) -> Callable[[random.Random, Path], None]:
    def target(rng: random.Random, tmp: Path, n: int | None = None) -> None:
        check_metric(metric, random_samples(rng, n or rng.randint(1, 6)), tmp.parent, rng)
        if rng.random() < 0.3:
            check_identity(metric, tmp.parent, rng)
    return target


# -- outcome of one example --------------------------------------------------------------------

def normalise_error(message: str) -> str:
    """An error message with paths, numbers and quoted values blanked, to count distinct errors."""
    message = re.sub(r"(/[^\s:]+)+", "PATH", message)
    message = re.sub(r"(?<![A-Za-z])'[^']*'(?![A-Za-z])|\"[^\"]*\"", "'…'", message)
    return re.sub(r"\d+(\.\d+)?", "N", message)


def run_example(target, rng: random.Random, tmp: Path) -> tuple[str, str]:
    """("ok", ""), ("error", normalised one-line message) or ("crash", description)."""
    try:
        target(rng, tmp)
    except DialevalError as exc:
        if not one_line(str(exc)):
            return "crash", f"multi-line DialevalError: {str(exc)[:200]!r}"
        return "error", normalise_error(str(exc))
    except Exception as exc:  # noqa: BLE001 - counting exactly these is the point
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1]
        return "crash", f"{type(exc).__name__}: {str(exc)[:160]} ({os.path.basename(where.filename)}:{where.lineno})"
    return "ok", ""
