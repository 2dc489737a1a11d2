"""Reading a corpus file's bytes into JSON or CSV rows with errors that name the file (and the
line or field), shared by the readers of corpora read by name."""

from __future__ import annotations

import csv
import gzip
import io
import json
import zipfile
from typing import Any

from ...errors import InputError


def read_bytes(path: str) -> bytes:
    """The file's bytes, a `.gz` file decompressed."""
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as handle:
                return handle.read()
        with open(path, "rb") as handle:
            return handle.read()
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from None


def decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 at byte {exc.start}", path=path) from None


def load_json(data: bytes, path: str) -> Any:
    try:
        return json.loads(decode(data, path))
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg}", path=path, line=exc.lineno) from None


def json_lines(path: str) -> list[tuple[int, Any]]:
    """(line number, object) of each non-blank line of a JSON Lines file."""
    out = []
    for number, line in enumerate(decode(read_bytes(path), path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg}", path=path, line=number) from None
    return out


def csv_rows(path: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) of a CSV file with a header; a row whose cells do not match the header
    is located."""
    reader = csv.DictReader(io.StringIO(decode(read_bytes(path), path), newline=""))
    rows = []
    try:
        for row in reader:
            if None in row or None in row.values():
                raise InputError(f"a row with {len(row) - 1 if None in row else len(row)} cells under a header of "
                                 f"{len(reader.fieldnames or [])}", path=path, line=reader.line_num)
            rows.append((reader.line_num, row))
    except csv.Error as exc:
        raise InputError(f"malformed CSV: {exc}", path=path, line=reader.line_num) from None
    return rows


def zip_members(path: str, suffix: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of the archive's members ending in `suffix`, in name order."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise InputError(f"cannot open zip archive: {exc}", path=path) from None
    with archive:
        names = sorted(n for n in archive.namelist() if n.endswith(suffix))
        return [(n, archive.read(n)) for n in names]


def need(value: Any, kind: type, path: str, field: str, line: int | None = None) -> Any:
    """`value` when it is a `kind`, else the located error a changed file deserves."""
    if not isinstance(value, kind):
        names = {str: "a string", list: "a list", dict: "an object"}
        raise InputError(f"expected {names.get(kind, kind.__name__)}", path=path, line=line, field=field)
    return value
