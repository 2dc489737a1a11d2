"""Command line: parse arguments, call the library, print. No metric logic lives here.

Every command is a function `cmd_<name>(args)` registered in `build_parser`; a `DialevalError`
anywhere becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from dialeval.errors import DialevalError
from dialeval.version import __version__
from .options import add_scoring_flags, metric_options

DEFAULT_METRICS = "bleu1,bleu2,bleu3,bleu4,rouge_l,cider_d,cider"

# Modules that add command groups. Each may define `add_commands(subparsers)` (new
# sub-commands) and/or `add_train_commands(subparsers)` (`dialeval train WHAT ...`). Metric
# options need no module: their flags are generated from the metrics' constructors
# (`cli/options.py`). Modules must import nothing heavy at top level.
CLI_EXTENSIONS: list[str] = [
    "dialeval.cli.meta",
    "dialeval.cli.embedding",
    "dialeval.cli.lm",
    "dialeval.cli.augment",
    "dialeval.cli.amfm",
]


DESCRIPTION = """\
dialeval: automatic evaluation of dialogue responses, and how well each metric agrees with
human judgments.

Score responses with word-overlap (BLEU, METEOR, ROUGE-L, CIDEr), embedding, AM-FM and
language-model metrics; correlate the scores with human ratings at turn, dialogue or system
level (with confidence intervals and significance tests); measure how much the humans agree;
train the model-based metrics on your own corpus. Everything runs offline."""

EPILOG = """\
examples:
  dialeval score samples.jsonl --metrics bleu4,meteor,rouge_l -o scores.jsonl
  dialeval score --hyp system.txt --ref refs1.txt --ref refs2.txt
  dialeval correlate scores.jsonl --human overall
  dialeval datasets                      # the public human-rated sets it can load
  dialeval evaluate usr-tc ../shared/data/usr --metrics bleu2,rouge_l
  dialeval metrics                       # every metric and its options

`dialeval COMMAND --help` describes a command's options. Input errors are reported on one
line (file:line: field) with exit status 2."""


def _split_metrics(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise DialevalError("--metrics names no metric")
    return names


def load_input(args) -> list:
    """Samples from INPUT or from --hyp/--ref parallel files."""
    from dialeval.data.readers import read_parallel, read_samples

    if args.hyp:
        if args.input:
            raise DialevalError("give either INPUT or --hyp/--ref files, not both")
        return read_parallel(args.hyp, args.ref or [], systems=args.system or None)
    if not args.input:
        raise DialevalError("no input: give INPUT (JSONL/CSV/TSV) or --hyp FILE --ref FILE ...")
    samples = read_samples(args.input, fmt=args.format)
    if args.system:
        if len(args.system) != 1:
            raise DialevalError("--system takes one name with INPUT")
        for sample in samples:
            if sample.system is None:
                sample.system = args.system[0]
    return samples


def system_table(result, table_format: str = "plain", width: int | None = None) -> str:
    """Per-system corpus values (and an `(all)` row when there are several systems).

    One row per system and a column per metric; when that is wider than `width` (default:
    the terminal's, 120 in a pipe) and there are more metrics than systems, the table is
    transposed: a row per metric and a column per system, which stays readable with many
    metrics."""
    import shutil

    from dialeval.data.writers import format_table

    header = ["system", "n"] + result.metrics
    counts: dict[str, int] = {}
    for s in result.samples:
        key = s.system if s.system is not None else "all"
        counts[key] = counts.get(key, 0) + 1
    rows = [[system, counts[system]] + [vals[m] for m in result.metrics]
            for system, vals in result.systems.items()]
    if len(rows) > 1:
        rows.append(["(all)", len(result.samples)] + [result.corpus[m] for m in result.metrics])
    table = format_table(header, rows, fmt=table_format)
    if width is None:
        width = shutil.get_terminal_size((120, 24)).columns
    too_wide = max(len(line) for line in table.splitlines()) > width
    if too_wide and len(result.metrics) > len(rows):
        t_header = ["metric"] + [str(r[0]) for r in rows]
        t_rows = [["n"] + [r[1] for r in rows]]
        t_rows += [[m] + [r[2 + k] for r in rows] for k, m in enumerate(result.metrics)]
        return format_table(t_header, t_rows, fmt=table_format)
    return table


def cmd_score(args) -> int:
    from dialeval.data.writers import atomic_write, write_json, write_jsonl
    from dialeval.scoring import score

    samples = load_input(args)
    result = score(samples, _split_metrics(args.metrics), refs_mode=args.refs_mode,
                   tokenizer=args.tokenize, **metric_options(args))
    if args.output:
        write_jsonl(args.output, result.records())
    if args.report:
        if args.report.endswith(".json"):
            write_json(args.report, result.summary())
        else:
            with atomic_write(args.report) as handle:
                handle.write(system_table(result, "markdown") + "\n\n")
                handle.writelines(f"- `{m}`: `{result.signatures[m]}`\n" for m in result.metrics)
    if args.json:
        print(json.dumps(result.summary(), ensure_ascii=False))
    else:
        print(system_table(result, args.table_format))
        print()
        for m in result.metrics:
            print(f"{m}: {result.signatures[m]}")
    return 0


def cmd_metrics(args) -> int:
    from dialeval.metrics.registry import list_metrics
    from dialeval.metrics.base import REFS_MODES
    from dialeval.text.tokenizers import list_tokenizers

    specs = list_metrics()
    if args.json:
        print(json.dumps([{"name": s.name, "family": s.family, "description": s.description,
                           "options": list(s.options), "extra": s.extra} for s in specs]))
        return 0
    width = max(len(s.name) for s in specs)
    for spec in specs:
        extra = f" [extra: {spec.extra}]" if spec.extra else ""
        print(f"{spec.name.ljust(width)}  {spec.family:10s} {spec.description}{extra}")
        opts = [o for o in spec.options]
        print(f"{'':{width}}  {'':10s} options: {', '.join(opts)}")
    print()
    print(f"reference modes (--refs-mode): {', '.join(REFS_MODES)}")
    print("tokenizers (--tokenize): " + "; ".join(f"{k}: {v}" for k, v in list_tokenizers().items()))
    return 0


def add_score_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("score", help="score responses with metrics")
    p.add_argument("input", nargs="?", help="JSONL, CSV or TSV file of samples")
    p.add_argument("--format", choices=["jsonl", "csv", "tsv"], help="input format (default: by extension)")
    p.add_argument("--hyp", action="append", help="hypothesis file, one response per line (repeatable: one per system)")
    p.add_argument("--ref", action="append", help="reference file, line-aligned with --hyp (repeatable)")
    p.add_argument("--system", action="append", help="system name (one per --hyp; default: file stem)")
    p.add_argument("--metrics", default=DEFAULT_METRICS, help=f"comma-separated (default: {DEFAULT_METRICS})")
    p.add_argument("-o", "--output", help="per-sample JSONL output")
    p.add_argument("--json", action="store_true", help="print one JSON summary instead of a table")
    p.add_argument("--report", help="also write the aggregate report: .json, or a markdown table otherwise")
    p.add_argument("--table-format", default="plain", choices=["plain", "markdown"],
                   help="table style (default plain)")
    add_scoring_flags(p)
    p.set_defaults(func=cmd_score)
    return p


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(prog="dialeval", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"dialeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    add_score_parser(sub)
    p = sub.add_parser("metrics", help="list metrics and their options")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=cmd_metrics)
    train = sub.add_parser("train", help="train a model-based metric's artifact")
    train_sub = train.add_subparsers(dest="what", required=True)
    for name in CLI_EXTENSIONS:
        module = importlib.import_module(name)
        if hasattr(module, "add_commands"):
            module.add_commands(sub)
        if hasattr(module, "add_train_commands"):
            module.add_train_commands(train_sub)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Library warnings reach a CLI user as one `dialeval: warning:` line (no source lines)."""
    print(f"dialeval: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.func(args)
    except DialevalError as exc:
        print(f"dialeval: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dialeval: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


