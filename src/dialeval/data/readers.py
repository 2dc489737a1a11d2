"""Readers: every input format becomes a list of `Sample`s, or one located `InputError`.

Files are decoded line by line so that a bad byte is reported with its line number, and every
record is validated field by field before anything is scored or written.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from itertools import chain
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..errors import InputError
from .sample import Sample

STDIN = "-"


def _open_binary(path: str):
    """A binary stream of `path`, or of standard input for `-`."""
    if path == STDIN:
        import sys

        return contextlib.nullcontext(sys.stdin.buffer)
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", path=path) from None


def iter_text_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a UTF-8 file (or `-`, standard input), read as a
    stream, without line ends; a bad byte is reported with its line and column."""
    number = 0
    for lines in iter_text_blocks(path):
        yield from enumerate(lines, number + 1)
        number += len(lines)


def iter_text_blocks(path: str | os.PathLike) -> Iterator[list[str]]:
    """The lines of `iter_text_lines` (without numbers), a list of lines at a time.

    The file is read and decoded a block at a time (whatever one read returns, up to 1 MiB) and
    split on "\n", the one byte UTF-8 never uses inside a character: the same lines as
    iterating the binary file, at a fraction of the per-line cost. Readers that only need the
    texts in order (parallel files) iterate the lists at C speed."""
    path = os.fspath(path)
    number = 0
    with _open_binary(path) as handle:
        read = getattr(handle, "read1", handle.read)
        pending = b""
        first = True
        while True:
            block = read(1 << 20)
            if not block:
                break
            if first:
                first = False
                if block.startswith(b"\xef\xbb\xbf"):
                    block = block[3:]
                _refuse_utf16(block, path)
            block = pending + block
            cut = block.rfind(b"\n")
            if cut < 0:
                pending = block
                continue
            pending = block[cut + 1:]
            lines = _decode_lines(block[:cut], path, number)
            number += len(lines)
            yield lines
        if pending:
            yield _decode_lines(pending, path, number)


def _refuse_utf16(head: bytes, path: str) -> None:
    """A UTF-16 file (what Excel's "Unicode text" and PowerShell write) named as such: read as
    UTF-8 it is a bad first byte, or, without a byte-order mark, NUL bytes between ASCII letters
    that leave a header with no column the reader knows."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        why = "it starts with a UTF-16 byte-order mark"
    else:
        sample = head[:4096]
        if not sample or sample.count(0) * 4 < len(sample):   # ASCII text in UTF-16: every other byte
            return
        why = f"{sample.count(0)} of its first {len(sample)} bytes are NUL"
    raise InputError(f"looks like UTF-16 ({why}); dialeval reads UTF-8: save the file as UTF-8 "
                     "(e.g. `iconv -f UTF-16 -t UTF-8 FILE > FILE8`)", path=path, line=1)


def _decode_lines(raw: bytes, path: str, before: int) -> list[str]:
    """The "\n"-separated lines of `raw` decoded, without a final "\r"; a bad byte names its
    line (counted after `before` lines) and its column."""
    try:
        lines = raw.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        for number, line in enumerate(raw.split(b"\n"), before + 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not valid UTF-8: byte 0x{line[exc.start]:02x} at column {exc.start + 1}",
                                 path=path, line=number) from None
        raise
    if b"\r" in raw:   # CRLF line ends: the "\r" is no part of the line
        lines = [text[:-1] if text.endswith("\r") else text for text in lines]
    return lines


def read_text_lines(path: str | os.PathLike) -> list[str]:
    """Lines of a UTF-8 text file, without their line ends; bad bytes are reported by line."""
    return [text for _, text in iter_text_lines(path)]


def count_lines(path: str | os.PathLike) -> int:
    """Number of lines (as `iter_text_lines` counts them), without decoding."""
    path = os.fspath(path)
    n, last = 0, b"\n"
    with _open_binary(path) as handle:
        while True:
            block = handle.read(1 << 20)
            if not block:
                break
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


# --------------------------------------------------------------------------- records

def _as_str_list(value: Any, *, field: str, path, line, allow_string: bool) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        if allow_string:
            return [value]
        raise InputError("expected a list of strings, got a string", path=path, line=line, field=field)
    if not isinstance(value, list):
        raise InputError(f"expected a list of strings, got {type(value).__name__}",
                         path=path, line=line, field=field)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise InputError(f"item {i} is {type(item).__name__}, expected a string",
                             path=path, line=line, field=field)
    return list(value)


def _as_ratings(value: Any, *, path, line) -> dict[str, list[float]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"expected an object quality -> scores, got {type(value).__name__}",
                         path=path, line=line, field="ratings")
    out: dict[str, list[float]] = {}
    for quality, scores in value.items():
        items = scores if isinstance(scores, list) else [scores]
        parsed = []
        for item in items:
            parsed.append(parse_rating(item, path=path, line=line, field=f"ratings.{quality}"))
        out[str(quality)] = parsed
    return out


def parse_rating(value: Any, *, path=None, line=None, field=None) -> float:
    """A numeric rating. Blanks, null and "not available" text (including annotator free text
    such as FED's "N/A (No errors)") become NaN: the rater gave no score. Anything else that is
    not a number is an error located by path, line and field."""
    if value is None:
        return math.nan
    if isinstance(value, (bool, int, float)):
        return float(value)
    text = str(value).strip()
    if text == "" or text == "-" or text.upper().startswith("N/A") or \
            text.upper() in {"NA", "NAN", "NONE", "NULL"}:
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise InputError(f"rating {text[:40]!r} is not a number", path=None if path is None else str(path),
                         line=line, field=field) from None


# --------------------------------------------------------------------------- one row, every input
#
# Every input is read by one function, `row_to_sample`: a CSV/TSV row, a JSONL object, and a
# dict or a pandas DataFrame row given to the Python API. So the same table gives the same
# samples whichever form it comes in. The rules are the table's, where a cell is text and
# structure is spelled in text:
#
#   response         the response; an empty cell is an empty response
#   references       a list of strings; in a cell, a JSON list or the text of one reference
#   reference        one reference; an empty cell is an empty reference
#   ref1, ref2, ...  one reference each, after the above in column order; an empty cell: none
#   context          a list of turns; as text, turns joined by "|||" (each stripped) or a JSON list
#   id, system       text or an integer; an empty cell: not given (ids then count samples from 0)
#   ratings          {quality: [scores]} (one score is a one-rater list)
#   rating:<q>       the scores of quality q, ";"-separated in text; an empty cell: no score
#   meta             an object; every other field is kept in it too
#
# An empty cell is "" in a table; in a DataFrame NaN or None; in a dict NaN (what pandas gives
# for an empty cell). In a dict or a JSON object None (null) is a field not given. A DataFrame's
# numbers are read as the text a CSV cell would hold (1.0 -> "1", as pandas reads "1" in a
# column with blanks).

RATING_PREFIX = "rating:"
# the fields a row may have besides rating:<q> and ref<N>
_FIELDS = frozenset({"id", "context", "response", "references", "reference", "system", "ratings", "meta"})
# the fields of a table (CSV/TSV) header: `ratings` and `meta` objects cannot be spelled in a cell
_TABLE_FIELDS = frozenset({"id", "context", "response", "references", "reference", "system"})
# keys of dialeval's own output rows (`score -o`), which may be read back: never a look-alike
_OUTPUT_FIELDS = frozenset({"scores", "stats", "signatures"})
_FIELD_OF = {name: name for name in _FIELDS}
_ABSENT = object()


def is_ref_column(name: Any) -> bool:
    """`ref1`, `ref2`, ...: one reference each."""
    return isinstance(name, str) and name.startswith("ref") and name[3:].isdigit()


def _is_nan(value: Any) -> bool:
    """NaN or pandas' NA / NaT: an empty cell."""
    return (isinstance(value, float) and value != value) or type(value).__name__ in ("NAType", "NaTType")


def _text(value: Any, *, field: str, path, line) -> str:
    if isinstance(value, str):
        return value
    raise InputError(f"expected a string, got {type(value).__name__}", path=path, line=line, field=field)


def _json_list(text: str, *, field: str, path, line, strict: bool = True) -> list[str] | None:
    """A JSON list of strings spelled in text. Malformed: an error in a table cell (`strict`,
    where this is the documented spelling); None elsewhere (the text is then read as text)."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        if not strict:
            return None
        raise InputError(f"malformed JSON list: {exc.msg}", path=path, line=line, field=field) from None
    if not strict and not isinstance(parsed, list):
        return None
    return _as_str_list(parsed, field=field, path=path, line=line, allow_string=False)


def _references(value: Any, *, cells: bool, path, line) -> list[str]:
    """The `references` field: a list; text is a JSON list, or (in a cell) one reference."""
    if value is None:
        return []
    if _is_nan(value):
        value = ""
    if isinstance(value, str):
        if value.lstrip().startswith("["):
            parsed = _json_list(value, field="references", path=path, line=line, strict=cells)
            if parsed is not None:
                return parsed
        if cells or value == "":
            return [value]
        raise InputError("expected a list of strings, got a string (one reference: `reference`)",
                         path=path, line=line, field="references")
    return _as_str_list(value, field="references", path=path, line=line, allow_string=False)


def _context(value: Any, *, cells: bool, path, line) -> list[str]:
    """The `context` field: a list of turns, or text: a JSON list or turns joined by "|||"
    (outside a table cell, text that starts with "[" but is no JSON list, such as "[laughs]
    hi", is text)."""
    if value is None:
        return []
    if _is_nan(value):
        return []
    if isinstance(value, str):
        if value.strip().startswith("["):
            parsed = _json_list(value.strip(), field="context", path=path, line=line, strict=cells)
            if parsed is not None:
                return parsed
        return [t.strip() for t in value.split("|||")] if value else []
    return _as_str_list(value, field="context", path=path, line=line, allow_string=False)


def _rating_cell(value: Any, *, field: str, path, line) -> list[float]:
    """A `rating:<quality>` field: scores, ";"-separated in text; empty: no score."""
    if value is None or _is_nan(value):
        return []
    if isinstance(value, str):
        items: list = value.split(";") if value != "" else []
    elif isinstance(value, list):
        items = value
    else:
        items = [value]
    return [parse_rating(item, path=path, line=line, field=field) for item in items]


def _name(value: Any, *, field: str, path, line) -> str | None:
    """`id` or `system`: text or an integer; empty or not given: None."""
    if value is None or _is_nan(value):
        return None
    if isinstance(value, str):
        return value or None
    if isinstance(value, int):
        return str(value)
    what = "a string or integer" if field == "id" else "a string"
    raise InputError(f"expected {what}, got {type(value).__name__}", path=path, line=line, field=field)


def row_to_sample(row: Any, *, index: int, path: str | None = None, line: int | None = None,
                  cells: bool = False, lookalikes: "Lookalikes | None" = None) -> Sample:
    """The one reading of a row (see the rules above) into a validated Sample. `cells`: the
    values are table cells (a CSV/TSV row, a DataFrame row as `frame_cells` gives it), where a
    `references` text that is not a JSON list is one reference. `lookalikes` is told the fields
    that are kept in meta, to warn about misspelt references, ratings and contexts."""
    if not isinstance(row, dict):
        raise InputError(f"expected a JSON object, got {type(row).__name__}", path=path, line=line)
    response: Any = _ABSENT
    references: list[str] = []
    context: list[str] = []
    sid = system = None
    ratings: dict[str, list[float]] = {}
    columns: dict[str, list[float]] = {}
    meta: dict[str, Any] = {}
    other: dict[Any, Any] = {}
    for key, value in row.items():
        field = _FIELD_OF.get(key) if type(key) is str else None
        if field is None:
            if is_ref_column(key):
                if isinstance(value, str):
                    if value:
                        references.append(value)
                elif value is not None and not _is_nan(value):
                    _text(value, field=key, path=path, line=line)   # refused, located
            elif isinstance(key, str) and key.startswith(RATING_PREFIX):
                columns[key[len(RATING_PREFIX):]] = _rating_cell(value, field=key, path=path, line=line)
            else:
                other[key] = value
        elif field == "response":
            response = value
        elif field == "references":
            if type(value) is list and all(type(v) is str for v in value):   # the common case, fast
                references.extend(value)
            else:
                references.extend(_references(value, cells=cells, path=path, line=line))
        elif field == "context":
            if type(value) is list and all(type(v) is str for v in value):
                context = list(value)
            else:
                context = _context(value, cells=cells, path=path, line=line)
        elif field == "id":
            sid = value if type(value) is str and value else _name(value, field="id", path=path, line=line)
        elif field == "system":
            system = value if type(value) is str and value else _name(value, field="system", path=path,
                                                                        line=line)
        elif field == "reference":
            if value is not None:
                references.extend(_as_str_list("" if _is_nan(value) else value, field="reference",
                                               path=path, line=line, allow_string=True))
        elif cells and isinstance(value, str):   # `ratings`, `meta`: no object fits in a cell
            other[key] = value
        elif field == "ratings":
            ratings = _as_ratings(None if _is_nan(value) else value, path=path, line=line)
        elif value is not None and not _is_nan(value):   # meta
            if not isinstance(value, dict):
                raise InputError(f"expected an object, got {type(value).__name__}", path=path,
                                 line=line, field="meta")
            meta = {**value, **meta}
    if response is _ABSENT or response is None:
        raise InputError(f"missing (every sample needs a response){_spelt_otherwise('response', row)}",
                         path=path, line=line, field="response")
    if _is_nan(response):
        response = ""
    if not isinstance(response, str):
        raise InputError(f"expected a string, got {type(response).__name__}", path=path, line=line,
                         field="response")
    if columns:
        ratings = {**ratings, **columns}
    for key, value in other.items():   # unknown fields are kept, not dropped
        meta.setdefault(key, value)
    if other and lookalikes is not None:
        lookalikes.check(other, line, has_system=system is not None)
    return Sample(id=str(index) if sid is None else sid, response=response, context=context,
                  references=references, system=system, ratings=ratings, meta=meta)


def _spelt_otherwise(field: str, names: Iterable[Any]) -> str:
    """"; found 'Response' ..." when `names` hold `field` in another case or with spaces inside
    (field names are exact), else ""."""
    squashed = field.replace("_", "")
    for name in names:
        if isinstance(name, str) and name != field and \
                re.sub(r"[\s_-]", "", name).lower() == squashed:
            return f"; found {name!r}: field names are exact and lower case, rename it {field!r}"
    return ""


def record_to_sample(record: Any, *, index: int, path: str | None = None,
                     line: int | None = None) -> Sample:
    """Validate one dict-like record (JSONL object, API dict) into a Sample (`row_to_sample`)."""
    return row_to_sample(record, index=index, path=path, line=line)


def frame_cells(row: dict) -> dict:
    """A DataFrame row as the cells a CSV reader would see: NaN, None and NA are empty cells
    (""), numbers the text they were read from (an integral float, which is what pandas makes
    of an integer column with blanks, without its ".0"), numpy values plain Python."""
    out = {}
    for key, value in row.items():
        if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
            value = value.tolist()     # numpy scalars and arrays
        if value is None or _is_nan(value):
            value = ""
        elif isinstance(value, bool):
            value = str(value)
        elif isinstance(value, int):
            value = str(value)
        elif isinstance(value, float):
            value = str(int(value)) if value.is_integer() else repr(value)
        out[key] = value
    return out


def from_records(records: Iterable[Any]) -> list[Sample]:
    """Samples from the Python API: Samples, dicts, or a pandas DataFrame, each row read by
    `row_to_sample` as the CSV reader reads a row (`ref1`, `rating:<quality>`, a "|||"-joined
    context; a DataFrame's NaN is an empty cell), so a DataFrame of a CSV file gives the samples
    `dialeval score` gives for the file."""
    if hasattr(records, "to_dict") and hasattr(records, "columns"):  # pandas DataFrame
        where = "<DataFrame>"
        notes = Lookalikes(where, "column", table=False, per_process=False)
        notes.check(list(records.columns), None)
        rows = records.to_dict(orient="records")
        return [row_to_sample(frame_cells(row), index=i, line=i + 1, path="<DataFrame row>", cells=True)
                for i, row in enumerate(rows)]
    notes = Lookalikes("<records>", "key", table=False, per_process=False)
    out = []
    for i, record in enumerate(records):
        if isinstance(record, Sample):
            out.append(record)
        else:
            record, changed = replace_surrogates(record)
            if changed:
                _warn_surrogates("<record>", i + 1)
            out.append(row_to_sample(record, index=i, path="<record>", line=i + 1, lookalikes=notes))
    return out


# --------------------------------------------------------------------------- misspelt fields

# A field that is not one of the names above is kept in meta. When its name looks like a
# reference, rating or context field (`reference1`, `refs`, `gold`, `rating_overall`, `score`,
# `ctx`, `history`, ...), a misspelling would silently change the scores, so it gets one warning
# per field and file, naming the accepted spellings.
_ACCEPTED = {
    "references": "references are read from `references` (a list; in a cell a JSON list or one "
                  "reference), `reference`, or `ref1`, `ref2`, ... columns",
    "ratings": "ratings are read from `rating:<quality>` columns (e.g. rating:overall; several "
               "annotators ;-separated) or a `ratings` object {quality: [scores]}",
    "context": "the context is read from `context` (a list of turns, or turns joined by ' ||| ')",
    "system": "the system is read from `system` (lower case); without it every row belongs to one "
              "system, 'all', whose corpus values (BLEU's sums, CIDEr's document frequencies) pool "
              "every system's rows",
}
_REF_WORDS = frozenset({"gold", "golden", "target", "targets", "truth", "groundtruth", "gt",
                        "expected", "ideal"})
_REF_NAMES = frozenset({"humanresponse", "humanreply", "trueresponse", "originalresponse"})
_RATING_WORDS = ("rating", "score", "human", "judg", "annot", "likert", "overall")
_CONTEXT_WORDS = frozenset({"ctx", "context", "contexts", "history", "histories", "hist", "prompt",
                            "prompts", "query", "queries", "prev", "previous", "conversation"})
# A system column under another name pools every system into one set, silently (and, with
# ids, ends in a duplicate-id error): a name made only of these words is taken for one.
_SYSTEM_WORDS = frozenset({"system", "systems", "sys", "model", "models", "bot", "bots", "chatbot",
                           "agent", "agents"})
_SYSTEM_QUALIFIERS = frozenset({"name", "names", "id", "ids", "tag", "label"})
_WARNED_FIELDS: set[tuple[str, str]] = set()


def lookalike(name: Any, *, table: bool = False) -> str | None:
    """"references", "ratings", "context" or "system" when field `name` is not read as such but
    looks as if it was meant to be; else None (`table`: a CSV/TSV column, where `ratings` and
    `meta` cannot be spelled)."""
    if not isinstance(name, str):
        return None
    if (name in (_TABLE_FIELDS if table else _FIELDS) or name in _OUTPUT_FIELDS
            or name.startswith(RATING_PREFIX) or is_ref_column(name)):
        return None
    words = re.findall(r"[a-z]+|[0-9]+", name.lower())
    squashed = "".join(words)
    if not words:
        return None
    if squashed.startswith("ref") or any(w in _REF_WORDS for w in words) or squashed in _REF_NAMES:
        return "references"
    if squashed.startswith(_RATING_WORDS) or any(w.startswith(_RATING_WORDS) or w == "mos" for w in words):
        return "ratings"
    if any(w in _CONTEXT_WORDS for w in words) or squashed in ("dialogue", "dialog"):
        return "context"
    if any(w in _SYSTEM_WORDS for w in words) and all(w in _SYSTEM_WORDS or w in _SYSTEM_QUALIFIERS
                                                      for w in words):
        return "system"
    return None


def system_lookalike(sample: Sample) -> str | None:
    """The field of `sample`'s meta that looks like its system, when it has no system: what a
    duplicate-id error should point at (two systems' rows with the same ids)."""
    if sample.system is not None:
        return None
    return next((k for k in sample.meta if lookalike(k) == "system"), None)


class Lookalikes:
    """Warns (a `DialevalWarning`, one line) about the fields of one input that are kept in meta
    but look like references, ratings or a context; once per field and input (per process for
    a file, which the engine may read twice)."""

    def __init__(self, path: str, noun: str, *, table: bool, per_process: bool = True):
        self.path, self.noun, self.table = path, noun, table
        self.seen: set = set()
        self.per_process = per_process

    def check(self, names: Iterable[Any], line: int | None, *, has_system: bool | None = None) -> None:
        """`names`: the fields kept in meta (or a whole header); `has_system`: whether the row
        has a `system` (None: read it from `names`). A system look-alike beside a real `system`
        (a `model` column naming each system's backbone) is data, not a misspelling."""
        names = list(names)
        if has_system is None:
            has_system = "system" in names
        for name in names:
            if name in self.seen:
                continue
            kind = lookalike(name, table=self.table)
            if kind == "system" and has_system:
                continue   # not `seen`: a later row without a system is still checked
            self.seen.add(name)
            if kind is None:
                continue
            if self.per_process:
                if (self.path, name) in _WARNED_FIELDS:
                    continue
                _WARNED_FIELDS.add((self.path, name))
            import warnings

            from ..errors import DialevalWarning

            where = f"{self.path}:{line}" if line is not None and self.noun == "key" else self.path
            warnings.warn(DialevalWarning(
                f"{where}: {self.noun} {name!r} looks like {'the system' if kind == 'system' else kind} "
                f"but is not read as such (it is "
                f"kept in meta); {_ACCEPTED[kind]}"), stacklevel=2)


# --------------------------------------------------------------------------- lone surrogates

# JSON may escape a UTF-16 surrogate with no partner ("\ud800", legal JSON, common in scraped
# chat logs, where a tool cut an emoji in half). Python then holds a string that cannot be
# encoded as UTF-8: tokenizers, hashes and the output writer fail on it. The rule: each lone
# surrogate becomes U+FFFD (the replacement character, what a UTF-8 decoder gives for a broken
# sequence), with one warning per file naming the first line. Refusing the file would stop a
# large crawl for one broken emoji; U+FFFD keeps the row, and its mark is visible in the output.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
_WARNED_SURROGATES: set[str] = set()


def replace_surrogates(value: Any) -> tuple[Any, bool]:
    """`value` (a parsed JSON value) with every lone surrogate in its strings, keys included,
    replaced by U+FFFD; and whether anything was replaced."""
    if isinstance(value, str):
        if value.isascii() or not _SURROGATE.search(value):
            return value, False
        return _SURROGATE.sub(REPLACEMENT, value), True
    if isinstance(value, list):
        changed = False
        out = []
        for item in value:
            item, c = replace_surrogates(item)
            out.append(item)
            changed |= c
        return (out, True) if changed else (value, False)
    if isinstance(value, dict):
        changed = False
        pairs = []
        for key, item in value.items():
            key, c1 = replace_surrogates(key)
            item, c2 = replace_surrogates(item)
            pairs.append((key, item))
            changed |= c1 or c2
        return (dict(pairs), True) if changed else (value, False)
    return value, False


def _warn_surrogates(path: str, line: int | None) -> None:
    """One warning per file (per process): where the first lone surrogate was."""
    if path in _WARNED_SURROGATES:
        return
    _WARNED_SURROGATES.add(path)
    import warnings

    from ..errors import DialevalWarning

    where = f"{path}:{line}" if line is not None else str(path)
    warnings.warn(DialevalWarning(f"{where}: lone UTF-16 surrogate escape (such as \\ud800) replaced by "
                                  "U+FFFD; later ones in this file are replaced without a warning"),
                  stacklevel=2)


def _loads(text: str, path: str, line: int | None) -> Any:
    """`json.loads(text)` with lone surrogates replaced (see above); only lines that contain a
    surrogate escape are searched, so clean input costs one substring test."""
    value = json.loads(text)
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        value, changed = replace_surrogates(value)
        if changed:
            _warn_surrogates(path, line)
    return value


# --------------------------------------------------------------------------- JSONL

def iter_json_lines(path: str | os.PathLike) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each non-blank line of a JSON-lines file; a line that is
    not JSON is reported with its number and column."""
    path = os.fspath(path)
    for number, text in iter_text_lines(path):
        if not text.strip():
            continue
        try:
            yield number, _loads(text, path, number)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg} at column {exc.colno}", path=path,
                             line=number) from None


def iter_jsonl_samples(path: str | os.PathLike) -> Iterator[Sample]:
    """Samples of a JSON-lines file, one at a time. A file whose first non-blank character is
    `[` is read as one JSON array of objects instead (whole, as JSON arrays cannot stream)."""
    return (sample for _, sample in _located_jsonl(path))


def _located_jsonl(path: str | os.PathLike) -> Iterator[tuple[int | None, Sample]]:
    path = os.fspath(path)
    lines = iter_text_lines(path)
    notes = Lookalikes(path, "key", table=False)
    count = 0
    for number, text in lines:
        if not text.strip():
            continue
        if count == 0 and text.lstrip().startswith("["):
            yield from _json_array_samples(path, number, text, lines, notes)
            return
        try:
            record = _loads(text, path, number)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg} at column {exc.colno}", path=path,
                             line=number) from None
        yield number, row_to_sample(record, index=count, path=path, line=number, lookalikes=notes)
        count += 1
    if not count:
        raise InputError("empty input: no samples", path=path)


def _json_array_samples(path: str, first: int, text: str, rest: Iterator[tuple[int, str]],
                        notes: "Lookalikes | None" = None) -> Iterator[tuple[int | None, Sample]]:
    body = "\n".join([text] + [t for _, t in rest])
    try:
        records = _loads(body, path, None)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg} at column {exc.colno}", path=path,
                         line=first + exc.lineno - 1) from None
    if not isinstance(records, list):
        raise InputError(f"expected a JSON array of objects, got {type(records).__name__}", path=path)
    if not records:
        raise InputError("empty input: no samples", path=path)
    for i, record in enumerate(records):
        yield None, row_to_sample(record, index=i, path=f"{path}[{i}]", line=None, lookalikes=notes)


def read_jsonl(path: str | os.PathLike) -> list[Sample]:
    """One JSON object per line (or one JSON array); blank lines are skipped; an empty file is
    an error."""
    return list(iter_jsonl_samples(path))


# --------------------------------------------------------------------------- CSV / TSV

def read_table(path: str | os.PathLike, delimiter: str | None = None) -> list[Sample]:
    """CSV or TSV with a header row, each row read by `row_to_sample` (the rules every input
    shares).

    Columns: `response` (required); `id`, `system`; `context` (turns joined by ' ||| ', or a JSON
    list); references as `references` (a JSON list), `reference`, or `ref1`, `ref2`, ... columns;
    ratings as `rating:<quality>` columns (per-annotator scores may be `;`-separated). Any other
    column goes into `meta`; one that looks like a misspelt reference, rating or context column
    gets a warning.
    """
    return list(iter_table_samples(path, delimiter))


def iter_table_samples(path: str | os.PathLike, delimiter: str | None = None) -> Iterator[Sample]:
    """The samples of a CSV/TSV file (see `read_table`), read as a stream."""
    return (sample for _, sample in _located_table(path, delimiter))


def _located_table(path: str | os.PathLike, delimiter: str | None = None) -> Iterator[tuple[int, Sample]]:
    import csv   # here: only tables need it

    path = os.fspath(path)
    if delimiter is None:
        delimiter = "\t" if path.endswith((".tsv", ".tab")) else ","
    reader = csv.reader((text + "\n" for _, text in iter_text_lines(path)), delimiter=delimiter)
    try:
        header = next(reader)
        while not any(h.strip() for h in header):
            header = next(reader)
    except StopIteration:
        raise InputError("empty input: no header row", path=path) from None
    except csv.Error as exc:
        raise InputError(f"malformed header: {exc}", path=path, line=1) from None
    header = [h.strip() for h in header]
    if "response" not in header:
        raise InputError(f"no 'response' column in the header{_spelt_otherwise('response', header)}",
                         path=path, line=1, field="response")
    Lookalikes(path, "column", table=True).check(header, None)
    count = 0
    try:
        for row in reader:
            number = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise InputError(f"has {len(row)} columns, the header has {len(header)}",
                                 path=path, line=number)
            cells = dict(zip(header, row))
            yield number, row_to_sample(cells, index=count, path=path, line=number, cells=True)
            count += 1
    except csv.Error as exc:
        raise InputError(f"malformed row: {exc}", path=path, line=reader.line_num) from None
    if not count:
        raise InputError("empty input: no samples after the header", path=path)


# --------------------------------------------------------------------------- parallel files

def read_parallel(hyp_paths: Sequence[str | os.PathLike], ref_paths: Sequence[str | os.PathLike],
                  systems: Sequence[str] | None = None, strip: bool = True) -> list[Sample]:
    """nlg-eval-style input: hypothesis files (one system each) and line-aligned reference files.

    Lines are `.strip()`ed as nlg-eval does. Every file must have the same number of lines.
    """
    return list(iter_parallel_samples(hyp_paths, ref_paths, systems, strip))


def iter_parallel_samples(hyp_paths: Sequence[str | os.PathLike], ref_paths: Sequence[str | os.PathLike],
                          systems: Sequence[str] | None = None, strip: bool = True) -> Iterator[Sample]:
    """`read_parallel` as a stream: system after system, every file read line by line. Line
    counts are checked first (a cheap count of newlines), so a mismatch stops the run before
    anything is scored."""
    hyp_paths = [os.fspath(p) for p in hyp_paths]
    ref_paths = [os.fspath(p) for p in ref_paths]
    if not hyp_paths:
        raise InputError("no hypothesis file given")
    if systems and len(systems) != len(hyp_paths):
        raise InputError(f"{len(systems)} system names for {len(hyp_paths)} hypothesis files")
    if STDIN in hyp_paths + ref_paths:
        raise InputError("parallel files cannot be read from standard input ('-')")
    if not systems:
        stems = [Path(p).stem for p in hyp_paths]
        systems = stems if len(set(stems)) == len(stems) else hyp_paths
    for p in hyp_paths + ref_paths:
        if not os.path.exists(p):
            raise InputError("no such file", path=p)
    ref_counts = [count_lines(p) for p in ref_paths]
    for hyp_path in hyp_paths:
        n_hyp = count_lines(hyp_path)
        if not n_hyp:
            raise InputError("empty input: no lines", path=hyp_path)
        for ref_path, n_ref in zip(ref_paths, ref_counts):
            if n_ref != n_hyp:
                raise InputError(f"has {n_ref} lines but hypothesis file {hyp_path} has "
                                 f"{n_hyp}", path=ref_path, line=min(n_ref, n_hyp) + 1)
    for hyp_path, system in zip(hyp_paths, systems):
        # the files' lines side by side (their counts are equal, checked above)
        columns = [chain.from_iterable(iter_text_blocks(p)) for p in [hyp_path, *ref_paths]]
        for number, (hyp, *refs) in enumerate(zip(*columns), 1):
            if strip:
                hyp = hyp.strip()
                refs = list(map(str.strip, refs))
            yield Sample(id=f"{system}:{number}", response=hyp, references=refs,
                         system=system, meta={"line": number})


# --------------------------------------------------------------------------- dispatch

def input_format(path: str, fmt: str | None = None) -> str:
    """The format of `path` from `fmt` or its extension; standard input (`-`) is JSON lines
    unless `fmt` says otherwise."""
    if fmt is not None:
        if fmt not in ("jsonl", "json", "csv", "tsv"):
            raise InputError(f"unknown format {fmt!r}", path=path)
        return "jsonl" if fmt == "json" else fmt
    if path == STDIN:
        return "jsonl"
    lower = path.lower()
    if lower.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if lower.endswith((".tsv", ".tab")):
        return "tsv"
    if lower.endswith(".csv"):
        return "csv"
    raise InputError("unknown input format (use .jsonl, .json, .csv or .tsv, or --format)", path=path)


def iter_samples(path: str | os.PathLike, fmt: str | None = None, check_ids: bool = True) -> Iterator[Sample]:
    """The samples of a JSONL / JSON-array / CSV / TSV file (or `-`), read as a stream. With
    `check_ids`, an id seen twice for the same system stops with a located one-line error."""
    path = os.fspath(path)
    fmt = input_format(path, fmt)
    if path != STDIN and not os.path.exists(path):
        raise InputError("no such file", path=path)
    located = _located_jsonl(path) if fmt == "jsonl" else _located_table(path, "," if fmt == "csv" else "\t")
    if check_ids:
        return unique_ids(located, path)
    return (sample for _, sample in located)


def read_samples(path: str | os.PathLike, fmt: str | None = None) -> list[Sample]:
    """Read a JSONL (or JSON array), CSV or TSV file, chosen by `fmt` or the file's extension."""
    return list(iter_samples(path, fmt))


class IdRegistry:
    """Which (system, id) pairs have been seen, in bounded memory: 8-byte hashes in a sorted
    array (1M samples: 8 MB), checked a chunk at a time."""

    def __init__(self):
        self.seen = np.zeros(0, dtype=np.uint64)

    @staticmethod
    def key(sample: Sample) -> int:
        import hashlib   # on use, not at import: it loads OpenSSL, which parallel files never need

        text = f"{sample.system}\x00{sample.id}".encode("utf-8", "surrogatepass")
        return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")

    def add(self, samples: Sequence[Sample]) -> int | None:
        """Record `samples`; the index of the first one already seen, or None."""
        keys = np.fromiter((self.key(s) for s in samples), dtype=np.uint64, count=len(samples))
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        dup = np.zeros(len(keys), dtype=bool)
        if len(ordered) > 1:
            dup[order[1:][ordered[1:] == ordered[:-1]]] = True
        if len(self.seen):
            pos = np.minimum(np.searchsorted(self.seen, keys), len(self.seen) - 1)
            dup |= self.seen[pos] == keys
        if dup.any():
            return int(np.flatnonzero(dup)[0])
        self.seen = np.sort(np.concatenate([self.seen, ordered]), kind="stable")
        return None


def unique_ids(located: Iterable[tuple[int | None, Sample]], path: str, block: int = 2048) -> Iterator[Sample]:
    """Pass (line, sample) pairs through as samples, refusing an id that occurs twice for one
    system with the line of its second occurrence."""
    registry = IdRegistry()
    pending: list[Sample] = []
    lines: list[int | None] = []

    def check() -> None:
        bad = registry.add(pending)
        if bad is not None:
            sample = pending[bad]
            where = lines[bad]
            system = f" for system {sample.system!r}" if sample.system is not None else ""
            column = system_lookalike(sample)
            if column is not None:   # two systems' rows under a misnamed system column
                raise InputError(f"duplicate id {sample.id!r} (ids must be unique within a system, and "
                                 f"no row has a `system`: field {column!r} looks like it; name it "
                                 "`system` to score each system on its own)",
                                 path=path, line=where, field="id")
            raise InputError(f"duplicate id {sample.id!r}{system} (ids must be unique within a "
                             "system; give each sample its own id, or leave ids out)",
                             path=path, line=where, field="id")

    for line, sample in located:
        pending.append(sample)
        lines.append(line)
        if len(pending) >= block:
            check()
            yield from pending
            pending, lines = [], []
    if pending:
        check()
        yield from pending


def chunked(samples: Iterable[Sample], size: int) -> Iterator[list[Sample]]:
    """Consecutive runs of `size` samples (the last may be shorter)."""
    chunk: list[Sample] = []
    for sample in samples:
        chunk.append(sample)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
