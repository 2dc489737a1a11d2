"""CLI extension: `dialeval probe`, behavioural probes for any metric.

Thin, as the rest of the CLI: the samples come from a file (the reader `score` uses) or a public
rated data set (the loader `evaluate` uses), `dialeval.meta.probes.probe` does the work, and the
table, JSON and HTML come from `dialeval.report.probes`. Metric options are `score`'s generated
flags, so every metric, built-in or plug-in, is probed with the options it is scored with.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

from dialeval.errors import DialevalError


def _load(args):
    """The samples to probe and a label for them: INPUT, or --dataset with --data-root."""
    if args.dataset and args.input:
        raise DialevalError("give either INPUT or --dataset, not both")
    if args.dataset:
        return _dataset_samples(args), args.dataset
    if not args.input:
        raise DialevalError("no input: give INPUT (JSONL/JSON/CSV/TSV with contexts, or - for "
                            "standard input) or --dataset NAME --data-root DIR")
    from dialeval.data.readers import input_format, read_samples

    from .main import _need_file

    input_format(args.input, args.format)      # an unknown format fails before any reading
    _need_file(args.input)
    return read_samples(args.input, args.format), args.input


def _dataset_samples(args):
    """A public rated set, as `evaluate` loads it; its reference systems (a response that is the
    reference) are left out unless --keep-reference-systems. --data-root is the set's folder or
    the folder holding it (under the name `dialeval datasets --sources` gives)."""
    from dialeval.data.datasets import DATASETS
    from dialeval.meta.evaluate import load_rated

    folder = args.data_root
    if args.dataset in DATASETS:
        if not folder:
            raise DialevalError(f"--dataset {args.dataset}: give its folder with --data-root DIR")
        nested = os.path.join(folder, DATASETS[args.dataset].folder)
        if os.path.isdir(nested):
            folder = nested
    dataset = load_rated(args.dataset, folder, exclude_systems=args.exclude_system or ())
    if dataset.reference_systems and not args.keep_reference_systems:
        print(f"dialeval: leaving out {', '.join(map(repr, dataset.reference_systems))}: its "
              "response is the reference (--keep-reference-systems keeps it)", file=sys.stderr)
        dataset = dataset.without_systems(dataset.reference_systems)
    return dataset.samples


def _rewarn(caught, samples) -> None:
    """The probe run's warnings, less the run's tallies: they count the variants too, which are
    unreadable on purpose (the `script` family writes Cyrillic, `gibberish` no word the vectors
    know), as if the user's data held them. Text in another script is said again for the user's
    responses only, with the English-only metrics the warning named (out-of-vocabulary counts
    are `dialeval score`'s to give)."""
    from dialeval.progress import ForeignScriptWarning, TallyWarning
    from dialeval.text.scripts import foreign_script

    said = set()
    metrics: tuple = ()
    for w in caught:
        if isinstance(w.message, ForeignScriptWarning):
            metrics = metrics or w.message.metrics
        if isinstance(w.message, TallyWarning):
            continue
        key = (w.category, str(w.message))
        if key not in said:   # once, as the default filter would have shown it
            said.add(key)
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if not metrics:
        return
    scripts: dict[str, int] = {}
    for sample in samples:
        script = foreign_script(sample.response)
        if script is not None:
            scripts[script] = scripts.get(script, 0) + 1
    for script, count in scripts.items():
        warnings.warn(ForeignScriptWarning(count, script, metrics), stacklevel=2)


def _metrics(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise DialevalError("--metrics names no metric")
    return names


def cmd_probe(args) -> int:
    from dialeval.data.writers import json_value, write_json, write_jsonl
    from dialeval.meta.probes import check_families, probe
    from dialeval.report.probes import describe_items, probe_table, write_page
    from dialeval.report.tables import comment_lead
    from dialeval.scoring import DialevalNote

    from .options import metric_options

    families = check_families(args.families)       # a bad name fails before anything is read
    samples, label = _load(args)
    with warnings.catch_warnings(record=True) as caught:   # the scoring notes are printed once, below
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", DialevalNote)
        result = probe(samples, _metrics(args.metrics), families=families, seed=args.seed,
                       n_boot=args.n_boot, top=args.top, limit=args.limit,
                       keep_reference_copies=args.keep_reference_copies, refs_mode=args.refs_mode,
                       tokenizer=args.tokenize, **metric_options(args))
    _rewarn(caught, samples)
    data = result.to_dict()
    data["input"] = label
    for note in result.notes:
        print(f"dialeval: note: {note}", file=sys.stderr)
    dropped = data["items"]["reference_copies_dropped"]
    if dropped:
        print(f"dialeval: note: dropped {dropped} item{'s' if dropped != 1 else ''} whose response "
              "equals one of its references (--keep-reference-copies keeps them)", file=sys.stderr)
    if args.output:
        write_json(args.output, data)
    if args.failures:
        write_jsonl(args.failures, result.failures())
        print(f"failures: {args.failures}", file=sys.stderr)
    if args.report:
        write_page(args.report, json_value(data), title=f"dialeval probes: {os.path.basename(label)}")
        print(f"report: {args.report}", file=sys.stderr)
    if args.json:
        print(json.dumps(json_value(data), ensure_ascii=False))
        return 0
    lead = comment_lead(args.table_format)
    print(probe_table(data, args.table_format))
    print()
    print(f"{lead}share: items where the original scores strictly better than the variant "
          "(ties and NaN variants fail); CI: percentile bootstrap over items, 95%")
    print(f"{lead}{describe_items(data)}")
    for m in result.metrics:
        print(f"{lead}{m}: {result.signatures[m]}")
    print(f"{lead}{result.signature()}")
    return 0


def add_commands(sub) -> None:
    from dialeval.meta.probes import FAMILIES

    from .main import DEFAULT_METRICS
    from .meta import count
    from .options import add_scoring_flags, add_table_format

    p = sub.add_parser("probe", help="behavioural probes: does a metric prefer each response to "
                       "degenerate variants (empty, parroted, shuffled, ...)?")
    p.add_argument("input", nargs="?", help="JSONL (or a JSON array), CSV or TSV file of samples "
                   "with contexts (and references for reference metrics); - reads standard input")
    p.add_argument("--format", choices=["jsonl", "json", "csv", "tsv"],
                   help="input format (default: by extension; JSON lines for -)")
    p.add_argument("--dataset", metavar="NAME", help="a public rated data set instead of INPUT "
                   "(`dialeval datasets` lists them), loaded as `evaluate` loads it")
    p.add_argument("--data-root", metavar="DIR", help="with --dataset: the data set's folder, or "
                   "the folder holding every set's folder")
    p.add_argument("--exclude-system", action="append", help="with --dataset: leave out a system's "
                   "responses (repeatable)")
    p.add_argument("--keep-reference-systems", action="store_true",
                   help="with --dataset: keep systems whose response is the reference (left out by default)")
    p.add_argument("--metrics", default=DEFAULT_METRICS,
                   help=f"comma-separated, or all (default: {DEFAULT_METRICS})")
    p.add_argument("--families", default=None,
                   help=f"comma-separated probe families (default: all): {', '.join(FAMILIES)}")
    p.add_argument("--seed", type=count(0), default=0,
                   help="seed of the variants, the --limit subset and the bootstrap (default 0)")
    p.add_argument("--n-boot", type=count(0), default=1000,
                   help="bootstrap resamples for the 95%% CIs (default 1000; 0: no CI)")
    p.add_argument("--top", metavar="QUALITY:FRACTION",
                   help="only items whose mean human rating of QUALITY is in the top FRACTION "
                        "(e.g. overall:0.4; ties at the threshold kept)")
    p.add_argument("--limit", type=count(1), default=None, metavar="N",
                   help="a seeded random subset of N items (after --top)")
    p.add_argument("--keep-reference-copies", action="store_true",
                   help="keep items whose response equals one of their references (dropped by "
                        "default: their reference metrics are trivially perfect)")
    p.add_argument("-o", "--output", help="write the results as JSON")
    p.add_argument("--report", metavar="PATH", help="write a self-contained HTML page of the results")
    p.add_argument("--failures", metavar="PATH", help="write every item a metric let a variant tie or "
                   "beat as JSON lines (metric, family, last turn, response, variant, both scores)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    add_table_format(p, alias=False)
    add_scoring_flags(p)
    p.set_defaults(func=cmd_probe)
