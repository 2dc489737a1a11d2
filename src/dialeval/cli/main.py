"""Command line: parse arguments, call the library, print. No metric logic lives here.

Every command is a function `cmd_<name>(args)` registered in `build_parser`; a `DialevalError`
anywhere becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

from dialeval.errors import DialevalError
from dialeval.metrics.registry import DEFAULT_METRICS  # one list for the CLI and the API
from dialeval.version import __version__
from .options import add_scoring_flags, metric_options

# Modules that add command groups. Each may define `add_commands(subparsers)` (new
# sub-commands) and/or `TRAIN_COMMANDS` (declared `models.estimator.TrainCommand`s, from which
# `cli/train.py` generates `dialeval train NAME ...` / `dialeval fit NAME ...`). Metric options
# need no module: their flags are generated from the metrics' constructors (`cli/options.py`).
# An installed package adds training commands through the `dialeval.train` entry-point group
# (docs/plugins.md). Modules must import nothing heavy at top level.
CLI_EXTENSIONS: list[str] = [
    "dialeval.cli.meta",
    "dialeval.cli.embedding",
    "dialeval.cli.lm",
    "dialeval.cli.augment",
    "dialeval.cli.amfm",
    "dialeval.cli.report",
    "dialeval.cli.learned",
    "dialeval.cli.mme",
    "dialeval.cli.compose",
    "dialeval.cli.models",
    "dialeval.cli.probe",
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
  dialeval evaluate usr-tc $DATA/usr --metrics bleu2,rouge_l
  dialeval metrics                       # every metric and its options

`dialeval COMMAND --help` describes a command's options. Input errors are reported on one
line (file:line: field) with exit status 2."""


def _split_metrics(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise DialevalError("--metrics names no metric")
    return names


def input_source(args):
    """Where `score` reads: INPUT (a file or `-`) or --hyp/--ref parallel files; re-readable."""
    from dialeval.engine.stream import Source

    if args.hyp:
        if args.input:
            raise DialevalError("give either INPUT or --hyp/--ref files, not both")
        for path in list(args.hyp) + list(args.ref or []):
            _need_file(path)
        return Source(hyp=args.hyp, ref=args.ref or [], systems=args.system or None)
    if not args.input:
        raise DialevalError("no input: give INPUT (JSONL/JSON/CSV/TSV, or - for standard input) "
                            "or --hyp FILE --ref FILE ...")
    if args.system and len(args.system) != 1:
        raise DialevalError("--system takes one name with INPUT")
    from dialeval.data.readers import input_format

    input_format(args.input, args.format)           # an unknown format fails before any work
    _need_file(args.input)
    return Source(path=args.input, fmt=args.format, default_system=args.system[0] if args.system else None)


def _need_file(path: str) -> None:
    """An input that is not there is one located line before anything else looks at it."""
    from dialeval.data.readers import STDIN
    from dialeval.errors import InputError

    if path != STDIN and not os.path.isfile(path):
        raise InputError("no such file" if not os.path.exists(path) else "not a file", path=path)


def system_table(result, table_format: str = "plain", width: int | None = None) -> str:
    """Per-system corpus values (the table lives in `dialeval.report.tables`; transposed when
    too wide for the terminal and there are more metrics than systems)."""
    from dialeval.report.tables import system_table as _system_table

    return _system_table(result, table_format, width=width)


def cmd_score(args) -> int:
    import tempfile

    from dialeval.engine import make_backend, make_plan
    from dialeval.engine.stream import stream_score

    from .report import report_kind

    source = input_source(args)
    notes: list[str] = []
    plan = make_plan(_split_metrics(args.metrics), refs_mode=args.refs_mode, tokenizer=args.tokenize,
                     chunk_size=args.chunk_size, notes=notes, **metric_options(args))
    for note in notes:
        print(f"dialeval: note: {note}", file=sys.stderr)
    # The HTML report resamples corpus statistics: it reads the rows back, with their stats.
    html = bool(args.report) and report_kind(args.report) == "html"
    with_stats = args.with_stats or html
    output = args.output
    scratch = None
    if html and not output:
        scratch = tempfile.TemporaryDirectory(prefix="dialeval-report-")
        output = os.path.join(scratch.name, "scores.jsonl")
    backend = make_backend(args.backend, workers=args.workers, scheduler=args.scheduler)
    try:
        result = stream_score(plan, source, backend, output, resume=args.resume, with_stats=with_stats,
                              say=lambda msg: print(f"dialeval: {msg}", file=sys.stderr))
    finally:
        backend.close()
    for note in result.notes:
        print(f"dialeval: note: {note}", file=sys.stderr)
    try:
        if args.report:
            write_score_report(args, result, output)
    finally:
        if scratch is not None:
            scratch.cleanup()
    if args.json:
        print(json.dumps(result.summary(), ensure_ascii=False))
    else:
        from dialeval.report.tables import comment_lead

        print(system_table(result, args.table_format))
        print()
        for m in result.metrics:   # comment lines in CSV (`# `) and LaTeX (`% `)
            print(f"{comment_lead(args.table_format)}{m}: {result.signatures[m]}")
    return 0


def write_score_report(args, result, rows_file: str | None = None) -> None:
    """`--report PATH`: by extension, the HTML report (from the rows written to `rows_file`, with
    their statistics), the JSON summary, or the system table (LaTeX for .tex, CSV for .csv,
    Markdown otherwise) with the signatures."""
    from dialeval.data.writers import write_json
    from dialeval.report.tables import system_table as table

    from .report import _inputs, report_kind, write_html_report, write_tables

    kind = report_kind(args.report)
    if kind == "html":
        from dialeval.meta.evaluate import read_scores

        inputs = _inputs([args.input] + list(args.hyp or []) + list(args.ref or []))
        write_html_report(args.report, read_scores(rows_file), signatures=result.signatures,
                          inputs=inputs, title="dialeval score report")
    elif kind == "json":
        write_json(args.report, result.summary())
    else:
        write_tables(args.report, [("systems", table(result, kind))], kind,
                     [f"{m}: {result.signatures[m]}" for m in result.metrics])


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


def add_score_parser(sub, metric_flags: bool = True) -> argparse.ArgumentParser:
    p = sub.add_parser("score", help="score responses with metrics")
    p.add_argument("input", nargs="?", help="JSONL (or a JSON array), CSV or TSV file of samples; - reads standard input")
    p.add_argument("--format", choices=["jsonl", "json", "csv", "tsv"],
                   help="input format (default: by extension; JSON lines for -)")
    p.add_argument("--hyp", action="append", help="hypothesis file, one response per line (repeatable: one per system)")
    p.add_argument("--ref", action="append", help="reference file, line-aligned with --hyp (repeatable)")
    p.add_argument("--system", action="append", help="system name (one per --hyp; default: file stem)")
    p.add_argument("--metrics", default=DEFAULT_METRICS,
                   help=f"comma-separated, or all (every metric that can run with the given options; "
                        f"default: {DEFAULT_METRICS})")
    p.add_argument("-o", "--output", help="per-sample JSONL output, written as shards finish "
                                          "(to OUTPUT.partial, renamed at the end)")
    engine = p.add_argument_group("engine")
    engine.add_argument("--resume", action="store_true",
                        help="continue a killed run of the same command from its last finished shard")
    engine.add_argument("--backend", default="local", choices=["local", "dask"],
                        help="where shards are scored (dask needs the dask extra)")
    engine.add_argument("--workers", type=int, default=None,
                        help="Dask workers of a local cluster (--backend dask; default 1)")
    engine.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="address of an existing Dask scheduler (--backend dask)")
    engine.add_argument("--chunk-size", type=int, default=None, metavar="N",
                        help="samples per shard (default 5000); any value gives the same numbers")
    p.add_argument("--json", action="store_true", help="print one JSON summary instead of a table")
    p.add_argument("--report", help="also write a report: .html (self-contained HTML), .json (summary), "
                   ".tex (LaTeX table), .csv, or a Markdown table otherwise")
    p.add_argument("--with-stats", action="store_true",
                   help="with -o: also write each sample's response, references and the statistics "
                        "rows of corpus-statistic metrics (BLEU, METEOR), which `compare` and "
                        "`report` need to recompute corpus scores on resamples")
    p.add_argument("--table-format", default="plain", choices=["plain", "markdown", "latex", "csv"],
                   help="table format (--format names the input format here)")
    add_scoring_flags(p, metric_flags=metric_flags)
    p.set_defaults(func=cmd_score)
    return p


class Parser(argparse.ArgumentParser):
    """Every dialeval parser: option names are never abbreviated (argparse would silently take
    `--refs-mod` as `--refs-mode`), so a misspelt option is an error naming the closest one.
    Sub-command parsers inherit the class (argparse builds them with the parent's class)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        """argparse's refusals as one line too (not the usage block), exit status 2; a misspelt
        command or choice names the closest valid one, as a misspelt option does."""
        self.exit(2, f"dialeval: error: {_with_hint(message)} (see `{self.prog} --help`)\n")


def _with_hint(message: str) -> str:
    """argparse's "argument X: invalid choice: 'v' (choose from 'a', 'b')" with "did you mean"
    (a command: "unknown command 'v'; did you mean 'score'?", the list kept for the rest)."""
    import re

    from dialeval.options import closest_hint

    found = re.match(r"argument (.+?): invalid choice: '(.*)' \(choose from (.*)\)$", message)
    if found is None:
        return message
    where, value, listed = found.groups()
    choices = re.findall(r"'([^']*)'", listed) or [c.strip() for c in listed.split(",")]
    hint = closest_hint(value, choices)
    if where == "command":
        return f"unknown command {value!r}{hint or '; the commands: ' + ', '.join(choices)}"
    return f"argument {where}: invalid choice: {value!r}{hint} (choose from {listed})"


def build_parser(only_score: bool = False, metric_flags: bool = True) -> argparse.ArgumentParser:
    """The whole command line. `only_score` builds the `score` command alone and `metric_flags`
    False leaves out its generated metric flags: `main` uses that lighter parser when the
    command line can be parsed without them (see `_light_parser`)."""
    import importlib

    parser = Parser(prog="dialeval", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"dialeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    score = add_score_parser(sub, metric_flags=metric_flags)
    if only_score:
        parser.score_parser = score
        return parser
    p = sub.add_parser("metrics", help="list metrics and their options")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=cmd_metrics)
    from .train import add_train_command, group_subparsers, plugin_commands

    group_subparsers(sub, "train")
    built_in = []
    for name in CLI_EXTENSIONS:
        module = importlib.import_module(name)
        if hasattr(module, "add_commands"):
            module.add_commands(sub)
        for command in getattr(module, "TRAIN_COMMANDS", ()):
            add_train_command(sub, command)
            built_in.append(command)
    for command in plugin_commands(built_in):
        add_train_command(sub, command)
    return parser


def _command_parser(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The sub-command's own parser (for naming the closest valid option)."""
    found = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                found = _command_parser(chosen, args)
    return found


def _unknown_arguments(parser: argparse.ArgumentParser, args, extra: list[str]) -> int:
    from dialeval.options import closest_hint

    command = _command_parser(parser, args)
    flags = [s for a in command._actions for s in a.option_strings if s.startswith("--")]
    first = extra[0]
    if first.startswith("-"):
        name = first.split("=", 1)[0]
        message = f"unknown option {name}{closest_hint(name, flags)}"
    else:
        message = f"unexpected argument {first!r}"
    print(f"dialeval: error: {message} (see `dialeval {getattr(args, 'command', '')} --help`)",
          file=sys.stderr)
    return 2


# argument dests that name something a command writes
OUTPUT_ARGS = ("output", "report", "plot", "failures")


def check_outputs(parser: argparse.ArgumentParser, args) -> None:
    """Every output the command line names must be writable before the work starts (a run
    that fails at the end has wasted the work and may leave a half-written file). Whether an
    argument names a folder is read from its own help (`metavar` DIR, or "folder" in its text)."""
    from dialeval.data.writers import check_writable

    command = _command_parser(parser, args)
    for action in command._actions:
        if action.dest not in OUTPUT_ARGS:
            continue
        value = getattr(args, action.dest, None)
        if not isinstance(value, str) or not value:
            continue
        folder = action.metavar == "DIR" or "folder" in (action.help or "")
        check_writable(value, folder=folder, what=action.option_strings[-1] if action.option_strings else action.dest)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Library warnings reach a CLI user as one `dialeval: warning:` line (no source lines)."""
    print(f"dialeval: warning: {message}", file=sys.stderr)


def _light_parser(argv: Sequence[str] | None) -> argparse.ArgumentParser | None:
    """For `dialeval score` whose every --option is one of score's own (not a generated metric
    flag): a parser of that command alone, without the metric flags. Generating those flags
    reads every registered metric's constructor, which imports every family's modules; that is
    most of the start-up of a short run. The parse gives what the full parser gives (exact flag
    names only, metric flags default to None), and anything else goes to the full parser."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command != "score" or "-h" in argv or "--help" in argv or "--" in argv:
        return None
    parser = build_parser(only_score=True, metric_flags=False)
    own = {s for a in parser.score_parser._actions for s in a.option_strings}
    if any(a.startswith("--") and a.split("=", 1)[0] not in own for a in argv):
        return None
    return parser


def _runs_without_blas(argv: Sequence[str] | None) -> bool:
    """Whether this command line is a `score` whose every metric makes no BLAS call
    (`MetricSpec.blas`); read from the raw arguments because the answer must be known before
    anything imports numpy. Anything unclear (another command, `all`, an unknown name) is False."""
    from dialeval.metrics.registry import REGISTRY

    argv = list(sys.argv[1:] if argv is None else argv)
    if next((a for a in argv if not a.startswith("-")), None) != "score":
        return False
    text = DEFAULT_METRICS
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if len(flag) >= 6 and "--metrics".startswith(flag):  # a prefix is refused later anyway
            text = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
    names = [m.strip() for m in text.split(",") if m.strip()]
    return bool(names) and all(n in REGISTRY and not REGISTRY[n].blas for n in names)


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    if _runs_without_blas(argv):
        from dialeval.models.threads import single_blas_thread

        single_blas_thread()
    parser = _light_parser(argv)
    args = extra = None
    if parser is not None:
        args, extra = parser.parse_known_args(argv)
    if parser is None or extra:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
    if extra:
        return _unknown_arguments(parser, args, extra)
    import dialeval.progress

    dialeval.progress.ANNOUNCE = True   # a command line says which models it loads
    try:
        check_outputs(parser, args)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.func(args)
    except DialevalError as exc:
        print(f"dialeval: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:   # an optional package imported where no site names it yet
        from dialeval.optional import missing

        if getattr(exc, "name", None) is None:
            raise
        print(f"dialeval: error: {missing(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        resumable = getattr(args, "command", None) == "score" and getattr(args, "output", None)
        print("dialeval: interrupted" + ("; the finished shards are kept: run the same command with "
                                         "--resume to continue" if resumable else ""), file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


