"""How many CPU threads a torch job should use by default: the idle cores.

On a machine others share, asking torch for every core makes the threads wait for each other
at every operation: on a busy 2-core machine `train lm --threads 2` ran 2.5x slower than
`--threads 1` (the issue's measurement; ours is in the README). So the default is the number
of cores nobody is using now: cores minus the 1-minute load average, rounded, at least 1.
`$OMP_NUM_THREADS`, when set, wins (the user has decided), and an explicit `--threads` wins
over both.
"""

from __future__ import annotations

import os


def cpu_count() -> int:
    """Cores this process may run on (the affinity mask where the system has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def idle_cores() -> int:
    """Cores minus the 1-minute load average (rounded), between 1 and the core count."""
    cores = cpu_count()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):   # no load average on this platform
        return cores
    return max(1, min(cores, cores - int(round(load))))


def default_threads() -> int:
    """`$OMP_NUM_THREADS` if set to a positive integer, else the idle cores."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    return idle_cores()


# the variables OpenBLAS reads, in its order of precedence, when numpy loads it
_BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def single_blas_thread() -> bool:
    """Have numpy's OpenBLAS start one thread instead of one per core; True if this took effect.

    For processes that make no BLAS call at all (word-overlap scoring): OpenBLAS starts its
    worker threads when numpy is imported, and each spins for about 0.1 s of CPU waiting for
    work that never comes, which on this project's 2-core machine was 0.1 s of a 0.45 s `dialeval
    score` of 2,000 BLEU/ROUGE/CIDEr rows. It only works before numpy is imported (the library
    reads the variable once, when it loads), and a value the user set wins.
    """
    import sys

    if "numpy" in sys.modules or any(os.environ.get(name) for name in _BLAS_VARIABLES):
        return False
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    return True
