"""Built-in entries first, then the ones installed packages declare through an entry-point group.

Metrics (`dialeval.metrics`) and data-set loaders (`dialeval.datasets`) are both looked up by
name in a read-only mapping of this kind. The group is read on the first question the built-ins
cannot answer (an unknown name, a listing), never for a built-in name: the CLI decides on BLAS
threads from built-in names before numpy loads, and a scan of every installed distribution
would cost each start-up time. A plug-in never replaces a built-in entry of the same name; it is
skipped with a warning, as is an entry point that is not `module:attribute`.
"""

from __future__ import annotations

import warnings
from typing import Any, Iterator, Mapping


class PluginRegistry(Mapping[str, Any]):
    """Subclasses say what they hold (`what`, e.g. "metric") and how an entry point becomes a
    spec (`plugin_spec`)."""

    what = "entry"

    def __init__(self, specs: list, group: str):
        self._specs: dict[str, Any] = {spec.name: spec for spec in specs}
        self._group = group
        self._plugins_read = False

    def plugin_spec(self, name: str, target: str, origin: str) -> Any:
        raise NotImplementedError

    def _read_plugins(self) -> None:
        if self._plugins_read:
            return
        self._plugins_read = True
        from importlib.metadata import entry_points

        for ep in sorted(entry_points(group=self._group), key=lambda e: e.name):
            if ep.name in self._specs:
                warnings.warn(f"plug-in {self.what} {ep.name!r} ({ep.value}) is shadowed by the "
                              f"{self.what} of that name already registered; it is ignored", stacklevel=3)
                continue
            if ":" not in ep.value:
                warnings.warn(f"plug-in {self.what} {ep.name!r}: entry point {ep.value!r} is not "
                              "'module:attribute'; ignored", stacklevel=3)
                continue
            dist = getattr(ep, "dist", None)
            origin = f"{dist.name} {dist.version}" if dist is not None else ep.value
            self._specs[ep.name] = self.plugin_spec(ep.name, ep.value, origin)

    def __getitem__(self, name: str) -> Any:
        if name not in self._specs:
            self._read_plugins()
        return self._specs[name]

    def __contains__(self, name: object) -> bool:
        if name in self._specs:
            return True
        self._read_plugins()
        return name in self._specs

    def __iter__(self) -> Iterator[str]:
        self._read_plugins()
        return iter(list(self._specs))

    def __len__(self) -> int:
        self._read_plugins()
        return len(self._specs)
