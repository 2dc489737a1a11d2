"""Where shards run: in this process (`local`) or on a Dask cluster (`dask`).

A backend maps a shard function over shards and yields the results **in input order**; the
engine folds them in that order, so both backends give the same numbers and the same bytes.
The Dask backend keeps a bounded window of shards in flight (memory stays bounded however long
the input), sends the plan to each worker once (`scatter(..., broadcast=True)`), and workers
build the metrics and load their models once per process (`Plan.metrics`).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Iterator

from ..errors import DialevalError

BACKENDS = ("local", "dask")


class LocalBackend:
    name = "local"

    def map(self, fn: Callable, plan, shards: Iterable[Any], *args: Any) -> Iterator[Any]:
        for shard in shards:
            yield fn(plan, shard, *args)

    def close(self) -> None:
        pass

    def describe(self) -> str:
        return "local"


class DaskBackend:
    """`workers=N` starts a `distributed.LocalCluster` of N single-threaded processes;
    `scheduler=ADDRESS` uses an existing cluster."""

    name = "dask"

    def __init__(self, workers: int | None = None, scheduler: str | None = None, window: int | None = None):
        from ..optional import require

        distributed = require("distributed", "--backend dask", "dask")
        Client, LocalCluster = distributed.Client, distributed.LocalCluster
        self.cluster = None
        if scheduler:
            self.client = Client(scheduler)
        else:
            n = int(workers or 1)
            if n < 1:
                raise DialevalError(f"--workers must be at least 1, got {n}")
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=50)
            self.client = Client(self.cluster)
        n_workers = max(1, len(self.client.scheduler_info().get("workers", {})))
        self.window = window or 2 * n_workers
        self._scattered: dict[int, Any] = {}

    def _remote(self, obj: Any) -> Any:
        """One copy per worker of a large or model-holding argument, sent once."""
        if obj is None:
            return None
        key = id(obj)
        if key not in self._scattered:
            self._scattered[key] = (obj, self.client.scatter(obj, broadcast=True, hash=False))
        return self._scattered[key][1]

    def map(self, fn: Callable, plan, shards: Iterable[Any], *args: Any) -> Iterator[Any]:
        plan_f = self._remote(plan)
        args_f = [self._remote(a) if isinstance(a, dict) else a for a in args]
        pending: deque = deque()
        for shard in shards:
            pending.append(self.client.submit(fn, plan_f, shard, *args_f, pure=False))
            if len(pending) >= self.window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def close(self) -> None:
        self._scattered.clear()
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def describe(self) -> str:
        n = len(self.client.scheduler_info().get("workers", {}))
        return f"dask ({n} workers)"


def make_backend(backend: str = "local", workers: int | None = None, scheduler: str | None = None):
    if backend == "local":
        if scheduler or (workers and workers > 1):
            raise DialevalError("--workers/--scheduler need --backend dask")
        return LocalBackend()
    if backend == "dask":
        return DaskBackend(workers=workers, scheduler=scheduler)
    raise DialevalError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
