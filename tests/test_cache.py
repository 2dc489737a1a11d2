"""The one bounded cache (dialeval.cache): its two bounds, least-recently-used order, shared
weights counted once, derived entries leaving with their base."""

import numpy as np
import pytest

from dialeval.cache import BoundedCache, nbytes

MB = 2 ** 20


def test_items_bound_drops_the_least_recently_used():
    cache = BoundedCache(max_items=2)
    cache["a"], cache["b"] = 1, 2
    assert cache["a"] == 1            # a is now the most recently used
    cache["c"] = 3
    assert cache.keys() == ["a", "c"]


def test_bytes_bound_counts_array_buffers():
    cache = BoundedCache(max_bytes=int(2.5 * MB))
    for key in "abc":
        cache[key] = np.zeros(MB // 8)          # 1 MB of float64 each
    assert cache.keys() == ["b", "c"]
    assert cache.total == 2 * MB


def test_an_entry_over_the_budget_alone_still_stays():
    cache = BoundedCache(max_bytes=MB)
    cache["small"] = np.zeros(16)
    cache["big"] = np.zeros(MB // 4)             # 2 MB: everything else leaves, it stays
    assert cache.keys() == ["big"]


def test_a_derived_entry_leaves_with_its_base():
    cache = BoundedCache(max_items=3)
    cache.put("base", np.zeros(4))
    cache.put("merged", np.ones(4), parent="base")
    cache.put("other", np.zeros(4))
    cache.pop("base")
    assert cache.keys() == ["other"]


def test_the_base_of_what_was_just_stored_is_not_evicted_for_it():
    cache = BoundedCache(max_items=2)
    cache.put("base", 1)
    cache.put("x", 2)
    cache.get("x")
    cache.put("view", 3, parent="base")          # over by one: x goes, not the view's base
    assert cache.keys() == ["base", "view"]


def test_shared_torch_weights_count_once():
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(256, 256)            # 256*256*4 + 256*4 bytes
    own = 256 * 256 * 4 + 256 * 4
    assert nbytes(layer) == own

    class View:                                  # another reading of the same weights
        def __init__(self, model):
            self.model = model

    cache = BoundedCache()
    cache.put("st", layer)
    cache.put("hf", View(layer), parent="st")
    assert cache.total == own                    # the view adds nothing
    cache.pop("st")
    assert len(cache) == 0 and cache.total == 0


def test_sizeof_replaces_measuring():
    cache = BoundedCache(max_bytes=10, sizeof=lambda v: 4)
    for key in range(5):
        cache[key] = object()
    assert cache.keys() == [3, 4] and cache.total == 8


def test_get_or_load_loads_once():
    cache, calls = BoundedCache(max_items=4), []
    for _ in range(3):
        cache.get_or_load("k", lambda: calls.append(1) or "v")
    assert calls == [1]
