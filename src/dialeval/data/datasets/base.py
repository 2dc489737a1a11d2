"""What every public data set loader shares: the `Dataset` it returns, and readers that turn
a data set's quirks (non-numeric ratings, cp1252 files, joined contexts) into one located
error or a clean value.

Conventions every loader follows:
- qualities are lower snake_case (`maintains_context`), each described with its scale in
  `DatasetInfo.qualities` and its (low, high) in `DatasetInfo.scales`;
- `Sample.ratings[q]` lists the individual annotators' scores in the order the data set gives
  them; a rating the data set leaves blank or as free text ("N/A (no errors)") is NaN, so the
  rater slots stay aligned;
- `meta["dialogue_id"]` names the dialogue a sample belongs to (dialogue-level correlation
  groups by it); `system` is the model that produced the response.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..readers import parse_rating
from ..sample import DatasetInfo, Sample

DIALOGUE_ID = "dialogue_id"


@dataclass(frozen=True)
class Source:
    """Where a data set's folder comes from, under what terms, and how the loader expects it
    laid out. Each loader module declares its `SOURCE`; `dialeval datasets --sources` and
    docs/datasets.md are both rendered from these (`dialeval.data.datasets.sources`)."""

    folder: str                 # the folder name under a --data-root
    title: str                  # the data set and its paper
    origin: str                 # project page / repository (and commit) the files come from
    licence: str                # the data's terms, in short
    layout: tuple[str, ...]     # files the loader reads, relative to the folder
    note: str = ""


@dataclass
class Dataset:
    info: DatasetInfo
    samples: list[Sample]
    # Human scores given only per system (DSTC6): system -> quality -> mean rating.
    system_ratings: dict[str, dict[str, float]] = field(default_factory=dict)
    # Systems whose response *is* the reference (USR's "Original Ground Truth"): a
    # reference-based metric scores them against themselves, so `dialeval evaluate` leaves
    # them out unless asked to keep them.
    reference_systems: tuple[str, ...] = ()

    def systems(self) -> list[str]:
        """System names in order of first appearance."""
        return list(dict.fromkeys(s.system for s in self.samples if s.system is not None))

    def describe(self) -> dict[str, Any]:
        """What a user needs before scoring: size, level, references, qualities with their
        scales, systems (with sample counts) and whether human scores are per sample."""
        n_refs = [len(s.references) for s in self.samples]
        systems: dict[str, int] = {}
        for s in self.samples:
            if s.system is not None:
                systems[s.system] = systems.get(s.system, 0) + 1
        return {
            "name": self.info.name, "description": self.info.description,
            "samples": len(self.samples), "level": self.info.level,
            "references": {"samples_with": sum(1 for k in n_refs if k),
                           "min": min(n_refs, default=0), "max": max(n_refs, default=0)},
            "qualities": {q: {"scale": list(self.info.scales.get(q, ())), "description": d}
                          for q, d in self.info.qualities.items()},
            "systems": systems,
            "reference_systems": list(self.reference_systems),
            "human_scores": "per system (means only)" if self.system_ratings else "per sample",
        }

    def without_systems(self, names) -> "Dataset":
        """This data set without those systems' samples (and system-level ratings)."""
        drop = set(names)
        return Dataset(self.info, [s for s in self.samples if s.system not in drop],
                       {k: v for k, v in self.system_ratings.items() if k not in drop},
                       tuple(r for r in self.reference_systems if r not in drop))


def snake(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


def need_file(root: str | os.PathLike, *parts: str) -> Path:
    path = Path(root, *parts)
    if not path.exists():
        raise InputError("missing file (is this the data set's folder?)", path=str(path))
    return path


def read_text(path: str | os.PathLike) -> str:
    """A text file as UTF-8, falling back to cp1252 (several crowd-sourced files are
    Windows-encoded). A file that is neither is reported."""
    data = Path(path).read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError as exc:
            raise InputError(f"neither UTF-8 nor cp1252 (byte 0x{data[exc.start]:02x})",
                             path=str(path)) from None


def read_json(path: str | os.PathLike) -> Any:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"bad JSON: {exc.msg}", path=str(path), line=exc.lineno) from None


def read_csv(path: str | os.PathLike, *, header: bool = True) -> list:
    """Rows of a CSV file (dicts with a header, lists without), with their 1-based line."""
    text = read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline="")) if header else csv.reader(io.StringIO(text, newline=""))
    rows = []
    try:
        for row in reader:
            if header and (None in row or None in row.values()):
                # DictReader pads a short row with None and files a long row's extra cells under
                # the key None: either way the columns no longer line up.
                count = sum(v is not None for k, v in row.items() if k is not None) + len(row.get(None) or [])
                raise InputError(f"has {count} fields, the header has {len(reader.fieldnames or [])}",
                                 path=str(path), line=reader.line_num)
            rows.append((reader.line_num, row))
    except csv.Error as exc:
        raise InputError(f"malformed CSV: {exc}", path=str(path), line=reader.line_num) from None
    return rows


def rating(value: Any, *, path, line=None, field=None) -> float:
    """A loader's rating: the one rule of `dialeval.data.readers.parse_rating`."""
    return parse_rating(value, path=path, line=line, field=field)
