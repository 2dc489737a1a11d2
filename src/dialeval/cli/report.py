"""CLI extension for comparing systems and writing reports: `compare` and `report`.

`compare` answers "which of my systems is better, and is the difference real?": each system's
corpus score with a bootstrap 95% CI, and a paired test (sacreBLEU's paired bootstrap or
approximate randomization) against a baseline or between all pairs. `report` writes one
self-contained HTML file. Both read what `dialeval score --with-stats -o` writes: the
statistics rows let corpus BLEU be recomputed on every resample.

`write_report` is also what `score --report` and `evaluate --report` call, so a report path's
extension means the same everywhere: `.html`/`.htm` the HTML report, `.json` the JSON summary,
`.tex` LaTeX tables, `.csv` CSV, anything else Markdown.
"""

from __future__ import annotations

import json
import os
import sys

from dialeval.errors import DialevalError


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    out: list[str] = []
    for part in (text if isinstance(text, list) else [text]):
        out += [t.strip() for t in part.split(",") if t.strip()]
    return out or None


def report_kind(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    return {".html": "html", ".htm": "html", ".json": "json", ".tex": "latex",
            ".csv": "csv"}.get(ext, "markdown")


def _inputs(paths) -> dict[str, str]:
    from dialeval.report.html import sha256_file

    return {os.path.basename(p): sha256_file(p) for p in paths if p and os.path.isfile(p)}


def write_html_report(path: str, rows: list[dict], *, signatures=None, inputs=None,
                      qualities=None, system_human=None, title=None, baseline=None,
                      metrics=None, test="bs", n_resamples=None, seed=12345, n_boot=1000,
                      comparison=None, pair_by="auto", probes=None, pairwise=None) -> None:
    from dialeval.report.html import ReportSettings, build_report, render_html, write_report

    settings = ReportSettings(qualities=qualities, system_human=system_human, signatures=signatures,
                              metrics=metrics, baseline=baseline, test=test, n_resamples=n_resamples,
                              seed=seed, n_boot=n_boot, pair_by=pair_by)
    report = build_report(rows, settings, title=title or "dialeval report", inputs=inputs,
                          comparison=comparison)
    if probes is not None:   # `report --probes`: the behavioural probes section
        from dialeval.report.probes import attach

        attach(report, probes)
    for remark in report["remarks"]:
        print(f"dialeval: note: {remark}", file=sys.stderr)
    for warning in report["warnings"]:
        print(f"dialeval: warning: {warning}", file=sys.stderr)
    if pairwise is not None:   # `compare --pairwise`, `report --pairwise`: the verdicts' section
        from dialeval.data.writers import atomic_write
        from dialeval.report.pairwise import attach as attach_pairwise, with_section

        attach_pairwise(report, pairwise)
        page = with_section(render_html(report), pairwise)
        with atomic_write(path) as handle:
            handle.write(page)
    else:
        write_report(path, report)
    print(f"report: {path}", file=sys.stderr)


def write_tables(path: str, sections: list[tuple[str, str]], kind: str,
                 extra_lines: list[str] = ()) -> None:
    """Titled tables in one file: Markdown headings, LaTeX comments, or CSV blocks."""
    from dialeval.data.writers import atomic_write

    with atomic_write(path) as handle:
        for title, table in sections:
            if kind == "markdown":
                handle.write(f"### {title}\n\n{table}\n\n")
            elif kind == "latex":
                handle.write(f"% {title}\n{table}\n\n")
            else:
                handle.write(f"# {title}\n{table}\n\n")
        for line in extra_lines:
            handle.write(("- " if kind == "markdown" else "% " if kind == "latex" else "# ")
                         + line + "\n")


# --- compare -----------------------------------------------------------------------------------

def _system_human_file(path: str | None) -> dict[str, dict[str, float]] | None:
    """`system<TAB>value` lines (a header line is skipped): published system means."""
    if not path:
        return None
    from dialeval.errors import InputError

    values: dict[str, float] = {}
    quality = "human"
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            parts = line.rstrip("\n").split("\t")
            if not line.strip():
                continue
            try:
                value = float(parts[1])
            except (IndexError, ValueError):
                if number == 1 and len(parts) == 2:
                    quality = parts[1].strip() or quality   # a header names the quality
                    continue
                raise InputError("expected 'system<TAB>value'", path=path, line=number) from None
            values[parts[0]] = value
    return {s: {quality: v} for s, v in values.items()}


def cmd_compare(args) -> int:
    from dialeval.data.writers import json_value, write_json
    from dialeval.meta.systems import PAIR_BY_HELP, compare_systems
    from dialeval.meta.evaluate import read_scores
    from dialeval.report.tables import compare_tables

    rows = read_scores(args.scores)
    test = "ar" if args.paired_ar else "bs"
    humans = _names(args.human) or []
    cmp = compare_systems(rows, metrics=_names(args.metrics), humans=humans,
                          system_human=_system_human_file(args.system_human),
                          baseline=args.baseline, test=test, n_resamples=args.n_resamples,
                          seed=args.seed, pair_by=args.pair_by)
    _shout(cmp)
    data = cmp.to_dict()
    data["input"] = args.scores
    pairwise = _pairwise(args, rows, cmp, humans) if args.pairwise else None
    if pairwise is not None:
        data["pairwise"] = pairwise
    if args.report:
        kind = report_kind(args.report)
        if kind == "html":
            write_html_report(args.report, rows, inputs=_inputs([args.scores]),
                              qualities=humans or None, title=f"dialeval compare: {args.scores}",
                              baseline=args.baseline, comparison=cmp, pairwise=pairwise)
        elif kind == "json":
            write_json(args.report, data)
        else:
            write_tables(args.report, compare_tables(data, kind) + _pairwise_tables(pairwise, kind), kind,
                         [cmp.signature] + ([pairwise["signature"]] if pairwise else []))
    if args.json:
        print(json.dumps(json_value(data), ensure_ascii=False))
        return 0
    # titles and notes as `# ` lines in CSV (pandas: read_csv(..., comment="#")), `% ` in LaTeX
    from dialeval.report.tables import comment_lead

    lead = comment_lead(args.table_format)
    for title, table in compare_tables(data, args.table_format) + _pairwise_tables(pairwise, args.table_format):
        print(lead + title)
        print(table)
        print()
    if pairwise is not None:
        from dialeval.report.pairwise import describe_bias

        print(f"{lead}{describe_bias(pairwise)}")
        for note in pairwise["notes"]:
            print(f"{lead}note: {note}")
        print(lead + pairwise["signature"])
    print(f"{lead}items paired by {cmp.pair_by} ({PAIR_BY_HELP[cmp.pair_by]}"
          f"{'; --pair-by auto' if args.pair_by == 'auto' else ''}); pairs: the items each "
          "comparison paired")
    for note in cmp.notes:
        print(f"{lead}note: {note}")
    print(lead + cmp.signature)
    return 0


def _pairwise(args, rows, cmp, humans) -> dict:
    """`compare --pairwise`: the judge asked about every pair of systems on every shared item,
    both orders (`meta/pairwise.py`); with --human, its agreement with human preferences beside
    that of the file's metrics, on the same comparisons."""
    from dialeval.meta.pairwise import ask_judge, plan_comparisons, summarise
    from dialeval.metrics.judge.pairwise import PairwiseJudge

    from .options import estimator_kwargs

    judge = PairwiseJudge(**estimator_kwargs(args, args._pairwise_flags))
    plan = plan_comparisons(rows, pair_by=args.pair_by, systems=_names(args.pairwise_systems),
                            max_items=args.pairwise_max_items, seed=args.pairwise_seed)
    p_ab, p_ba = ask_judge(judge, rows, plan, progress=None)
    metrics = [m for m in cmp.measures if not m.startswith("human:")]
    result = summarise(plan, p_ab, p_ba, signature=judge.signature(), n_resamples=args.n_resamples or 1000,
                       seed=args.seed, rows=rows, human=humans[0] if humans else None, metrics=metrics)
    data = result.to_dict()
    if args.pairwise_out:
        from dialeval.data.writers import write_json

        write_json(args.pairwise_out, data)
    return data


def _pairwise_tables(pairwise: dict | None, fmt: str) -> list[tuple[str, str]]:
    if pairwise is None:
        return []
    from dialeval.report.pairwise import pairwise_tables

    return pairwise_tables(pairwise, fmt)


def _shout(cmp) -> None:
    """Pairing that lost items is said on stderr too, where a user piping the table sees it (and
    statistics recomputed from the rows, more quietly)."""
    for remark in cmp.remarks:
        print(f"dialeval: note: {remark}", file=sys.stderr)
    for warning in cmp.warnings:
        print(f"dialeval: warning: {warning}", file=sys.stderr)


# --- report ------------------------------------------------------------------------------------

def cmd_report(args) -> int:
    from dialeval.meta.evaluate import read_scores

    rows = read_scores(args.scores)
    if report_kind(args.output) != "html":
        raise DialevalError(f"-o {args.output}: the report is HTML; give a .html path")
    probes = pairwise = None
    if args.probes:
        from dialeval.report.probes import read_probes

        probes = read_probes(args.probes)
    if args.pairwise:
        from dialeval.report.pairwise import read_pairwise

        pairwise = read_pairwise(args.pairwise)
    from dialeval.report.analysis import check_qualities

    system_human = _system_human_file(args.system_human)
    check_qualities(rows, _names(args.human), system_human)   # a typo is refused, as compare refuses it
    write_html_report(args.output, rows, inputs=_inputs([args.scores, args.probes]),
                      qualities=_names(args.human), system_human=system_human,
                      title=args.title or f"dialeval report: {os.path.basename(args.scores)}",
                      baseline=args.baseline, metrics=_names(args.metrics),
                      test="ar" if args.paired_ar else "bs", n_resamples=args.n_resamples,
                      seed=args.seed, n_boot=args.n_boot, pair_by=args.pair_by, probes=probes,
                      pairwise=pairwise)
    return 0


def add_commands(sub) -> None:
    from dialeval.meta.systems import DEFAULT_SEED, PAIR_BY

    from .options import add_table_format

    def common(p, *, table: bool) -> None:
        p.add_argument("scores", help="per-sample JSONL from `dialeval score -o` or `evaluate -o` "
                       "(with --with-stats the statistics rows are read, not recomputed)")
        p.add_argument("--metrics", help="comma-separated subset of the file's metrics")
        p.add_argument("--human", action="append",
                       help="rated quality to compare like a metric (repeatable or comma-separated)")
        p.add_argument("--system-human", metavar="TSV",
                       help="published human system means: 'system<TAB>value' lines, an optional header "
                            "line naming the quality (e.g. DSTC6's human_evaluation_results.txt)")
        p.add_argument("--baseline", metavar="SYSTEM",
                       help="test every system against this one (default: all pairs"
                            + ("; the report uses the first system)" if not table else ")"))
        test = p.add_mutually_exclusive_group()
        test.add_argument("--paired-bs", action="store_true",
                          help="paired bootstrap resampling (default; 1,000 resamples)")
        test.add_argument("--paired-ar", action="store_true",
                          help="approximate randomization (10,000 trials)")
        p.add_argument("--n-resamples", type=_positive, default=None,
                       help="bootstrap resamples / AR trials (default 1000 / 10000, as sacreBLEU)")
        p.add_argument("--seed", type=int, default=DEFAULT_SEED,
                       help=f"resampling seed (default {DEFAULT_SEED}, sacreBLEU's)")
        p.add_argument("--pair-by", default="auto", choices=list(PAIR_BY),
                       help="how items pair across systems for the paired tests: item (an `item` "
                            "field), dialogue (`dialogue_id` + `turn`), id, context (context and "
                            "references), position; auto (default): item, else dialogue_id + "
                            "turn, else ids shared across systems, else context")

    p = sub.add_parser("compare", help="compare systems: corpus scores with 95%% CIs and "
                                       "paired significance tests")
    common(p, table=True)
    p.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    p.add_argument("--report", metavar="PATH",
                   help="also write a report: .html (self-contained), .json, .tex, .csv or markdown")
    add_table_format(p)
    _pairwise_arguments(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("report", help="write a self-contained HTML report of a scores file")
    common(p, table=False)
    p.add_argument("-o", "--output", required=True, help="the report (.html)")
    p.add_argument("--title", help="the report's title")
    p.add_argument("--n-boot", type=int, default=1000,
                   help="bootstrap resamples for correlation CIs (default 1000)")
    p.add_argument("--probes", metavar="FILE", help="add a behavioural probes section from the "
                   "JSON `dialeval probe -o` wrote")
    p.add_argument("--pairwise", metavar="FILE", help="add a pairwise verdicts section from the JSON "
                   "`dialeval compare --pairwise --pairwise-out` wrote")
    p.set_defaults(func=cmd_report)


def _pairwise_arguments(p) -> None:
    """`compare --pairwise` and the pairwise judge's options (generated from its constructor:
    the same --judge-* flags as the `judge` metric)."""
    from dialeval.metrics.judge.pairwise import PairwiseJudge

    from .options import add_estimator_flags

    group = p.add_argument_group("pairwise verdicts (--pairwise)")
    group.add_argument("--pairwise", action="store_true",
                       help="also ask a judge which of two systems' replies to each shared item is better, "
                            "both orders: win/tie/loss per pair, win rates with bootstrap CIs, a Bradley-Terry "
                            "ranking, the position bias; with --human, agreement with human preferences")
    group.add_argument("--pairwise-max-items", type=_positive, default=None, metavar="N",
                       help="judge a seeded sample of N shared items (default: all)")
    group.add_argument("--pairwise-seed", type=int, default=0, help="seed of that sample (default 0)")
    group.add_argument("--pairwise-systems", metavar="A,B,...",
                       help="the systems to compare (default: every system of the file)")
    group.add_argument("--pairwise-out", metavar="FILE.json",
                       help="write the verdicts as JSON (every comparison's probabilities included), "
                            "for `dialeval report --pairwise`")
    names = add_estimator_flags(group, PairwiseJudge)
    p.set_defaults(_pairwise_flags=names)


def _positive(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value
