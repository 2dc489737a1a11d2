"""METEOR's beam search compiled with numba: the same search as `align._search`, on arrays.

The aligner spends most of its time here once the candidates are known: every path is
extended by every candidate at every reference position. This kernel runs the jar's rule
(rank every extension: more matched words, fewer chunks, smaller distance, ties in arrival
order; keep the best 40) on flat integer arrays, building only the extensions that enter the
best 40, so memory stays at 40 paths of used-word flags whatever the input.

`search(...)` returns the indices of the chosen non-fixed candidates. numba is imported on
first use; without it (`available()` is False) `align` uses the pure-Python search, which gives
the same alignments (tests/test_meteor_search.py checks both against the jar's rule).
Compiled code is cached on disk (`cache=True`), so the compile cost is paid once per install.
"""

from __future__ import annotations

import numpy as np

BEAM = 40
_KERNEL = None
_TRIED = False


def available() -> bool:
    return _kernel() is not None


def _kernel():
    global _KERNEL, _TRIED
    if not _TRIED:
        _TRIED = True
        try:
            from .beam_kernel import search_arrays
        except ImportError:
            return None
        _KERNEL = search_arrays
    return _KERNEL


def warm_up() -> bool:
    """Compile (or load from the on-disk cache) the kernel on a tiny input; False without numba."""
    if not available():
        return False
    cand = np.array([[0, 1, 0, 1, 0, 2], [0, 1, 1, 1, 0, 2]], dtype=np.int64)
    search(np.array([0, 2], dtype=np.int64), cand, np.array([-1], dtype=np.int64),
           np.zeros(2, dtype=np.uint8), np.zeros(1, dtype=np.uint8))
    return True


def search(off, cand, fixed, used1, used2) -> np.ndarray:
    """off: (n2+1,) start of each reference position's candidates in `cand`; cand: (k, 6)
    int64 rows (ref start, ref length, hyp start, hyp length, module, gain); fixed: (n2,)
    row of the fixed match starting there or -1; used1/used2: uint8 flags of fixed words."""
    return _kernel()(off, cand, fixed, used1, used2, BEAM)
