"""Command line for AM-FM: `dialeval train amfm`, `dialeval sweep amfm`, and the score
options (`--amfm-model DIR`, `--amfm-lambda`, `--am-dims`, `--am-refs`, `--fm-refs`).
Only argparse here; the work is in the library modules, imported when a command runs."""

from __future__ import annotations

import json
import sys

from dialeval.models.commands import Argument, Options, TrainCommand


# the training corpus, as `train amfm` declares it and `sweep amfm` takes it
CORPUS_ARGUMENTS = (
    Argument("--corpus", action="append", default=[],
             help="training corpus: DailyDialog dialogues_*.txt or its .zip, JSONL dialogues, "
                  "plain text, one sentence per line, or NAME:FILE for a public corpus read by name "
                  "(`dialeval datasets --sources`); repeatable"),
    Argument("--corpus-format", choices=["dailydialog", "jsonl", "text"],
             help="corpus format (default: guessed per file)"))


def _corpus_arguments(p) -> None:
    for argument in CORPUS_ARGUMENTS:
        p.add_argument(*argument.flags, **argument.options)


def _model_flags(p, names=None) -> None:
    """AM-FM's training settings, generated from `AMFMModel`'s constructor and docstring."""
    from dialeval.cli.options import add_estimator_flags
    from dialeval.metrics.amfm.model import AMFMModel

    p.set_defaults(_estimator_flags=add_estimator_flags(p, AMFMModel, names))


# no `run`: the generated command builds AMFMModel from its flags and calls its `fit_corpus`
TRAIN_COMMANDS = [TrainCommand(
    "amfm", "train an AM-FM model (LSI + n-gram LM) on a corpus",
    estimator="dialeval.metrics.amfm.model:AMFMModel", fit="fit_corpus", arguments=(
        *CORPUS_ARGUMENTS, Options(), Argument("-o", "--output", required=True, help="model folder to write")))]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def load_eval_set(args):
    """(samples, system order, system-level human scores) from --dataset or INPUT."""
    import numpy as np

    from dialeval.errors import DialevalError

    if args.dataset:
        from dialeval.data.datasets import load_dataset

        if not args.data:
            raise DialevalError("--dataset needs --data FOLDER")
        ds = load_dataset(args.dataset, args.data)
        samples = ds.samples
        order = list(dict.fromkeys(s.system for s in samples))
        if ds.system_ratings:
            missing = [s for s in order if args.quality not in ds.system_ratings.get(s, {})]
            if missing:
                raise DialevalError(f"{args.dataset}: no system-level {args.quality!r} for {missing[0]}")
            human = np.array([ds.system_ratings[s][args.quality] for s in order])
            return samples, order, human
    elif args.input:
        from dialeval.data.readers import read_samples

        samples = read_samples(args.input)
        order = list(dict.fromkeys(s.system for s in samples))
    else:
        raise DialevalError("give INPUT or --dataset NAME --data FOLDER")
    if None in order:
        raise DialevalError("system-level sweeps need a `system` for every sample")
    human = []
    for system in order:
        values = [s.human(args.quality) for s in samples if s.system == system]
        values = [v for v in values if v == v]
        if not values:
            raise DialevalError(f"system {system!r} has no {args.quality!r} ratings")
        human.append(float(np.mean(values)))
    return samples, order, np.array(human)


def cmd_sweep(args) -> int:
    from dialeval.errors import DialevalError
    from dialeval.metrics.amfm.lsi import log_grid
    from dialeval.metrics.amfm.sweep import analyse, write_outputs
    from dialeval.metrics.amfm.tuning import score_grid

    if args.merge:
        from dialeval.metrics.amfm.sweep import read_outputs

        rows, summaries = [], []
        for folder in args.merge:
            r, s = read_outputs(folder)
            rows += r
            summaries += s
        print("wrote " + ", ".join(write_outputs(args.output, rows, summaries)))
        return 0
    samples, order, human = load_eval_set(args)
    from dialeval.metrics.amfm.model import corpus_sentences
    from dialeval.metrics.amfm.sweep import check_systems

    check_systems(order)
    hyps = [s.response for s in samples]
    refs = [s.references for s in samples]
    systems = [s.system for s in samples]
    # the grid always holds the L of the order and lambda curves (the paper's L = 10)
    dims = sorted(set(_ints(args.dims_grid) if args.dims_grid else log_grid(5, 2500)) | {args.dims})
    orders = _ints(args.orders)
    lambdas = _floats(args.lambdas)
    from dialeval.progress import say as say_line

    say = say_line if not args.quiet else None
    runs = []
    if args.corpus:
        runs.append((args.label or "corpus", dict(corpus=corpus_sentences(args.corpus, args.corpus_format))))
    if args.crossfit:
        runs.append((f"crossfit-{args.crossfit}", dict(folds=args.crossfit)))
    if not runs:
        raise DialevalError("give --corpus FILE (train on a corpus) and/or --crossfit K (cross-fit on the references)")
    rows, summaries = [], []
    for label, source in runs:
        if say:
            say(f"[{label}] scoring {len(samples)} samples at L={dims} and n={orders}")
        grid = score_grid(hyps, refs, dims, orders, weighting=args.weighting, seed=args.seed,
                          lsi_sentences=args.lsi_sentences or None, progress=say, **source)
        r, summary = analyse(grid, label, systems, order, human, dims=args.dims, lm_order=args.order,
                             lam=args.amfm_lambda, lambdas=lambdas, cv=args.cv, k=args.k, seed=args.seed)
        rows += r
        summaries.append(summary)
    from dialeval.data.writers import json_value

    if not any(r["pearson"] == r["pearson"] for r in rows):
        print("dialeval: warning: every correlation is undefined (constant metric or human "
              "system means); the curves are empty", file=sys.stderr)
    paths = write_outputs(args.output, rows, summaries)
    for s in summaries:
        print(json.dumps(json_value({k: s[k] for k in ("training", "dims", "order", "am", "fm",
                                                       "amfm_fixed_lambda", "amfm_cv_lambda",
                                                       "amfm_cv_dims_order_lambda", "best_in_sample")}),
                         default=str))
    print("wrote " + ", ".join(paths))
    return 0


def add_commands(sub) -> None:
    sweep = sub.add_parser("sweep", help="hyper-parameter sweeps of trainable metrics")
    ssub = sweep.add_subparsers(dest="what", required=True)
    p = ssub.add_parser("amfm", help="AM-FM: system-level Pearson against L, n and lambda (paper Fig. 1-2, Table 2)")
    p.add_argument("input", nargs="?", help="JSONL/CSV samples with system and ratings")
    p.add_argument("--dataset", help="a public data set by name (e.g. dstc6), instead of INPUT")
    p.add_argument("--data", help="that data set's folder")
    p.add_argument("--quality", default="overall", help="human quality to correlate with (default overall)")
    _corpus_arguments(p)
    _model_flags(p, ["weighting", "lsi_sentences", "seed"])
    p.add_argument("--label", help="name of the --corpus training substitute in outputs")
    p.add_argument("--crossfit", type=int, default=0,
                   help="also cross-fit: K folds of turns, each scored by a model trained on the "
                        "other folds' references (no human score used)")
    p.add_argument("--dims-grid", help="comma-separated L values (default: log grid 5..2500)")
    p.add_argument("--orders", default="1,2,3,4", help="n-gram orders (default 1,2,3,4)")
    p.add_argument("--lambdas", default=",".join(f"{0.1 * i:.1f}" for i in range(11)),
                   help="lambda values of the AM-FM curve (default 0.0,0.1,...,1.0)")
    p.add_argument("--dims", type=int, default=10, help="L for the order and lambda curves (default 10)")
    p.add_argument("--order", type=int, default=2, help="n for the lambda curve (default 2)")
    p.add_argument("--amfm-lambda", dest="amfm_lambda", type=float, default=0.8,
                   help="the fixed lambda reported beside the cross-validated one (default 0.8)")
    p.add_argument("--cv", default="loso", choices=["loso", "kfold"],
                   help="cross-validation over systems for choosing lambda (and L, n)")
    p.add_argument("--k", type=int, default=5, help="folds for --cv kfold")
    p.add_argument("--merge", nargs="+", metavar="DIR",
                   help="instead of computing, draw earlier sweep folders' curves together")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("-o", "--output", required=True, help="folder for amfm_sweep.csv, amfm_summary.json, PNGs")
    p.set_defaults(func=cmd_sweep)
