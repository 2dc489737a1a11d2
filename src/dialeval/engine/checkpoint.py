"""The checkpoint of a streamed run: `OUTPUT.resume.json`, and the merged first pass beside it.

The JSON checkpoint records how many shards and bytes of `OUTPUT.partial` are done and the
merged per-system states (floats written with `repr`, which round-trips exactly). It is written
to a temporary file, synced and renamed, so a kill at any moment leaves the previous one whole.

The corpus-wide first pass (CIDEr's document frequencies) is read from the whole input before
scoring starts; for a big input it is a sizeable part of the run. Once it is merged it goes to
`OUTPUT.firstpass.npz` (numpy arrays, no pickle): one entry per distinct state, since systems
scored against the same references share one state. The JSON checkpoint names the file with its
sha256, which systems use which state, and under which key; `--resume` loads it instead of
reading the input again. A metric whose state cannot be written as arrays, a missing file or a
file that does not match its sha256 only means the first pass is done again.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ..errors import DialevalError
from .plan import Plan

FIRST_PASS_SUFFIX = ".firstpass.npz"


def _sha256_of(path: str) -> str:
    """`models.store.sha256_of`, imported on first use: hashlib loads OpenSSL, which a run that
    saves no first pass never needs at start-up."""
    from ..models.store import sha256_of

    return sha256_of(path)


def save_checkpoint(path: str, state: dict[str, Any]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(state, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def load_checkpoint(checkpoint: str, partial: str, fingerprint: dict[str, Any]) -> dict[str, Any] | None:
    """The checkpoint of this run, None when there is none; refused when another run made it."""
    if not (os.path.exists(checkpoint) and os.path.exists(partial)):
        return None
    try:
        with open(checkpoint, encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        raise DialevalError(f"{checkpoint}: unreadable checkpoint; run without --resume") from None
    if state.get("fingerprint") != json.loads(json.dumps(fingerprint)):
        raise DialevalError(f"{checkpoint}: made by a different run (input, metrics, options or "
                            "shard size changed); run without --resume to start again")
    if os.path.getsize(partial) < int(state["bytes"]):
        raise DialevalError(f"{partial}: shorter than its checkpoint says; run without --resume")
    return state


def save_first_pass(path: str, plan: Plan, corpus: dict[str, dict[Any, Any]]) -> dict[str, Any] | None:
    """Write the merged first pass to `path` (atomically); the record the JSON checkpoint keeps,
    or None when a metric cannot write its state (a resumed run then redoes the pass)."""
    metrics = plan.metrics()
    key_names = {key: repr(key) for key in plan.first_pass}
    arrays: dict[str, np.ndarray] = {}
    slots: dict[int, int] = {}            # id(state) -> its number in the file
    systems: dict[str, dict[str, int]] = {}
    for system, states in corpus.items():
        systems[system] = {}
        for key, state in states.items():
            if id(state) not in slots:
                try:
                    parts = metrics[plan.first_pass[key]].corpus_pass_arrays(state)
                except NotImplementedError:
                    return None
                slots[id(state)] = number = len(slots)
                arrays.update({f"{number}/{name}": np.asarray(a) for name, a in parts.items()})
            systems[system][key_names[key]] = slots[id(state)]
    tmp = path + ".tmp"
    with open(tmp, "wb") as handle:
        np.savez(handle, **arrays)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return {"file": os.path.basename(path), "sha256": _sha256_of(path), "systems": systems}


def load_first_pass(path: str, plan: Plan, record: dict[str, Any] | None) -> dict[str, dict[Any, Any]] | None:
    """The merged first pass `save_first_pass` wrote, or None when it cannot be had as written."""
    if not record or not os.path.exists(path) or _sha256_of(path) != record.get("sha256"):
        return None
    metrics = plan.metrics()
    keys = {repr(key): key for key in plan.first_pass}
    with np.load(path, allow_pickle=False) as npz:
        files = {name: npz[name] for name in npz.files}
    states: dict[int, Any] = {}
    corpus: dict[str, dict[Any, Any]] = {}
    for system, by_key in record["systems"].items():
        corpus[system] = {}
        for key_name, number in by_key.items():
            key = keys.get(key_name)
            if key is None:
                return None
            if number not in states:
                prefix = f"{number}/"
                parts = {name[len(prefix):]: a for name, a in files.items() if name.startswith(prefix)}
                states[number] = metrics[plan.first_pass[key]].corpus_pass_from_arrays(parts)
            corpus[system][key] = states[number]
    return corpus
