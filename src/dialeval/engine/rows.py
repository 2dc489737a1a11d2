"""The text of the per-sample output rows (`dialeval score -o`), fast for plain rows.

A row is `json.dumps(output_row(sample, scores), ensure_ascii=False)`: that definition stays
in `row_line`, used for every row it is not cheap to write otherwise. Building a dict per row
and encoding it costs tens of microseconds, most of it spent on strings that need no escaping
and on float scores whose text is their `repr`. `plain_row_line` writes the same bytes
directly for the common row: strings without a character that JSON escapes (`"`, `\\`,
control characters; with `ensure_ascii=False` nothing else is escaped), scores as `repr` (or
`null` when not finite), no ratings, and a `meta` that is empty or the parallel-file reader's
`{"line": N}`. The test `test_engine_rows.py` checks the two give the same text on random rows.
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

from ..data.sample import Sample
from ..data.writers import json_value

# one encoder for every row (json.dumps with options builds a new one per call)
_ROW_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)

# the bytes JSON's string encoder escapes (as UTF-8 never uses them inside a longer character,
# a search of the encoded bytes finds exactly the characters)
_ESCAPED = bytes([ord('"'), ord("\\"), *range(0x20)])

_isfinite = math.isfinite


def output_row(sample: Sample, scores: dict[str, float]) -> dict[str, Any]:
    """The per-sample output row (JSON-ready: non-finite scores become null)."""
    row: dict[str, Any] = {"id": sample.id, "system": sample.system, "response": sample.response,
                           "references": list(sample.references),
                           "scores": {m: _clean(v) for m, v in scores.items()}}
    if sample.ratings:
        row["ratings"] = sample.ratings
    if sample.context:
        row["context"] = sample.context
    if sample.meta:
        row["meta"] = sample.meta
    return row


def _clean(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def row_line(sample: Sample, scores: dict[str, float], extra: dict[str, Any] | None = None) -> str:
    """One output row, by definition: the JSON of `output_row` (and `extra`), one line."""
    row = output_row(sample, scores)
    if extra:
        row.update(extra)
    try:
        return _ROW_ENCODER.encode(row) + "\n"   # = json.dumps(row, ensure_ascii=False, allow_nan=False)
    except ValueError:   # NaN in ratings or meta
        return json.dumps(json_value(row), ensure_ascii=False) + "\n"


def _plain(text: str) -> bool:
    """True when JSON writes `text` as itself between quotes."""
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:   # lone surrogates: left to the encoder
        return False
    return len(raw.translate(None, _ESCAPED)) == len(raw)


def score_keys(names: Sequence[str]) -> list[str] | None:
    """The `"name": ` prefix of each score in a plain row, or None when a name needs escaping."""
    if not all(type(m) is str and _plain(m) for m in names):
        return None
    return [f'"{m}": ' for m in names]


def plain_row_line(sample: Sample, keys: list[str], values: Sequence[float]) -> str | None:
    """`row_line(sample, dict(zip(names, values)))` written directly (`keys` from
    `score_keys(names)`, `values` Python floats), or None when the row is not plain."""
    system = sample.system
    meta = sample.meta
    if (sample.ratings or type(sample.id) is not str or not (system is None or type(system) is str)
            or type(sample.response) is not str):
        return None
    if meta:
        if len(meta) != 1 or type(meta.get("line")) is not int:
            return None
        tail = f', "meta": {{"line": {meta["line"]}}}}}\n'
    else:
        tail = "}\n"
    refs = sample.references
    context = sample.context
    try:
        text = "\x20".join([sample.id, system or "", sample.response, *refs, *context])
    except TypeError:   # a non-string reference or context turn
        return None
    if not _plain(text):
        return None
    scores = ", ".join([k + (repr(v) if _isfinite(v) else "null") for k, v in zip(keys, values)])
    refs_text = '["' + '", "'.join(refs) + '"]' if refs else "[]"
    system_text = "null" if system is None else f'"{system}"'
    if context:
        tail = ', "context": ["' + '", "'.join(context) + '"]' + tail
    return (f'{{"id": "{sample.id}", "system": {system_text}, "response": "{sample.response}", '
            f'"references": {refs_text}, "scores": {{{scores}}}{tail}')


def rows_text(samples: Sequence[Sample], names: Sequence[str], columns: Sequence[Sequence[float]],
              extras: Sequence[dict[str, Any] | None] | None = None) -> str:
    """The output rows of `samples` (scores: `columns[k][i]` is metric `names[k]` of sample i),
    plain rows written directly, the others by `row_line`."""
    keys = score_keys(names)
    lines = []
    for i, (sample, values) in enumerate(zip(samples, zip(*columns) if columns else ((),) * len(samples))):
        extra = extras[i] if extras is not None else None
        line = plain_row_line(sample, keys, values) if keys is not None and not extra else None
        if line is None:
            line = row_line(sample, dict(zip(names, values)), extra)
        lines.append(line)
    return "".join(lines)
