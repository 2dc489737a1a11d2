"""Loaders for the public human-judgment data sets, by name.

`load_dataset(name, path)` takes the data set's folder (e.g. `$DATA/usr`) and
returns a `Dataset`: a `DatasetInfo` (qualities, scales, level) and `Sample`s whose
`ratings` hold the individual annotators' scores and whose `meta["dialogue_id"]` names the
dialogue (dialogue-level correlation groups by it). Several names may share one folder
(usr-tc and usr-pc both live in `usr/`).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from ...errors import DialevalError
from ...plugins import PluginRegistry
from .base import DIALOGUE_ID, Dataset


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    target: str            # "module:function" inside this package
    folder: str            # the folder's name under shared/data
    description: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    builtin: bool = True   # target inside this package; a plug-in's target is an absolute module

    def load(self, path: str | os.PathLike, *, exclude_systems: Sequence[str] = (),
             **options: Any) -> Dataset:
        """Load from the folder; `exclude_systems` drops those systems' samples (e.g. USR's
        "Original Ground Truth", which is also the reference)."""
        module_name, func = self.target.split(":")
        try:
            module = importlib.import_module(f"{__name__}.{module_name}" if self.builtin else module_name)
        except ImportError as exc:
            raise DialevalError(f"data set {self.name!r}: its loader {self.target!r} cannot be imported "
                                f"({exc})") from None
        if not os.path.isdir(path):
            raise DialevalError(f"{path}: not a folder (give the {self.folder} data set's folder)")
        try:
            dataset = getattr(module, func)(path, **{**self.kwargs, **options})
        except DialevalError:
            raise
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            # The loaders read the published layout; a file edited or truncated into another
            # shape surfaces here as a lookup on a missing or wrongly typed field.
            raise DialevalError(f"{path}: not the {self.name} data set's layout ({_describe(exc)}); "
                                f"is this an unmodified copy of {self.folder}?") from None
        _check_loaded(self.name, path, dataset)
        if exclude_systems:
            known = dataset.systems() or list(dataset.system_ratings)
            unknown = [s for s in exclude_systems if s not in known]
            if unknown:
                raise DialevalError(f"{self.name} has no system {unknown[0]!r}; its systems: "
                                    + (", ".join(repr(k) for k in known) or "none (no system names)"))
            dataset = dataset.without_systems(exclude_systems)
        return dataset


def _describe(exc: Exception) -> str:
    text = str(exc).replace("\n", " ")
    if isinstance(exc, KeyError):
        return f"missing field {text}"
    return f"{type(exc).__name__}: {text[:120]}"


def _check_loaded(name: str, path, dataset: Dataset) -> None:
    """Every sample a loader returns has the types the metrics rely on (a mutated file can
    put a number where a text belongs without the loader noticing)."""
    for s in dataset.samples:
        ok = (isinstance(s.response, str) and isinstance(s.references, list)
              and all(isinstance(r, str) for r in s.references)
              and isinstance(s.context, list) and all(isinstance(c, str) for c in s.context)
              and (s.system is None or isinstance(s.system, str))
              and all(isinstance(v, float) for vs in s.ratings.values() for v in vs))
        if not ok:
            raise DialevalError(f"{path}: sample {s.id} of {name} has a field of the wrong type "
                                "(texts must be strings, ratings numbers); is this an unmodified copy?")


_SPECS = [
    DatasetSpec("dstc6", "dstc6:load", "dstc6-eval",
                "DSTC6 track 2: 20 systems x 2,000 turns, 11 refs, system-level human means"),
    DatasetSpec("usr-tc", "usr:load", "usr", "USR TopicalChat: 360 responses, 3 raters, 6 qualities",
                {"corpus": "tc"}),
    DatasetSpec("usr-pc", "usr:load", "usr", "USR PersonaChat: 300 responses, 3 raters, 6 qualities",
                {"corpus": "pc"}),
    DatasetSpec("fed-turn", "fed:load", "fed", "FED turns: 375 responses, 5 raters, 9 qualities",
                {"level": "turn"}),
    DatasetSpec("fed-dialogue", "fed:load", "fed",
                "FED dialogues: 125 dialogues, 5 raters, 11 qualities", {"level": "dialogue"}),
    DatasetSpec("grade-dailydialog", "grade:load", "grade",
                "GRADE DailyDialog: 300 responses, ~10 raters, coherence", {"corpus": "dailydialog"}),
    DatasetSpec("grade-convai2", "grade:load", "grade",
                "GRADE ConvAI2: 600 responses, ~10 raters, coherence", {"corpus": "convai2"}),
    DatasetSpec("grade-empatheticdialogues", "grade:load", "grade",
                "GRADE EmpatheticDialogues: 300 responses, ~10 raters, coherence",
                {"corpus": "empatheticdialogues"}),
    DatasetSpec("holistic-coherence", "holistic:load", "holistic-eval",
                "Pang et al. context coherence: 200 responses, 10 raters", {"quality": "coherence"}),
    DatasetSpec("holistic-fluency", "holistic:load", "holistic-eval",
                "Pang et al. fluency: 200 responses, 10 raters", {"quality": "fluency"}),
    DatasetSpec("gupta", "gupta:load", "dailydialog-multiref-gupta",
                "DailyDialog multi-reference: 500 responses, 5 refs, mean overall rating"),
    DatasetSpec("predictive-engagement", "engagement:load", "predictive-engagement",
                "Ghazarian et al. engagement: 600 responses, ~3 raters"),
    DatasetSpec("dstc9", "dstc9:load", "dstc9-interactive-flowscore",
                "DSTC9 interactive: 2,200 dialogues, 11 systems, ~3 raters, 11 qualities"),
    DatasetSpec("convai2-wild", "convai2:load", "convai2-wild-eval",
                "ConvAI2 wild evaluation: human-bot dialogues, the human's 1-5 score of each"),
    DatasetSpec("dailydialog-pp", "dailydialog_pp:load", "dailydialog-plusplus",
                "DailyDialog++ test: 5 positive, 5 adversarial, 5 random replies per context (1/0)"),
]
ENTRY_POINT_GROUP = "dialeval.datasets"


class DatasetRegistry(PluginRegistry):
    """The built-in loaders, then those installed packages declare in the `dialeval.datasets`
    entry-point group (`name = "module:function"`; the function takes the folder and returns a
    `Dataset`); the lookup rules are `dialeval.plugins`'."""

    what = "data set"

    def __init__(self, specs: list[DatasetSpec], group: str = ENTRY_POINT_GROUP):
        super().__init__(specs, group)

    def plugin_spec(self, name: str, target: str, origin: str) -> DatasetSpec:
        return DatasetSpec(name, target, name, f"plug-in data set from {origin}", builtin=False)


DATASETS = DatasetRegistry(_SPECS)


def list_datasets() -> list[DatasetSpec]:
    return list(DATASETS.values())


def get_spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise DialevalError(f"unknown data set {name!r}; `dialeval datasets` lists them") from None


def load_dataset(name: str, path: str | os.PathLike, **options: Any) -> Dataset:
    return get_spec(name).load(path, **options)


__all__ = ["Dataset", "DatasetSpec", "DIALOGUE_ID", "list_datasets", "load_dataset", "get_spec"]
