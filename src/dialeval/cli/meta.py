"""CLI extension for the meta-evaluation: `correlate`, `evaluate`, `agreement`, `datasets`.

Thin, as the rest of the CLI: arguments in, library calls, tables or JSON out. Nothing heavy
is imported at module level.
"""

from __future__ import annotations

import json
import sys

from dialeval.errors import DialevalError
from dialeval.cli.options import add_table_format


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    return names or None


def _warn(message: str) -> None:
    print(f"dialeval: warning: {message}", file=sys.stderr)


class FewPoints:
    """The "over only N points" warnings of one command, said once each: `correlation_rows`
    warns per metric, and `--level all` over 23 metrics printed 23 lines that differ only in the
    metric's name. A system-level one is left out where a row is descriptive only: the note on
    too few systems (`descriptive_notes`) says it, with why."""

    def __init__(self):
        self.said: dict[str, list[str]] = {}

    def __call__(self, message: str) -> None:
        where, _, text = message.rpartition(": ")
        self.said.setdefault(text, [])
        if where and where not in self.said[text]:
            self.said[text].append(where)

    def flush(self, descriptive: bool) -> None:
        for text, where in self.said.items():
            if descriptive and text.startswith("system-level correlation over only"):
                continue
            # `where` is "metric, quality" per metric: the metrics, then the quality, once
            metrics = [w.rpartition(", ")[0] or w for w in where]
            qualities = list(dict.fromkeys(w.rpartition(", ")[2] for w in where if ", " in w))
            listed = ", ".join(metrics) if len(metrics) <= 4 else f"{len(metrics)} metrics"
            named = f" ({'; '.join([listed] + qualities)})" if where else ""
            _warn(f"{text}{named}")
        self.said = {}


def _correlation_table(rows: list[dict], fmt: str) -> str:
    from dialeval.report.tables import correlation_table

    return correlation_table(rows, fmt)


def _comparison_table(rows: list[dict], fmt: str) -> str:
    from dialeval.report.tables import metric_comparison_table

    return metric_comparison_table(rows, fmt)


def _levels(arg: str, default: str) -> list[str]:
    from dialeval.meta.correlation import LEVELS

    if arg is None:
        return [default]
    if arg == "all":
        return list(LEVELS)
    levels = _names(arg) or []
    for lv in levels:
        if lv not in LEVELS:
            raise DialevalError(f"unknown level {lv!r}; choose from {', '.join(LEVELS)} or all")
    return levels


def _methods(arg: str) -> list[str]:
    from dialeval.meta.correlation import METHODS

    methods = _names(arg) or list(METHODS)
    for m in methods:
        if m not in METHODS:
            raise DialevalError(f"unknown correlation {m!r}; choose from {', '.join(METHODS)}")
    return methods


def _print_result(args, correlations: list[dict], comparisons: list[dict], extra: dict,
                  few: FewPoints | None = None) -> None:
    from dialeval.data.writers import json_value
    from dialeval.meta.evaluate import descriptive_notes

    caveats = descriptive_notes(correlations, comparisons)   # too few systems: r only
    if few is not None:
        few.flush(descriptive=bool(caveats))
    for caveat in caveats:
        print(f"dialeval: note: {caveat}", file=sys.stderr)
    if args.json:
        print(json.dumps(json_value({**extra, **({"caveats": caveats} if caveats else {}),
                                     "correlations": correlations,
                                     "comparisons": comparisons}), ensure_ascii=False))
        return
    from dialeval.report.tables import comment_lead

    lead = comment_lead(args.table_format)   # comment lines in CSV and LaTeX
    print(_correlation_table(correlations, args.table_format))
    if comparisons:
        print()
        print(lead + "Is A's correlation higher than B's? (one-sided; Williams' t-test and paired bootstrap)")
        print(_comparison_table(comparisons, args.table_format))
    if correlations and correlations[0].get("n_boot"):
        print()
        print(f"{lead}CI: percentile bootstrap, {correlations[0]['n_boot']} resamples, seed {args.seed}")


def _analyse(args, rows: list[dict], quality: str, levels: list[str], metrics=None,
             measures=None, warn=_warn):
    from dialeval.meta.evaluate import columns, comparison_rows, correlation_rows

    values, human, dialogues, systems = columns(rows, quality, metrics)
    corr = correlation_rows(values, human, quality=quality, levels=levels,
                            methods=_methods(args.method), dialogues=dialogues, systems=systems,
                            n_boot=args.n_boot, seed=args.seed, warn=warn, measures=measures)
    comps = []
    if args.compare and len(values) > 1:
        # The comparison uses --compare-method, else the first --method, so that
        # `--method spearman` compares Spearman correlations.
        compare_method = args.compare_method or _methods(args.method)[0]
        for level in levels:
            comps += comparison_rows(values, human, quality=quality, level=level,
                                     method=compare_method, dialogues=dialogues,
                                     systems=systems, n_boot=args.n_boot, seed=args.seed,
                                     measures=measures)
    return values, human, corr, comps


def _system_measures(rows: list[dict], metrics: list[str] | None) -> dict:
    """The system level's definition of a system's score: its corpus score (`compare`'s
    Measures; a plain `score -o` file's statistics rows are recomputed, with a note)."""
    from dialeval.meta.measures import measures_from_rows, row_signatures

    notes: list[str] = []
    measures = measures_from_rows(rows, metrics, row_signatures(rows), notes=notes)
    for note in notes:
        print(f"dialeval: note: {note}", file=sys.stderr)
    return measures


def _level_notes(rows: list[dict], levels: list[str], values: dict, human, measures) -> dict:
    """What the dialogue and system levels' points are, in words and (system level) numbers."""
    from dialeval.meta.evaluate import DIALOGUE_ID

    out: dict = {}
    if "dialogue" in levels:
        owners: dict = {}
        for r in rows:
            owners.setdefault((r.get("meta") or {}).get(DIALOGUE_ID), set()).add(r.get("system"))
        shared = sum(1 for v in owners.values() if len(v) > 1)
        out["dialogue_level"] = (
            "dialogue level: one point per (system, dialogue_id) pair, the mean of that system's "
            "turns in the dialogue; systems sharing a dialogue_id are never averaged together"
            + (f" ({shared} of {len(owners)} dialogue ids are answered by several systems: one "
               "point per system)" if shared else ""))
    if "system" in levels and measures:
        from dialeval.meta.system_level import DEFINITION, system_points

        names = list(values)
        systems = [r.get("system") for r in rows]
        who, x, y = system_points([measures[m] for m in names], human, systems)
        out["system_level"] = DEFINITION
        out["system_points"] = {s: {**{m: float(x[k][j]) for k, m in enumerate(names)},
                                    "human": float(y[j])} for j, s in enumerate(who)}
    return out


def _print_levels(args, extra: dict) -> None:
    if args.json:
        return
    from dialeval.report.tables import comment_lead, format_table

    lead = comment_lead(args.table_format)
    if "dialogue_level" in extra:
        print(f"{lead}{extra['dialogue_level']}")
    if "system_points" in extra:
        print(f"{lead}{extra['system_level']}; the points:")
        points = extra["system_points"]
        names = list(next(iter(points.values()))) if points else []
        print(format_table(["system"] + names, [[s] + [v[m] for m in names] for s, v in points.items()],
                           fmt=args.table_format))


def _supported_levels(rows: list[dict], levels: list[str]) -> list[str]:
    """`--level all`: the levels the rows support (`meta.evaluate.levels_available`, as `report`
    skips a level it cannot compute), with one stderr note naming what was left out and why."""
    from dialeval.meta.evaluate import DIALOGUE_ID, levels_available

    have = levels_available(rows)
    why = {"dialogue": f"not every sample has meta['{DIALOGUE_ID}']",
           "system": "it needs 'system' on every sample and at least two systems"}
    skipped = [lv for lv in levels if lv not in have]
    if skipped:
        print("dialeval: note: --level all skips " + "; ".join(f"the {lv} level ({why[lv]})" for lv in skipped),
              file=sys.stderr)
    return [lv for lv in levels if lv in have]


def cmd_correlate(args) -> int:
    from dialeval.meta.evaluate import read_scores

    rows = read_scores(args.scores)
    levels = _levels(args.level, "turn")
    if args.level == "all":   # every level the data supports; an explicit level stays an error
        levels = _supported_levels(rows, levels)
    wanted = _names(args.metrics)
    if wanted:
        present = list(dict.fromkeys(m for r in rows for m in r["scores"]))
        missing = [m for m in wanted if m not in present]
        if missing:
            raise DialevalError(f"{args.scores} has no scores for {', '.join(missing)}; "
                                f"it has {', '.join(present) or 'none'}")
    measures = _system_measures(rows, wanted) if "system" in levels else None
    few = FewPoints()
    values, human, corr, comps = _analyse(args, rows, args.human, levels, wanted, measures, warn=few)
    described = _level_notes(rows, levels, values, human, measures)
    plots = []
    if args.plot:
        plots = _correlate_plots(args, rows, values, human, levels, described.get("system_points"))
    _print_result(args, corr, comps, {"input": args.scores, "quality": args.human, **described,
                                      **({"plots": plots} if plots else {})}, few)
    _print_levels(args, described)
    if plots and not args.json:
        print(f"plots: {', '.join(plots)}", file=sys.stderr)
    return 0


def _correlate_plots(args, rows, values, human, levels, system_points=None) -> list[str]:
    """Turn-level scatters for `turn`; for `dialogue`, one point per (system, dialogue): the
    means of its metric and human scores; for `system`, each system's corpus score against its
    human mean (the points those levels correlate)."""
    from dialeval.meta.correlation import group_means
    from dialeval.meta.matrix import correlation_matrix
    from dialeval.report.plots import heatmap, scatter_plots, system_scatter_plots

    import numpy as np

    systems = [r.get("system") for r in rows]
    plots: list[str] = []
    if "turn" in levels:
        plots += scatter_plots(values, human, args.plot, quality=args.human, seed=args.seed,
                               systems=systems if any(s is not None for s in systems) else None)
    if "dialogue" in levels:
        dialogues = [(r.get("meta") or {}).get("dialogue_id") for r in rows]
        for metric, x in values.items():
            ok = np.isfinite(x) & np.isfinite(human)
            keys = [(s, d) for s, d, good in zip(systems, dialogues, ok) if good]
            names, means = group_means(np.stack([x[ok], human[ok]]), keys)
            colour = [s for s, _ in names] if all(s is not None for s, _ in names) else None
            plots += scatter_plots({metric: means[0]}, means[1], args.plot, quality=args.human,
                                   seed=args.seed, level="dialogue", jitter=0.0, systems=colour)
    if "system" in levels and system_points:
        sys_values = {s: {m: v[m] for m in values} for s, v in system_points.items()}
        sys_human = {s: v["human"] for s, v in system_points.items()}
        plots += system_scatter_plots(sys_values, sys_human, args.plot, quality=args.human)
    if len(values) > 1:
        plots.append(heatmap(correlation_matrix(values, "spearman"), list(values),
                             f"{args.plot}/heatmap_metrics.png", title="Spearman between metrics"))
    return plots


def _metric_options(args) -> dict:
    """Generated metric flags, plus `--option KEY=VALUE` pairs (kept for scripts that use them)."""
    from dialeval.metrics.registry import all_options
    from dialeval.options import check_options, coerce

    from .options import metric_options

    options = metric_options(args)
    specs = all_options()
    for item in args.option or []:
        if "=" not in item:
            raise DialevalError(f"--option {item!r}: expected KEY=VALUE")
        key, value = (s.strip() for s in item.split("=", 1))
        check_options([key], specs, what="metric option")
        options[key] = coerce(specs[key], value)
    return options


def _check_scored(result, dataset) -> None:
    """A metric with no value on any sample (a reference-based metric on a set without
    references) cannot be correlated: a warning naming it, or an error when no metric has one."""
    import numpy as np

    empty = [m for m in result.metrics if not np.isfinite(result.sentence[m]).any()]
    if not empty:
        return
    has_refs = any(s.references for s in dataset.samples)
    why = "" if has_refs else f" ({dataset.info.name} has no references; choose metrics that need none)"
    if len(empty) == len(result.metrics):
        raise DialevalError(f"{', '.join(empty)}: no value on any sample{why}")
    _warn(f"{', '.join(empty)}: no value on any sample{why}; their rows are n/a")


def cmd_evaluate(args) -> int:
    from dialeval.data.writers import write_jsonl
    from dialeval.meta.evaluate import evaluate_scored, load_rated
    from dialeval.scoring import score

    dataset = load_rated(args.dataset, args.path, exclude_systems=args.exclude_system or ())
    if dataset.reference_systems and not args.keep_reference_systems:
        print(f"dialeval: leaving out {', '.join(map(repr, dataset.reference_systems))}: its "
              "response is the reference (--keep-reference-systems keeps it)", file=sys.stderr)
        dataset = dataset.without_systems(dataset.reference_systems)
    result = score(dataset.samples, _names(args.metrics) or [], refs_mode=args.refs_mode,
                   tokenizer=args.tokenize, **_metric_options(args))
    _check_scored(result, dataset)
    few = FewPoints()
    ev = evaluate_scored(dataset, result, qualities=_names(args.qualities),
                         levels=None if args.level is None else _levels(args.level, "turn"),
                         methods=_methods(args.method), compare_metrics=args.compare,
                         compare_method=args.compare_method or _methods(args.method)[0],
                         n_boot=args.n_boot, seed=args.seed, warn=few)
    if ev.dataset.system_ratings and args.level not in (None, "system"):
        _warn(f"{ev.dataset.info.name} has only system-level human scores; --level ignored")
    if args.output:
        write_jsonl(args.output, ev.rows(with_stats=args.with_stats))
    plots = _evaluation_plots(args, ev) if args.plot else []
    if args.report:
        _evaluation_report(args, ev)
    extra = dict(ev.extra, **({"plots": plots} if plots else {}))
    _print_result(args, ev.correlations, ev.comparisons, extra, few)
    if plots and not args.json:
        print(f"plots: {', '.join(plots)}", file=sys.stderr)
    return 0


def _evaluation_plots(args, ev) -> list[str]:
    """`evaluate --plot DIR`: per quality, turn-level scatters (when items are rated),
    system-level scatters of corpus scores vs system means, and the metric heatmap."""
    from dialeval.meta.evaluate import columns
    from dialeval.meta.human import system_human_means
    from dialeval.meta.matrix import correlation_matrix
    from dialeval.report.plots import heatmap, scatter_plots, system_scatter_plots

    plots: list[str] = []
    rows = ev.rows(with_stats=False)
    values = {m: ev.result.sentence[m] for m in ev.result.metrics}
    for q in ev.qualities:
        if ev.dataset.system_ratings:
            human = {s: v[q] for s, v in ev.dataset.system_ratings.items() if q in v}
            plots += system_scatter_plots(ev.result.systems, human, args.plot, quality=q)
            continue
        _, human, _, systems = columns(rows, q)
        plots += scatter_plots(values, human, args.plot, quality=q, seed=args.seed,
                               systems=systems)
        sys_human = system_human_means(human, systems)
        if len(sys_human) > 1:
            plots += system_scatter_plots(ev.result.systems, sys_human, args.plot, quality=q)
    if len(values) > 1:
        plots.append(heatmap(correlation_matrix(values, "spearman"), list(values),
                             f"{args.plot}/heatmap_metrics.png", title="Spearman between metrics"))
    return plots


def _evaluation_report(args, ev) -> None:
    from dialeval.report.tables import correlation_table

    from .report import report_kind, write_html_report, write_tables

    kind = report_kind(args.report)
    if kind == "html":
        system_human = ev.dataset.system_ratings or None
        write_html_report(args.report, ev.rows(), signatures=ev.result.signatures,
                          qualities=None if system_human else ev.qualities,
                          system_human=system_human, n_boot=args.n_boot,
                          title=f"dialeval evaluate {ev.dataset.info.name}")
    elif kind == "json":
        from dialeval.data.writers import write_json

        write_json(args.report, dict(ev.extra, correlations=ev.correlations,
                                     comparisons=ev.comparisons))
    else:
        write_tables(args.report, [("correlations", correlation_table(ev.correlations, kind))],
                     kind, [f"{m}: {sig}" for m, sig in ev.result.signatures.items()])


def cmd_agreement(args) -> int:
    import numpy as np

    from dialeval.data.writers import json_value
    from dialeval.meta.agreement import agreement, ratings_matrix
    from dialeval.meta.evaluate import load_rated

    dataset = load_rated(args.dataset, args.path, exclude_systems=args.exclude_system or ())
    qualities = _names(args.qualities) or list(dataset.info.qualities)
    unknown = [q for q in qualities if q not in dataset.info.qualities]
    if unknown:
        raise DialevalError(f"{dataset.info.name} has no quality {unknown[0]!r}; choose from "
                            f"{', '.join(dataset.info.qualities)}")
    rows = []
    for q in qualities:
        m = ratings_matrix(dataset.samples, q)
        if not np.isfinite(m).any():
            raise DialevalError(
                f"{dataset.info.name} publishes no per-annotator {q!r} ratings"
                + (" (only system-level means)" if dataset.system_ratings else "")
                + "; agreement needs each rater's scores")
        if m.shape[1] < 2:
            _warn(f"{q}: at most one rating per item (only means published); no agreement")
        row = agreement(m, q, method=args.method, n_rep=args.n_rep, seed=args.seed,
                        drop_below=args.drop_below).to_dict()
        if args.drop_below is not None and row["raters"] == 0:
            raise DialevalError(f"{q}: --drop-below {args.drop_below:g} drops every rater "
                                f"(mean pairwise kappas {_rater_kappas(m)}); give a lower threshold")
        rows.append(row)
    if args.json:
        print(json.dumps(json_value({"dataset": dataset.info.name, "agreement": rows})))
        return 0
    from dialeval.report.tables import agreement_table

    from dialeval.report.tables import comment_lead

    lead = comment_lead(args.table_format)
    print(agreement_table(rows, args.table_format))
    print()
    print(f"{lead}{dataset.info.name}: split-half and leave-one-out are {args.method} correlations; "
          f"split-half over {args.n_rep} random splits (seed {args.seed}); kappas are means "
          "over rater pairs (a rater = a column of the data set's rating lists)")
    for r in rows:
        if r["dropped_raters"]:
            print(f"{lead}{r['quality']}: dropped rater columns {r['dropped_raters']} "
                  f"(mean pairwise kappa < {args.drop_below})")
    return 0


def _rater_kappas(matrix) -> str:
    from dialeval.meta.agreement import rater_mean_kappa

    from dialeval.report.tables import fmt_float

    return ", ".join(fmt_float(float(v), 3) for v in rater_mean_kappa(matrix))


def _describe_text(d: dict) -> str:
    refs = d["references"]
    if refs["samples_with"] == 0:
        ref_text = "none (reference-based metrics give no value)"
    else:
        span = str(refs["min"]) if refs["min"] == refs["max"] else f"{refs['min']}-{refs['max']}"
        ref_text = f"{refs['samples_with']} of {d['samples']} samples, {span} per sample"
    lines = [f"{d['name']}: {d['description']}",
             f"  samples: {d['samples']}   level: {d['level']}   human scores: {d['human_scores']}",
             f"  references: {ref_text}"]
    if d["reference_systems"]:
        lines.append(f"  reference systems (left out by `evaluate`): {', '.join(d['reference_systems'])}")
    lines.append("  qualities:")
    for q, v in d["qualities"].items():
        scale = "-".join(f"{x:g}" for x in v["scale"]) if v["scale"] else "?"
        lines.append(f"    {q} [{scale}]: {v['description']}")
    systems = d["systems"]
    lines.append(f"  systems ({len(systems)}): " + (", ".join(f"{k} ({n})" for k, n in systems.items())
                                                    or "none named"))
    return "\n".join(lines)


def cmd_datasets(args) -> int:
    import os

    from dialeval.data.datasets import get_spec, list_datasets, load_dataset

    if args.sources:
        from dataclasses import asdict

        from dialeval.data.datasets.sources import all_sources, text

        if args.json:
            print(json.dumps([{**asdict(src), "loaders": names} for src, names in all_sources()],
                             ensure_ascii=False))
        else:
            print(text())
        return 0
    specs = list_datasets()
    if args.name:
        specs = [get_spec(args.name)]
    if args.path or args.data_root:
        described = []
        for s in specs:
            folder = args.path if args.path else os.path.join(args.data_root, s.folder)
            if not args.path and not os.path.isdir(folder):
                _warn(f"{s.name}: no folder {folder}")
                continue
            described.append(load_dataset(s.name, folder).describe())
        if args.json:
            print(json.dumps(described, ensure_ascii=False))
        else:
            print("\n\n".join(_describe_text(d) for d in described))
        return 0
    if args.json:
        print(json.dumps([{"name": s.name, "folder": s.folder, "description": s.description}
                          for s in specs]))
        return 0
    width = max(len(s.name) for s in specs)
    for s in specs:
        print(f"{s.name.ljust(width)}  {s.description}  (folder: {s.folder})")
    print("\nqualities, scales, references and systems: dialeval datasets NAME PATH, or "
          "dialeval datasets --data-root DIR for all")
    return 0


def _stats_arguments(p, *, compare_default: bool) -> None:
    p.add_argument("--method", default=None, help="correlations, comma-separated "
                   "(default: pearson,spearman,kendall)")
    p.add_argument("--n-boot", type=count(0), default=1000, help="bootstrap resamples (0: no CI)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--compare", action=argparse_bool(), default=compare_default,
                   help="test every pair of metrics (Williams + paired bootstrap)")
    p.add_argument("--compare-method", default=None, choices=["pearson", "spearman", "kendall"],
                   help="correlation the pairwise comparison tests (default: the first --method)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    add_table_format(p)


def count(minimum: int):
    """argparse type: an integer no smaller than `minimum` (a negative resample count is
    refused at parse time, with argparse's usage line and exit status 2)."""
    import argparse

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def argparse_bool():
    import argparse

    return argparse.BooleanOptionalAction


def add_commands(sub) -> None:
    p = sub.add_parser("correlate", help="correlate `dialeval score` output with human ratings")
    p.add_argument("scores", help="per-sample JSONL written by `dialeval score -o`")
    p.add_argument("--human", required=True, help="the quality in `ratings` to correlate with")
    p.add_argument("--level", default=None,
                   help="turn, dialogue (groups by meta.dialogue_id), system, or all (default turn)")
    p.add_argument("--metrics", help="comma-separated subset of the file's metrics")
    p.add_argument("--plot", metavar="DIR", help="write scatter plots and a metric heatmap (PNG)")
    _stats_arguments(p, compare_default=True)
    p.set_defaults(func=cmd_correlate)

    p = sub.add_parser("evaluate", help="score a public data set or your own rated file, "
                       "correlate every quality")
    p.add_argument("dataset", help="data set name (`dialeval datasets` lists them), or a rated "
                   "JSONL/JSON/CSV/TSV file (`ratings`, or `rating:<quality>` columns)")
    p.add_argument("path", nargs="?", help="the data set's folder (none for a rated file)")
    p.add_argument("--metrics", default="bleu4,rouge_l,cider_d", help="comma-separated metrics")
    p.add_argument("--qualities", help="comma-separated subset of the data set's qualities")
    p.add_argument("--level", default=None, help="turn, dialogue, system or all "
                   "(default: the data set's level)")
    p.add_argument("--exclude-system", action="append",
                   help="leave out a system's responses (repeatable)")
    p.add_argument("--keep-reference-systems", action="store_true",
                   help="keep systems whose response is the reference (usr-*'s 'Original Ground "
                   "Truth'), left out by default")
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="metric option by its Python name (the same as its --flag)")
    from .options import add_scoring_flags

    add_scoring_flags(p)
    p.add_argument("-o", "--output", help="also write the per-sample scores (JSONL)")
    p.add_argument("--with-stats", action="store_true",
                   help="with -o: add responses, references and statistics rows (for compare/report)")
    p.add_argument("--plot", metavar="DIR", help="write scatter plots (turn and system level, "
                   "with r, n and a fit line) and a metric heatmap (PNG)")
    p.add_argument("--report", metavar="PATH",
                   help="also write a report: .html (self-contained), .json, .tex, .csv or markdown")
    _stats_arguments(p, compare_default=False)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("agreement", help="human agreement per quality of a public data set or "
                       "of your own rated file")
    p.add_argument("dataset", help="data set name (`dialeval datasets` lists them), or a rated "
                   "JSONL/JSON/CSV/TSV file (a rater is a position in each rating list)")
    p.add_argument("path", nargs="?", help="the data set's folder (none for a rated file)")
    p.add_argument("--qualities", help="comma-separated subset of the data set's qualities")
    p.add_argument("--method", default="spearman", choices=["pearson", "spearman", "kendall"],
                   help="correlation for split-half and leave-one-out (default spearman)")
    p.add_argument("--n-rep", type=count(1), default=100, help="random splits for split-half")
    p.add_argument("--seed", type=int, default=0, help="seed of the random splits (default 0)")
    p.add_argument("--exclude-system", action="append", help="leave out a system's responses")
    p.add_argument("--drop-below", type=float, default=None,
                   help="drop raters whose mean pairwise kappa is below this (nlg-eval paper: 0.1)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    add_table_format(p)
    p.set_defaults(func=cmd_agreement)

    p = sub.add_parser("datasets", help="list the public data set loaders; with a folder, "
                       "describe a set's references, qualities, scales, level and systems")
    p.add_argument("name", nargs="?", help="one data set to list or describe")
    p.add_argument("path", nargs="?", help="its folder: load it and describe it")
    p.add_argument("--data-root", metavar="DIR",
                   help="folder holding every set's folder (named as `--sources` lists them): describe them all")
    p.add_argument("--sources", action="store_true",
                   help="where each folder comes from (project page / repository, files), its licence and "
                        "the layout the loader expects")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=cmd_datasets)
