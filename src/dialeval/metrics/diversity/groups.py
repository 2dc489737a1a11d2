"""Reading groups of responses (one group per original query) from files.

- CSV with a header naming an answers column (`Answer Group`, `responses` or `answers`):
  one group per row, the responses newline-separated in the cell (the holistic paper's
  Response_Diversity files, which are cp1252-encoded: `encoding` says so, or UTF-8 is tried
  first and cp1252 after);
- JSONL: one group per line, `{"responses": [...]}` (`id`, `queries`, `context` kept);
- plain text: groups separated by blank lines, or with `group_size` every N lines a group.
"""

from __future__ import annotations

import csv
import io
import json
import os

from ...errors import InputError

ANSWER_COLUMNS = ("answer group", "responses", "answers", "response group")


def _decode(path: str, encoding: str | None) -> str:
    with open(path, "rb") as handle:
        data = handle.read()
    for enc in ([encoding] if encoding else ["utf-8", "cp1252"]):
        try:
            return data.decode(enc)
        except UnicodeDecodeError as exc:
            if encoding:
                line = data[:exc.start].count(b"\n") + 1
                raise InputError(f"not valid {enc} at byte {exc.start}", path=path, line=line) from None
        except LookupError:
            raise InputError(f"unknown encoding {enc!r}", path=path) from None
    raise InputError("neither UTF-8 nor cp1252 text", path=path)


def read_groups(path: str | os.PathLike, fmt: str | None = None, group_size: int | None = None,
                encoding: str | None = None) -> list[dict]:
    """Groups as dicts with `responses` (list of strings) and whatever else the file gives."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("no such file", path=path)
    text = _decode(path, encoding)
    fmt = fmt or ("csv" if path.lower().endswith(".csv") else
                  "jsonl" if path.lower().endswith((".jsonl", ".json")) else "text")
    groups: list[dict] = []
    if fmt == "csv":
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if not header:
            raise InputError("empty CSV", path=path)
        names = [h.strip().lower() for h in header]
        col = next((names.index(c) for c in ANSWER_COLUMNS if c in names), None)
        if col is None:
            raise InputError(f"no answers column (one of {', '.join(ANSWER_COLUMNS)})", path=path, line=1)
        qcol = next((names.index(c) for c in ("question group", "queries") if c in names), None)
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            line = reader.line_num
            if len(row) <= col:
                raise InputError(f"row has {len(row)} columns", path=path, line=line, field=header[col])
            group = {"id": row[0], "responses": [r.strip() for r in row[col].splitlines() if r.strip()]}
            if qcol is not None and qcol < len(row):
                group["queries"] = [q.strip() for q in row[qcol].splitlines() if q.strip()]
            groups.append(group)
    elif fmt == "jsonl":
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise InputError(f"not JSON ({exc.msg})", path=path, line=number) from None
            responses = obj.get("responses") if isinstance(obj, dict) else obj
            if not isinstance(responses, list) or not all(isinstance(r, str) for r in responses):
                raise InputError("expected a list of strings", path=path, line=number, field="responses")
            group = dict(obj) if isinstance(obj, dict) else {}
            group["responses"] = responses
            groups.append(group)
    elif fmt == "text":
        lines = [line.strip() for line in text.splitlines()]
        if group_size:
            lines = [line for line in lines if line]
            groups = [{"responses": lines[i:i + group_size]} for i in range(0, len(lines), group_size)]
        else:
            current: list[str] = []
            for line in lines + [""]:
                if line:
                    current.append(line)
                elif current:
                    groups.append({"responses": current})
                    current = []
    else:
        raise InputError(f"unknown groups format {fmt!r}; choose csv, jsonl or text", path=path)
    if not groups:
        raise InputError("no groups of responses", path=path)
    return groups
