"""Which rows of two systems are the same item, so that a paired test compares like with like.

Items are paired per comparison (each system against the baseline, or each pair of systems) by
a key the user chooses (`pair_by`): an `item` field, `dialogue_id` + `turn`, the sample `id`, the
context and references, or the position within the system; `auto` takes the first explicit key
every row has (see `resolve_pair_by`).
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import DialevalError


def item_keys(rows: Sequence[dict]) -> list[tuple]:
    """A key per row that is equal for the same evaluated item in every system: the context and
    references (and which occurrence of that pair it is); rows without either by position."""
    seen: dict[tuple, int] = {}
    keys = []
    for row in rows:
        context = tuple(row.get("context") or ())
        refs = tuple(row.get("references") or ())
        system = row.get("system")
        base = (context, refs) if (context or refs) else ()
        k = seen.get((system, base), 0)
        seen[(system, base)] = k + 1
        keys.append((base, k))
    return keys

PAIR_BY = ("auto", "item", "dialogue", "id", "context", "position")

PAIR_BY_HELP = {
    "item": "the rows' `item` field",
    "dialogue": "the rows' `dialogue_id` and `turn` fields",
    "id": "the rows' `id`",
    "context": "the context and references",
    "position": "the position of the row within its system",
}

def _field(row: dict, name: str) -> Any:
    """A row's field, top level or (where the readers keep unknown input fields) in `meta`."""
    if row.get(name) is not None:
        return row[name]
    return (row.get("meta") or {}).get(name)

def _explicit_keys(rows: Sequence[dict], system_of: Sequence[str], pair_by: str
                   ) -> tuple[list | None, str | None]:
    """(keys, None), or (None, why not) when a row lacks the field or a system repeats a key."""
    keys: list = []
    seen: set = set()
    for row, system in zip(rows, system_of):
        if pair_by == "item":
            value = _field(row, "item")
            key = None if value is None else ("item", json_key(value))
        elif pair_by == "dialogue":
            d, t = _field(row, "dialogue_id"), _field(row, "turn")
            key = None if d is None or t is None else ("dialogue", json_key(d), json_key(t))
        elif pair_by == "id":
            key = None if row.get("id") is None else ("id", str(row["id"]))
        else:
            raise ValueError(pair_by)
        where = f"line {row['_line']}" if "_line" in row else f"row {len(keys) + 1}"
        if key is None:
            return None, f"{where} has no {PAIR_BY_HELP[pair_by][10:]}"
        if (system, key) in seen:
            return None, f"{where}: system {system!r} has {key[1:]} twice"
        seen.add((system, key))
        keys.append(key)
    return keys, None

def json_key(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) else repr(value)

def resolve_pair_by(rows: Sequence[dict], pair_by: str = "auto",
                    system_of: Sequence[str] | None = None) -> tuple[str, list]:
    """(the key used, a key per row). `auto`: `item` when every row has one, else `dialogue_id`
    + `turn` when every row has both, else `id` when ids repeat across systems (an id naming the
    item, not the row), each unique within its system; else the context and references."""
    if pair_by not in PAIR_BY:
        raise DialevalError(f"unknown pairing {pair_by!r}; choose from {', '.join(PAIR_BY)}")
    if system_of is None:
        system_of = [r.get("system") if r.get("system") is not None else "all" for r in rows]
    if pair_by == "context":
        return "context", item_keys(rows)
    if pair_by == "position":
        seen: dict[str, int] = {}
        keys = []
        for s in system_of:
            keys.append(("position", seen.get(s, 0)))
            seen[s] = seen.get(s, 0) + 1
        return "position", keys
    if pair_by != "auto":
        keys, why = _explicit_keys(rows, system_of, pair_by)
        if keys is None:
            raise DialevalError(f"--pair-by {pair_by}: {why}")
        return pair_by, keys
    for candidate in ("item", "dialogue", "id"):
        keys, why = _explicit_keys(rows, system_of, candidate)
        if keys is None:
            continue
        if candidate == "id":
            owners: dict = {}
            for k, s in zip(keys, system_of):
                owners.setdefault(k, set()).add(s)
            if not any(len(v) > 1 for v in owners.values()):
                continue        # every id is one row's: ids name rows, not items
        return candidate, keys
    return "context", item_keys(rows)


__all__ = ["PAIR_BY", "PAIR_BY_HELP", "item_keys", "json_key", "resolve_pair_by"]
