"""CLI extension: `dialeval fit compose`, fitting a composition of metrics on rated data sets.

It scores every development set itself, with the same generated metric flags as `score`
(`--amfm-model`, `--lm-model`, `--mme-model` ...), then fits `metrics.compose.model.ComposeModel` and
writes the artifact that `dialeval score --metrics compose --compose-model DIR` uses. The
`fit` command group is shared: a later module may add other `fit` targets to it.
"""

from __future__ import annotations

import json
import os
import sys

from dialeval.errors import DialevalError
from dialeval.models.commands import Argument, Options, TrainCommand


def parse_data_spec(text: str) -> tuple[str, str]:
    """`NAME:PATH` -> (NAME, PATH); a bare existing file path is named by its stem."""
    if ":" in text:
        name, path = text.split(":", 1)
        if name and path:
            return name, path
    if os.path.isfile(text):
        return os.path.splitext(os.path.basename(text))[0], text
    raise DialevalError(f"--data {text!r}: expected NAME:PATH (a data set loader name and its folder, "
                        "or any name and a rated JSONL/CSV/TSV file)")


def load_devset_samples(name: str, path: str, exclude_systems=()) -> list:
    """Samples of one development set: a public data set by loader name, or a rated file."""
    from dialeval.data.datasets import DATASETS, load_dataset
    from dialeval.data.readers import read_samples

    if name in DATASETS:
        samples = load_dataset(name, path).samples
    elif os.path.isfile(path):
        samples = read_samples(path)
    else:
        raise DialevalError(f"--data {name}:{path}: {name!r} is not a data set loader "
                            "(`dialeval datasets` lists them) and the path is not a file")
    excluded = set(exclude_systems or ())
    samples = [s for s in samples if s.system not in excluded]
    if not samples:
        raise DialevalError(f"--data {name}:{path}: no samples left")
    if not any(s.ratings for s in samples):
        raise DialevalError(f"--data {name}:{path}: no human ratings; a composition is fitted on rated data")
    return samples


def recorded_options(options: dict) -> dict:
    """Metric options as the artifact records them: paths made absolute, so the artifact can
    be used from another working directory on the same machine."""
    out = {}
    for key, value in options.items():
        if isinstance(value, str) and value and os.path.exists(value):
            value = os.path.abspath(value)
        out[key] = value
    return out


def training_negatives(name: str, made: list, metrics: list[str], args, options: dict):
    """A set's training negatives for the fit: scored on demand, only the rows its draw takes
    (`NegativePool`), unless a member's score of a row depends on the rows scored with it (a
    corpus pass, such as CIDEr's IDF); then every made row is scored, as the draw assumes."""
    import numpy as np

    from dialeval.metrics.compose.model import NegativePool
    from dialeval.scoring import score

    def scored(rows) -> dict:
        print(f"fit compose: scoring {len(rows)} of {len(made)} training negatives of {name} ({args.negatives})",
              file=sys.stderr)
        if not len(rows):
            return {m: np.zeros(0) for m in metrics}
        return score([made[int(i)] for i in rows], metrics, refs_mode=args.refs_mode, tokenizer=args.tokenize,
                     **options).sentence

    if not rows_score_alone(metrics, args, options):
        return scored(np.arange(len(made)))
    return NegativePool(len(made), scored)


def rows_score_alone(metrics: list[str], args, options: dict) -> bool:
    """Whether every member scores a row the same whatever rows it is scored with (no corpus
    pass), read from the plan the scoring would make (building it loads no model)."""
    from dialeval.engine import make_plan

    return not make_plan(metrics, refs_mode=args.refs_mode, tokenizer=args.tokenize, **options).first_pass


def cmd_fit_compose(args) -> int:
    from dialeval.data.writers import json_value
    from dialeval.report.tables import format_table
    from dialeval.metrics.compose.model import POOLED, ComposeModel, DevSet
    from dialeval.scoring import score

    from .options import estimator_kwargs, metric_options

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    if not metrics:
        raise DialevalError("--metrics names no metric")
    from dialeval.metrics.registry import REGISTRY

    nested = [m for m in metrics if m in REGISTRY and REGISTRY[m].passes_options]
    if nested:
        raise DialevalError(f"--metrics: a composition cannot compose {nested[0]!r}")
    # the composition's own flags (generated for the `compose` metric) are not metric options here
    options = {k: v for k, v in metric_options(args).items() if not k.startswith("compose_")}
    model = ComposeModel(**estimator_kwargs(args, args._estimator_flags))
    model.check_params()           # a bad setting is refused before the sets are scored
    if model.negative_share > 0:
        from dialeval.data.variants import check_families

        check_families(args.negatives)
    devsets, signatures, negatives = [], {}, {}
    for spec in args.data:
        name, path = parse_data_spec(spec)
        samples = load_devset_samples(name, path, args.exclude_system)
        print(f"fit compose: scoring {name} ({len(samples)} samples) with {', '.join(metrics)}",
              file=sys.stderr)
        result = score(samples, metrics, refs_mode=args.refs_mode, tokenizer=args.tokenize, **options)
        signatures.update(result.signatures)
        devsets.append(DevSet.from_samples(name, result.samples, result.sentence))
        if model.negative_share > 0:
            from dialeval.meta.probes import negative_samples

            made = negative_samples(samples, args.negatives, seed=model.seed)
            negatives[name] = training_negatives(name, made, metrics, args, options)
    if len({d.name for d in devsets}) != len(devsets):
        raise DialevalError("--data: two development sets share a name")
    qualities = None
    if args.quality and args.quality != "all":
        qualities = [q.strip() for q in args.quality.split(",") if q.strip()]
    record = recorded_options({**options, "refs_mode": args.refs_mode, "tokenizer": args.tokenize})
    model.fit(devsets, metrics, qualities, metric_options=record, signatures=signatures, negatives=negatives)
    folder = model.save(args.output)
    summary = model.describe()
    if args.plot:
        from dialeval.report.weights import weights_heatmap

        rows = [q + (" (pooled)" if model.fallback_used(q) else "") for q in model.qualities_]
        table = [[model.weights_for(q)[m] for m in model.metrics_] for q in model.qualities_]
        summary["plot"] = weights_heatmap(table, rows, model.metrics_, args.plot,
                                          title=f"{args.method} weights", signed=args.method == "ridge")
    if args.json:
        print(json.dumps(json_value({"artifact": folder, **summary}), ensure_ascii=False))
        return 0
    label = {"crs": f"CRS weights (p = {args.p})", "avg": "MME-Avg weights (uniform)",
             "ridge": "ridge coefficients"}[args.method]
    rows = []
    for q in [*model.qualities_, POOLED]:
        w = model.weights_for(q)
        used = model.weight_sets_[model.row_of(q)]
        rows.append([q if q != POOLED else "(pooled)", used if used or q == POOLED else "0: pooled"]
                    + [w[m] for m in model.metrics_])
    print(label)
    print(format_table(["quality", "dev pairs"] + model.metrics_, rows, fmt=args.table_format, digits=3))
    print()
    print("dev pairs: the (set, quality) pairs averaged (eq. 2); 0: none informative, the pooled row stands in")
    print(f"scaling: {args.scaling} on the pooled development scores; "
          f"development sets: {', '.join(model.devsets_)}")
    for d, q, a in getattr(model, "stand_ins_used_", []):
        print(f"stand-in: {d} lends its {a} ratings as {q}")
    print(f"composition written to {folder}; score with "
          f"`dialeval score INPUT --metrics compose --compose-model {args.output}`")
    return 0


def _fit_subparsers(sub):
    """The `fit` command's sub-parsers, creating the command on first use."""
    from .train import group_subparsers

    return group_subparsers(sub, "fit")


def _scoring_flags(p) -> None:
    from .options import add_scoring_flags, add_table_format

    add_table_format(p, alias=False)
    add_scoring_flags(p)


TRAIN_COMMANDS = [TrainCommand(
    "compose", "fit CRS / average / ridge weights over metrics on rated data sets", group="fit",
    estimator="dialeval.metrics.compose.model:ComposeModel", run="dialeval.cli.compose:cmd_fit_compose",
    arguments=(
        Argument("--data", action="append", required=True, metavar="NAME:PATH",
                 help="a development set: a data set loader name and its folder "
                      "(usr-pc:$DATA/usr), or any name and a rated JSONL/CSV/TSV file (repeatable)"),
        Argument("--metrics", required=True, help="comma-separated metrics to compose"),
        Argument("--quality", default="all",
                 help="qualities to fit weights for, comma-separated, or all (default: every rated one)"),
        Argument("-o", "--output", required=True, help="artifact folder to write"),
        # the composition's settings, from ComposeModel's constructor (ridge's alphas stay a library option)
        Options(exclude=("alphas",)),
        Argument("--negatives", default="empty,parrot,other_item,loop", metavar="FAMILIES",
                 help="with --negative-share: the probe families made as training negatives, from the "
                      "items outside the top 40%% by overall (which `dialeval probe` tests) "
                      "(default: empty,parrot,other_item,loop)"),
        Argument("--exclude-system", action="append",
                 help="leave out a system's responses wherever present (e.g. 'Original Ground Truth')"),
        Argument("--plot", metavar="PNG", help="also draw the weights (quality x metric) as a heatmap"),
        Argument("--json", action="store_true", help="print what was learned as one JSON object"),
        _scoring_flags))]
