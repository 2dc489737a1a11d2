"""Plan: which metrics run, which corpus-wide first passes they need, how input is cut.

A plan is small and picklable: it names its metrics by registry name and options (a *recipe*)
where it can, so that a Dask worker builds them itself, once, and loads their models once per
process (`metrics()`), instead of receiving pickled models with every task. Metric objects
given directly by a caller travel as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import DialevalError
from ..metrics.base import Metric

DEFAULT_CHUNK_SIZE = 5_000

# worker-side cache: recipe -> built metrics (one build, and one model load, per process)
_BUILT: dict[tuple, list[Metric]] = {}


@dataclass
class Plan:
    """What a run computes.

    - `names`: output metric names, in order;
    - `recipe`: ((registry name, sorted options), ...) to rebuild the metrics anywhere, or None
      when the caller passed Metric objects (then `_metrics` travels);
    - `first_pass`: corpus-pass keys, each with the index of one metric that computes it
      (CIDEr and CIDEr-D with one tokenizer share a key, so it is gathered once);
    - `chunk_size`: samples per shard. Shards are consecutive samples of the input; the
      same input and chunk size give the same shards, so runs and resumed runs agree byte
      for byte.
    """

    names: list[str]
    signatures: dict[str, str]
    recipe: tuple | None
    first_pass: dict[Any, int]
    chunk_size: int = DEFAULT_CHUNK_SIZE
    needs_references: dict[str, bool] = field(default_factory=dict)
    _metrics: list[Metric] | None = field(default=None, repr=False)

    def metrics(self) -> list[Metric]:
        if self._metrics is not None:
            return self._metrics
        if self.recipe is None:
            raise DialevalError("plan has neither metrics nor a recipe")
        built = _BUILT.get(self.recipe)
        if built is None:
            built = _BUILT[self.recipe] = _build(self.recipe)
        return built

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self.recipe is not None:
            state["_metrics"] = None   # rebuilt (with cached models) where it lands
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    @property
    def needs_first_pass(self) -> bool:
        return bool(self.first_pass)


def _build(recipe: tuple) -> list[Metric]:
    from ..metrics.registry import build_metric

    return [build_metric(name, **dict(options)) for name, options in recipe]


def expand_metric_names(names: Sequence[str | Metric]) -> list[str | Metric]:
    """`all` stands for every registered metric; the caller skips the ones it cannot build."""
    from ..metrics.registry import REGISTRY

    out: list[str | Metric] = []
    for name in names:
        if isinstance(name, str) and name == "all":
            out.extend(n for n in REGISTRY if n not in out)
        elif name not in out:
            out.append(name)
    return out


def make_plan(metrics: Sequence[str | Metric], *, refs_mode: str = "multi", tokenizer: str | None = None,
              chunk_size: int | None = None, notes: list[str] | None = None,
              **options: Any) -> Plan:
    """Build the metrics and the plan. With `all`, metrics that cannot be built here (a missing
    extra, a model option not given) are left out with a note in `notes`."""
    from ..metrics.registry import build_metric, check_metric_options

    check_metric_options(options, [m for m in metrics if isinstance(m, str) and m != "all"])
    chunk_size = DEFAULT_CHUNK_SIZE if chunk_size is None else int(chunk_size)
    if chunk_size < 1:
        raise DialevalError(f"chunk size must be at least 1, got {chunk_size}")
    wants_all = any(isinstance(m, str) and m == "all" for m in metrics)
    built: list[Metric] = []
    skipped: dict[str, list[str]] = {}   # reason -> metrics left out of `all`
    recipe: list[tuple] | None = []
    signatures: dict[str, str] = {}
    shared = {"refs_mode": refs_mode, "tokenizer": tokenizer, **options}
    for entry in expand_metric_names(metrics):
        if isinstance(entry, Metric):
            built.append(entry)
            recipe = None
            continue
        try:
            from ..progress import waiting

            # a packaged model prepared on first use (a 1.5B judge unpacked for minutes) is
            # said once it has taken a while, as a load is, never in silence
            with waiting(f"preparing {entry}"):
                metric = build_metric(entry, **shared)
                # read from the model folder's manifest and small files, never by loading the
                # model (dialeval.models.artifacts); a refused folder skips the metric too
                signature = str(metric.signature())
        except DialevalError as exc:
            if not wants_all:
                raise
            reason = str(exc).replace(f"metric {entry!r} ", "").replace(f"metric {entry} ", "")
            skipped.setdefault(reason, []).append(entry)
            continue
        built.append(metric)
        signatures[metric.name] = signature
        if recipe is not None:
            from ..metrics.registry import metric_spec

            accepted = metric_spec(entry).option_specs()
            recipe.append((entry, tuple(sorted((k, v) for k, v in shared.items()
                                               if k in accepted and v is not None))))
    if notes is not None:
        notes.extend(f"--metrics all: left out {', '.join(names)}: {reason}" for reason, names in skipped.items())
    if not built:
        raise DialevalError("no metric to run")
    names = [m.name for m in built]
    if len(set(names)) != len(names):
        raise DialevalError(f"metric listed twice: {names}")
    first_pass: dict[Any, int] = {}
    for i, metric in enumerate(built):
        key = metric.corpus_pass_key()
        if key is not None and key not in first_pass:
            first_pass[key] = i
    return Plan(names=names, signatures={m.name: signatures.get(m.name) or str(m.signature()) for m in built},
                recipe=tuple(recipe) if recipe is not None else None, first_pass=first_pass,
                chunk_size=int(chunk_size),
                needs_references={m.name: bool(m.needs_references) for m in built},
                _metrics=built)
