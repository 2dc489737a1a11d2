"""Readers: every input format becomes a list of `Sample`s, or one located `InputError`.

Files are decoded line by line so that a bad byte is reported with its line number, and every
record is validated field by field before anything is scored or written.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from ..errors import InputError
from .sample import Sample

_KNOWN_FIELDS = {"id", "context", "response", "references", "reference", "system", "ratings", "meta"}


def read_text_lines(path: str | os.PathLike) -> list[str]:
    """Lines of a UTF-8 text file, without their line ends; bad bytes are reported by line."""
    path = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", path=path) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    lines = []
    for number, raw in enumerate(raw_lines, 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at column {exc.start + 1}",
                             path=path, line=number) from None
        lines.append(text[:-1] if text.endswith("\r") else text)
    return lines


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


def record_to_sample(record: Any, *, index: int, path: str | None = None,
                     line: int | None = None) -> Sample:
    """Validate one dict-like record (JSONL object, data-frame row, API dict) into a Sample."""
    if not isinstance(record, dict):
        raise InputError(f"expected a JSON object, got {type(record).__name__}", path=path, line=line)
    if "response" not in record:
        raise InputError("missing (every sample needs a response)", path=path, line=line,
                         field="response")
    response = record["response"]
    if not isinstance(response, str):
        raise InputError(f"expected a string, got {type(response).__name__}", path=path, line=line,
                         field="response")
    if "references" in record:
        references = _as_str_list(record["references"], field="references", path=path, line=line,
                                  allow_string=False)
    else:
        references = _as_str_list(record.get("reference"), field="reference", path=path, line=line,
                                  allow_string=True)
    context = _as_str_list(record.get("context"), field="context", path=path, line=line,
                           allow_string=True)
    system = record.get("system")
    if system is not None and not isinstance(system, (str, int)):
        raise InputError(f"expected a string, got {type(system).__name__}", path=path, line=line,
                         field="system")
    sid = record.get("id")
    if sid is None:
        sid = str(index)
    elif not isinstance(sid, (str, int)):
        raise InputError(f"expected a string or integer, got {type(sid).__name__}", path=path,
                         line=line, field="id")
    meta = record.get("meta") or {}
    if not isinstance(meta, dict):
        raise InputError(f"expected an object, got {type(meta).__name__}", path=path, line=line,
                         field="meta")
    meta = dict(meta)
    for key, value in record.items():  # unknown top-level keys are kept, not dropped
        if key not in _KNOWN_FIELDS:
            meta.setdefault(key, value)
    return Sample(id=str(sid), response=response, context=context, references=references,
                  system=None if system is None else str(system),
                  ratings=_as_ratings(record.get("ratings"), path=path, line=line), meta=meta)


def from_records(records: Iterable[Any]) -> list[Sample]:
    """Samples from the Python API: Samples, dicts, or a pandas DataFrame."""
    if hasattr(records, "to_dict") and hasattr(records, "columns"):  # pandas DataFrame
        rows = records.to_dict(orient="records")
        return [record_to_sample(_clean_frame_row(row), index=i, line=i + 1, path="<DataFrame row>")
                for i, row in enumerate(rows)]
    out = []
    for i, record in enumerate(records):
        if isinstance(record, Sample):
            out.append(record)
        else:
            out.append(record_to_sample(record, index=i, path="<record>", line=i + 1))
    return out


def _clean_frame_row(row: dict) -> dict:
    cleaned = {}
    for key, value in row.items():
        if isinstance(value, float) and math.isnan(value):
            continue
        if hasattr(value, "tolist"):
            value = value.tolist()
        cleaned[key] = value
    return cleaned


# --------------------------------------------------------------------------- JSONL

def iter_json_lines(path: str | os.PathLike) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each non-blank line of a JSON-lines file; a line that is
    not JSON is reported with its number and column."""
    path = str(path)
    for number, text in enumerate(read_text_lines(path), 1):
        if not text.strip():
            continue
        try:
            yield number, json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg} at column {exc.colno}", path=path,
                             line=number) from None


def read_jsonl(path: str | os.PathLike) -> list[Sample]:
    """One JSON object per line; blank lines are skipped; an empty file is an error."""
    path = str(path)
    samples = []
    for number, record in iter_json_lines(path):
        samples.append(record_to_sample(record, index=len(samples), path=path, line=number))
    if not samples:
        raise InputError("empty input: no samples", path=path)
    return samples


# --------------------------------------------------------------------------- CSV / TSV

def read_table(path: str | os.PathLike, delimiter: str | None = None) -> list[Sample]:
    """CSV or TSV with a header row.

    Columns: `response` (required); `id`, `system`; `context` (turns joined by ' ||| ', or a JSON
    list); references as `references` (a JSON list), `reference`, or several `ref*` columns;
    ratings as `rating:<quality>` columns (per-annotator scores may be `;`-separated). Any other
    column goes into `meta`.
    """
    path = str(path)
    if delimiter is None:
        delimiter = "\t" if path.endswith((".tsv", ".tab")) else ","
    lines = read_text_lines(path)
    if not lines or not any(line.strip() for line in lines):
        raise InputError("empty input: no header row", path=path)
    reader = csv.reader(io.StringIO("\n".join(lines) + "\n"), delimiter=delimiter)
    try:
        header = next(reader)
    except csv.Error as exc:
        raise InputError(f"malformed header: {exc}", path=path, line=1) from None
    header = [h.strip() for h in header]
    if "response" not in header:
        raise InputError("no 'response' column in the header", path=path, line=1, field="response")
    ref_cols = [h for h in header if h in ("reference", "references") or
                (h.startswith("ref") and h[3:].isdigit())]
    samples = []
    try:
        for row in reader:
            number = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise InputError(f"has {len(row)} columns, the header has {len(header)}",
                                 path=path, line=number)
            cells = dict(zip(header, row))
            samples.append(_table_row_to_sample(cells, ref_cols, index=len(samples), path=path,
                                                line=number))
    except csv.Error as exc:
        raise InputError(f"malformed row: {exc}", path=path, line=reader.line_num) from None
    if not samples:
        raise InputError("empty input: no samples after the header", path=path)
    return samples


def _table_row_to_sample(cells: dict[str, str], ref_cols: Sequence[str], *, index, path, line):
    record: dict[str, Any] = {"response": cells["response"]}
    refs: list[str] = []
    for col in ref_cols:
        value = cells[col]
        if col == "references" and value.lstrip().startswith("["):
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError as exc:
                raise InputError(f"malformed JSON list: {exc.msg}", path=path, line=line,
                                 field=col) from None
            refs.extend(_as_str_list(parsed, field=col, path=path, line=line, allow_string=False))
        elif value != "" or col in ("reference", "references"):
            refs.append(value)
    record["references"] = refs
    ratings: dict[str, list] = {}
    meta: dict[str, Any] = {}
    for col, value in cells.items():
        if col in ref_cols or col == "response":
            continue
        if col == "context":
            text = value.strip()
            if text.startswith("["):
                try:
                    record["context"] = json.loads(text)
                except json.JSONDecodeError as exc:
                    raise InputError(f"malformed JSON list: {exc.msg}", path=path, line=line,
                                     field=col) from None
            else:
                record["context"] = [t.strip() for t in value.split("|||")] if value else []
        elif col in ("id", "system"):
            if value != "":
                record[col] = value
        elif col.startswith("rating:"):
            ratings[col[len("rating:"):]] = [v for v in value.split(";")] if value != "" else []
        else:
            meta[col] = value
    record["ratings"] = ratings
    record["meta"] = meta
    return record_to_sample(record, index=index, path=path, line=line)


# --------------------------------------------------------------------------- parallel files

def read_parallel(hyp_paths: Sequence[str | os.PathLike], ref_paths: Sequence[str | os.PathLike],
                  systems: Sequence[str] | None = None, strip: bool = True) -> list[Sample]:
    """nlg-eval-style input: hypothesis files (one system each) and line-aligned reference files.

    Lines are `.strip()`ed as nlg-eval does. Every file must have the same number of lines.
    """
    hyp_paths = [str(p) for p in hyp_paths]
    ref_paths = [str(p) for p in ref_paths]
    if not hyp_paths:
        raise InputError("no hypothesis file given")
    if systems and len(systems) != len(hyp_paths):
        raise InputError(f"{len(systems)} system names for {len(hyp_paths)} hypothesis files")
    if not systems:
        stems = [Path(p).stem for p in hyp_paths]
        systems = stems if len(set(stems)) == len(stems) else hyp_paths
    ref_lines = [read_text_lines(p) for p in ref_paths]
    samples: list[Sample] = []
    for hyp_path, system in zip(hyp_paths, systems):
        hyps = read_text_lines(hyp_path)
        if not hyps:
            raise InputError("empty input: no lines", path=hyp_path)
        for ref_path, lines in zip(ref_paths, ref_lines):
            if len(lines) != len(hyps):
                raise InputError(f"has {len(lines)} lines but hypothesis file {hyp_path} has "
                                 f"{len(hyps)}", path=ref_path, line=min(len(lines), len(hyps)) + 1)
        for i, hyp in enumerate(hyps):
            refs = [lines[i] for lines in ref_lines]
            if strip:
                hyp = hyp.strip()
                refs = [r.strip() for r in refs]
            samples.append(Sample(id=f"{system}:{i + 1}", response=hyp, references=refs,
                                  system=system, meta={"line": i + 1}))
    return samples


# --------------------------------------------------------------------------- dispatch

def read_samples(path: str | os.PathLike, fmt: str | None = None) -> list[Sample]:
    """Read a JSONL, CSV or TSV file, chosen by `fmt` or the file's extension."""
    path = str(path)
    if fmt is None:
        lower = path.lower()
        if lower.endswith((".jsonl", ".json", ".ndjson")):
            fmt = "jsonl"
        elif lower.endswith((".tsv", ".tab")):
            fmt = "tsv"
        elif lower.endswith(".csv"):
            fmt = "csv"
        else:
            raise InputError("unknown input format (use .jsonl, .csv or .tsv, or --format)",
                             path=path)
    if not os.path.exists(path):
        raise InputError("no such file", path=path)
    if fmt == "jsonl":
        return read_jsonl(path)
    if fmt == "csv":
        return read_table(path, ",")
    if fmt == "tsv":
        return read_table(path, "\t")
    raise InputError(f"unknown format {fmt!r}", path=path)


def iter_batches(samples: Sequence[Sample], size: int) -> Iterator[Sequence[Sample]]:
    for start in range(0, len(samples), size):
        yield samples[start:start + size]
