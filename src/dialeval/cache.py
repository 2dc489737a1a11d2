"""One bounded cache: what every loaded model and every per-text memo of the process lives in.

Before this module, the backbone door and the trained-artifact door each kept their own LRU (of
3 and of 8 entries) and six per-text memos followed four rules (none, 512 MB, 200k items, 500k
then clear-all), so no one number said how much memory the process would hold, and a model
derived from another (a LoRA adapter merged into its base, a bf16 copy) sat in one cache while
its base sat in the other: evicting the base freed nothing.

`BoundedCache` is least-recently-used with two bounds, entries (`max_items`) and bytes
(`max_bytes`), either or both; the entry just stored always stays, even if it alone is over the
byte budget (a model larger than the budget is still usable, it simply evicts everything else).
Sizes are measured when an entry is stored (`nbytes`): numpy arrays and torch tensors by their
buffers, a torch module by its parameters and buffers, containers and plain objects by what they
hold, and weights shared between two entries (the plain-transformers view of a
sentence-transformers folder shares its weights) are counted once, for the entry that stored them
first. An entry stored with `parent=KEY` is derived from that entry and leaves with it.

`MODELS` is the process's one model cache: both doors (`dialeval.backbones`, the loaded
encoders; `dialeval.models.artifacts`, the trained folders) store into it under their own key
prefix, within one budget: `DIALEVAL_MODEL_CACHE_MB` (default: half the machine's memory) and at
most `MODEL_ITEMS` entries.

The module imports nothing heavy: sizes are read by duck typing, so `import dialeval` and the
word-overlap metrics stay light.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterator

# Every family of one run (a sentence encoder, a causal LM, the judge's LM, ADEM, AM-FM, MME, two
# compositions) with room for a comparison of two folders of one kind.
MODEL_ITEMS = 11


def _storage_key(tensor: Any) -> tuple[int, int] | None:
    """(address, size) of a torch tensor's storage, so two views of one buffer count once."""
    try:
        storage = tensor.untyped_storage()
        return (storage.data_ptr(), storage.nbytes())
    except Exception:  # noqa: BLE001 - a meta or sparse tensor has no plain storage
        return None


def _walk(value: Any, seen: set, depth: int) -> int:
    if value is None or isinstance(value, (bool, int, float)):
        return 0
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if id(value) in seen:
        return 0
    seen.add(id(value))
    nbytes = getattr(value, "nbytes", None)
    module = type(value).__module__ or ""
    if module.startswith("torch"):
        if hasattr(value, "named_parameters") and hasattr(value, "buffers"):   # an nn.Module
            total = 0
            for tensor in list(value.parameters()) + list(value.buffers()):
                total += _tensor_bytes(tensor, seen)
            return total
        if hasattr(value, "untyped_storage"):
            return _tensor_bytes(value, seen)
        return 0
    if isinstance(nbytes, int) and hasattr(value, "dtype"):     # a numpy array (or alike)
        base = getattr(value, "base", None)
        if base is not None and id(base) in seen:
            return 0
        return nbytes
    if depth <= 0:
        return sys.getsizeof(value, 0)
    if isinstance(value, dict):
        return sum(_walk(k, seen, depth - 1) + _walk(v, seen, depth - 1) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sum(_walk(v, seen, depth - 1) for v in value)
    attrs = getattr(value, "__dict__", None)
    slots = getattr(type(value), "__slots__", ())
    total = 0
    if isinstance(attrs, dict):
        total += sum(_walk(v, seen, depth - 1) for v in attrs.values())
    for name in slots if isinstance(slots, (tuple, list)) else ():
        total += _walk(getattr(value, name, None), seen, depth - 1)
    return total


def _tensor_bytes(tensor: Any, seen: set) -> int:
    key = _storage_key(tensor)
    if key is None:
        return 0
    if key in seen:
        return 0
    seen.add(key)
    return key[1]


def nbytes(value: Any, seen: set | None = None, depth: int = 6) -> int:
    """Bytes `value` holds (see the module doc); `seen` (ids and storages already counted) is
    updated, so sizing several values with one set counts shared buffers once."""
    return _walk(value, seen if seen is not None else set(), depth)


def default_model_budget() -> int | None:
    """`DIALEVAL_MODEL_CACHE_MB` in bytes, else half of physical memory (None where unknown)."""
    given = os.environ.get("DIALEVAL_MODEL_CACHE_MB")
    if given:
        try:
            return max(0, int(float(given) * 2 ** 20))
        except ValueError:
            from .errors import DialevalError

            raise DialevalError(f"DIALEVAL_MODEL_CACHE_MB={given!r}: give a size in MB") from None
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
    except (ValueError, OSError, AttributeError):
        return None


class BoundedCache:
    """Least-recently-used key -> value, bounded in entries and in bytes (see the module doc).

    `sizeof` measures an entry (default `nbytes`); a memo of fixed-size values passes a cheaper
    one. Thread-safe: one lock per cache."""

    def __init__(self, max_items: int | None = None, max_bytes: int | None = None,
                 sizeof: Callable[[Any], int] | None = None, name: str = ""):
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.name = name
        self._sizeof = sizeof
        self._lock = threading.RLock()
        self._items: "OrderedDict[Hashable, Any]" = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self._seen: dict[Hashable, set] = {}       # what each entry's size counted (shared buffers)
        self._parent: dict[Hashable, Hashable] = {}
        self.total = 0

    # -- reading -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def __getitem__(self, key: Hashable) -> Any:
        with self._lock:
            value = self._items[key]
            self._items.move_to_end(key)
            return value

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            return self._items[key]

    def peek(self, key: Hashable, default: Any = None) -> Any:
        """The value without marking it used."""
        return self._items.get(key, default)

    def keys(self) -> list:
        with self._lock:
            return list(self._items)

    def values(self) -> list:
        with self._lock:
            return list(self._items.values())

    def items(self) -> list:
        with self._lock:
            return list(self._items.items())

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.keys())

    # -- writing -------------------------------------------------------------------------------
    def put(self, key: Hashable, value: Any, *, parent: Hashable | None = None, size: int | None = None) -> Any:
        """Store `value` (the most recently used entry) and evict beyond the bounds. `parent`:
        the entry it is derived from, which it leaves with; `size` skips measuring."""
        with self._lock:
            if key in self._items:
                self._drop(key, with_children=False)
            if self.max_bytes == 0 or self.max_items == 0:
                return value
            if size is None:
                if self._sizeof is not None:
                    size = int(self._sizeof(value))
                else:
                    seen: set = set()
                    for other in self._seen.values():   # buffers another entry holds count there
                        seen |= other
                    before = set(seen)
                    size = nbytes(value, seen)
                    self._seen[key] = seen - before
            self._items[key] = value
            self._sizes[key] = int(size)
            self.total += int(size)
            if parent is not None and parent in self._items:
                self._parent[key] = parent
            self._evict(keep=key)
            return value

    def __setitem__(self, key: Hashable, value: Any) -> None:
        self.put(key, value)

    def get_or_load(self, key: Hashable, load: Callable[[], Any], *, parent: Hashable | None = None,
                    size: int | None = None) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            return self.put(key, load(), parent=parent, size=size)

    def pop(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            if key not in self._items:
                return default
            value = self._items[key]
            self._drop(key, with_children=True)
            return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._sizes.clear()
            self._seen.clear()
            self._parent.clear()
            self.total = 0

    def _over(self) -> bool:
        return ((self.max_items is not None and len(self._items) > self.max_items)
                or (self.max_bytes is not None and self.total > self.max_bytes))

    def _evict(self, keep: Hashable) -> None:
        while self._over() and len(self._items) > 1:
            oldest = next(k for k in self._items if k != keep)
            if self._parent.get(keep) == oldest:       # never the base of what was just stored
                older = [k for k in self._items if k not in (keep, oldest)]
                if not older:
                    return
                oldest = older[0]
            self._drop(oldest, with_children=True)

    def _drop(self, key: Hashable, with_children: bool) -> None:
        self._items.pop(key, None)
        self.total -= self._sizes.pop(key, 0)
        self._seen.pop(key, None)
        self._parent.pop(key, None)
        if with_children:
            for child in [c for c, p in self._parent.items() if p == key]:
                self._drop(child, with_children=True)


MODELS = BoundedCache(max_items=MODEL_ITEMS, max_bytes=default_model_budget(), name="models")

# What one per-text memo (a text's vector, token states, tokens or likelihood, remembered so that
# references repeated across systems and shards are computed once) may hold, unless its owner
# gives another budget: `DIALEVAL_MEMO_MB`, default 512 MB. Values never depend on what a memo
# kept, only the time does.
MEMO_MB = 512


def memo_budget() -> int:
    given = os.environ.get("DIALEVAL_MEMO_MB")
    try:
        return int(float(given) * 2 ** 20) if given else MEMO_MB * 2 ** 20
    except ValueError:
        from .errors import DialevalError

        raise DialevalError(f"DIALEVAL_MEMO_MB={given!r}: give a size in MB") from None


def _array_bytes(value: Any) -> int:
    """An array's bytes, or the arrays' of a tuple (states, ids), plus the entry's own overhead."""
    if isinstance(value, tuple):
        return sum(_array_bytes(v) for v in value)
    if isinstance(value, list):
        return 8 * len(value) + 56
    return int(getattr(value, "nbytes", 0)) + 112


def memo(max_bytes: int | None = None, sizeof: Callable[[Any], int] | None = None, name: str = "") -> BoundedCache:
    """A per-text memo: bounded in bytes (`memo_budget()` unless given; 0 keeps nothing), each
    value sized cheaply by `sizeof` (default: arrays by their buffers)."""
    return BoundedCache(max_bytes=memo_budget() if max_bytes is None else int(max_bytes),
                        sizeof=sizeof or _array_bytes, name=name)
