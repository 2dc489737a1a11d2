"""Writers. Output appears whole or not at all: written to a temporary file, then renamed."""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from typing import Any, Iterable, Iterator


def current_umask() -> int:
    """The process umask (read by setting and restoring it; there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode `open(path, "w")` would give a new file: 0o666 less the umask. `mkstemp`
    creates 0o600 whatever the umask, so files renamed from it get this mode explicitly."""
    return 0o666 & ~current_umask()


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w") -> Iterator[Any]:
    """Open a temporary file beside `path`; rename it over `path` only if the block succeeds.
    The file ends with the mode a plain `open` would give it (the umask is honoured)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix="-" + os.path.basename(path), dir=directory)
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def check_writable(path: str | os.PathLike, *, folder: bool = False, what: str = "output") -> None:
    """Refuse, before any work starts, an output that cannot be written: a file path naming a
    directory (or a folder path naming a file), or a place whose nearest existing folder
    refuses writing (permissions, a read-only mount). The test creates and removes a probe
    file there, as `os.access` can say yes where a read-only mount or an ACL says no. The
    error is one line naming the path; nothing is created (folders that would have to be
    made are not made here)."""
    from ..errors import DialevalError

    path = os.fspath(path)
    if not path or path == "-":
        return
    if os.path.isdir(path) and not folder:
        raise DialevalError(f"{what} {path}: is a directory (give a file name)")
    if os.path.exists(path) and folder and not os.path.isdir(path):
        raise DialevalError(f"{what} {path}: is a file (give a folder)")
    place = path if folder else os.path.dirname(os.path.abspath(path))
    place = os.path.abspath(place)
    while not os.path.exists(place):
        parent = os.path.dirname(place)
        if parent == place:
            break
        place = parent
    if not os.path.isdir(place):
        raise DialevalError(f"{what} {path}: cannot be written ({place} is not a folder)")
    try:
        fd, probe = tempfile.mkstemp(prefix=".dialeval-probe-", dir=place)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise DialevalError(f"{what} {path}: cannot be written ({place}: {reason})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def json_value(value: Any) -> Any:
    """JSON has no NaN: non-finite floats become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return json_value(value.item())
    return value


def write_jsonl(path: str | os.PathLike, records: Iterable[dict]) -> None:
    with atomic_write(path) as handle:
        for record in records:
            handle.write(json.dumps(json_value(record), ensure_ascii=False) + "\n")


def write_json(path: str | os.PathLike, obj: Any) -> None:
    with atomic_write(path) as handle:
        json.dump(json_value(obj), handle, ensure_ascii=False, indent=2)
        handle.write("\n")
