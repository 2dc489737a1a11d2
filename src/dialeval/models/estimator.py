"""The one shape every trainable thing in dialeval has, after scikit-learn's estimators.

- Hyper-parameters are the constructor's keyword arguments, stored under the same names and
  never changed by `__init__` (which does no work), so `get_params()` can read them back from
  the signature and `config.json` can rebuild the estimator.
- `fit(...)` learns and returns `self`; what it learns lives in attributes whose names end in
  `_` (`M_`, `pca_mean_`, `weights_`), so "is it fitted?" is a question about those names.
- `save(dir)` writes an artifact folder through the store (config.json with the parameters and
  the small learned values, arrays.npz or extra files for the large ones, manifest.json with
  sha256 of every file); `load(dir)` verifies the manifest and the kind before reading anything.
  Nothing is pickled.

A subclass says how its learned state maps to files by overriding `_state()` (JSON-able values
and arrays) and `_set_state()`; files written by a library (safetensors, a tokenizer) go
through `_write_files(staging_dir)`, which writes them straight into the folder the store is
assembling (so nothing is staged in the temporary directory), and are read back in
`_set_state()` from the loaded folder.

The command that trains an estimator (`dialeval train NAME`, or `dialeval fit NAME`) is
declared as data, a `TrainCommand`: its name and help, the arguments that are not
hyper-parameters (the corpus, the folder to write) and where the hyper-parameter flags go
(`Options`), which the command line generates from the constructor as it generates the
scoring flags from the metrics'. A plug-in package sets `train_command` on its estimator and
names the class under the `dialeval.train` entry-point group (docs/plugins.md).
"""

from __future__ import annotations

import inspect
import os
from typing import Any, ClassVar, Mapping

import numpy as np

from ..errors import DialevalError
from .commands import Argument, Options, TrainCommand, resolve  # noqa: F401 - the declarations' public home
from .store import load_artifact, save_artifact


class Estimator:
    """Base class; subclasses set `kind` (the artifact kind written to the manifest) and, to be
    trained from the command line, `train_command`."""

    kind: ClassVar[str] = ""
    train_command: ClassVar[TrainCommand | None] = None
    # The config schema, versioned. A parameter added after artifacts of this kind shipped is
    # named in `since` with the schema version it arrived in (the others are version 1), and
    # `schema` is the newest version. A folder records the oldest version that can express it
    # (the newest among its parameters set away from their default) and, under that, every
    # parameter of that version or older: an older recipe, rebuilt, gives the bytes it gave
    # before, and a folder written by a newer dialeval is refused rather than half read.
    schema: ClassVar[int] = 1
    since: ClassVar[Mapping[str, int]] = {}
    # parameters a kind no longer has: older folders may record them, and loading ignores them
    retired: ClassVar[tuple[str, ...]] = ()
    # parameters of how a fit runs, not of what it learns (the torch device): never written, so a
    # model trained on a GPU loads and scores on a machine without one, and saves the same bytes
    runtime_params: ClassVar[tuple[str, ...]] = ()

    # -- parameters --------------------------------------------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def get_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> "Estimator":
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                from ..options import closest_hint

                raise DialevalError(f"{type(self).__name__} has no parameter {name!r}{closest_hint(name, valid)}")
            setattr(self, name, value)
        return self

    # -- fitted state ------------------------------------------------------------------------
    def fitted_attributes(self) -> list[str]:
        return sorted(k for k in vars(self) if k.endswith("_") and not k.startswith("_"))

    def is_fitted(self) -> bool:
        return bool(self.fitted_attributes())

    def check_fitted(self) -> None:
        if not self.is_fitted():
            raise DialevalError(f"{type(self).__name__} is not fitted: call fit() or load() a trained folder")

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(JSON-able learned values, arrays) of the fitted state; default: every `*_` attribute,
        arrays to the npz and the rest to config.json."""
        values: dict[str, Any] = {}
        arrays: dict[str, np.ndarray] = {}
        for name in self.fitted_attributes():
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                arrays[name] = value
            else:
                values[name] = value
        return values, arrays

    def _set_state(self, values: Mapping[str, Any], arrays: Mapping[str, np.ndarray], directory: str) -> None:
        for name, value in {**values, **arrays}.items():
            setattr(self, name, value)

    def _description(self) -> dict[str, Any]:
        """Top-level entries of config.json for people and tools reading the folder (what a
        format written before the estimator layout kept there); `load` never reads them."""
        return {}

    def _write_files(self, staging_dir: str) -> None:
        """Write files a library produces (safetensors, a tokenizer, a bundled folder) into the
        artifact folder being assembled; the manifest is written over them afterwards. Writing
        in place rather than returning paths to copy is what keeps saves from leaving folders
        behind in the temporary directory."""

    # -- persistence -------------------------------------------------------------------------
    def schema_needed(self) -> int:
        """The oldest schema version that can express these parameters: the newest version
        among those set away from their default (1 when none is)."""
        defaults = {k: p.default for k, p in inspect.signature(type(self).__init__).parameters.items()}
        params = self.get_params()
        return max([1] + [v for k, v in self.since.items() if k in params and params[k] != defaults.get(k)])

    def recorded_params(self) -> dict[str, Any]:
        """The parameters an artifact records: all but the runtime ones, down to the schema
        version it needs (a parameter newer than that is at its default and left out)."""
        version = self.schema_needed()
        return {k: v for k, v in self.get_params().items()
                if k not in self.runtime_params and self.since.get(k, 1) <= version}

    def schema_entry(self) -> dict[str, int]:
        """config.json's `schema` entry: written from version 2 on (a version-1 folder is the
        layout every artifact had before versions, so it keeps its bytes)."""
        version = self.schema_needed()
        return {"schema": version} if version > 1 else {}

    def save(self, directory: str | os.PathLike) -> str:
        self.check_fitted()
        values, arrays = self._state()
        params = self.recorded_params()
        config = {**_jsonable(self._description()), "estimator": type(self).__name__, **self.schema_entry(),
                  "params": _jsonable(params), "state": _jsonable(values)}
        return save_artifact(directory, self.kind, config, arrays=arrays, write=self._write_files)

    @classmethod
    def params_from_config(cls, config: Mapping[str, Any], where: str) -> dict[str, Any]:
        """The constructor arguments a folder's config.json records, read under its schema
        version: a newer version, a parameter this version of the class does not have, or one
        newer than the version the folder states is refused in one line (`where` names the
        file), never dropped in silence; a parameter newer than the folder takes its default.
        A folder without a `schema` entry was written before versions (a later parameter then
        appeared only when set): its version is the newest its parameters show."""
        params = config.get("params")
        if not isinstance(params, dict):
            raise DialevalError(f"{where}: no 'params' table; not a {cls.kind} artifact")
        version = config.get("schema", max([1] + [cls.since[k] for k in params if k in cls.since]))
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise DialevalError(f"{where}: schema: expected a version number >= 1, got {version!r}")
        if version > cls.schema:
            raise DialevalError(f"{where}: written with {cls.__name__} config schema {version}; this dialeval "
                                f"reads up to {cls.schema}: load it with the dialeval that trained it, or a newer one")
        known = set(cls._param_names())
        unknown = sorted(set(params) - known - set(cls.retired))
        if unknown:
            raise DialevalError(f"{where}: params: {', '.join(unknown)}: not a parameter of {cls.__name__} "
                                f"(schema {version}); written by another version of dialeval?")
        late = sorted(k for k in params if cls.since.get(k, 1) > version)
        if late:
            raise DialevalError(f"{where}: params: {', '.join(late)} arrived in {cls.__name__} config schema "
                                f"{max(cls.since[k] for k in late)}, but the file says schema {version}")
        return {k: v for k, v in params.items() if k in known}

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "Estimator":
        config, arrays, folder = load_artifact(directory, cls.kind)
        est = cls(**cls.params_from_config(config, os.path.join(folder, "config.json")))
        est._set_state(config.get("state") or {}, arrays, folder)
        return est


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value
