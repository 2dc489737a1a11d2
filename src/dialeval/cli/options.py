"""Metric options as command-line flags, generated from the metrics' constructors.

Every option any registered metric declares (`dialeval.options`) becomes one `--flag` in one
group per family, on every command that scores (`score`, `evaluate`, `fit`), so the commands
take the same options and a new metric's options appear without touching the CLI. The flags
default to None: a metric not given an option keeps its own default.
"""

from __future__ import annotations

import argparse

from dialeval.errors import DialevalError

# options with a dedicated, hand-written flag on every scoring command
SHARED = ("refs_mode", "tokenizer")
# integer options that count something a run cannot do with none of (texts per batch, tokens
# per batch, workers): 0 or a negative number is refused by the flag, the same for every
# metric, instead of each constructor checking (or not: a batch of 0 texts never ends)
COUNT_SUFFIXES = ("_batch_size", "_token_budget", "_workers", "_concurrency")


def at_least_one(text: str) -> int:
    """A count flag's value: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_metric_flags(parser: argparse.ArgumentParser) -> list[str]:
    """Add the generated flags; returns their `dest` names (what `metric_options` collects)."""
    from dialeval.metrics.registry import REGISTRY

    seen: dict[str, str] = {}
    groups: dict[str, argparse._ArgumentGroup] = {}
    for spec in REGISTRY.values():
        try:
            options = spec.option_specs()
        except DialevalError:  # a family whose dependencies are missing adds no flags
            continue
        for name, opt in options.items():
            if name in SHARED or name in seen:
                continue
            seen[name] = spec.family
            group = groups.get(spec.family)
            if group is None:
                group = groups[spec.family] = parser.add_argument_group(f"{spec.family} metric options")
            kwargs: dict = {"dest": name, "default": None,
                            "help": argparse_text((opt.help or name.replace("_", " ")) +
                                                  ("" if opt.default is None or "default" in opt.help
                                                   else f" (default: {opt.default})"))}
            if opt.type is bool:
                kwargs["action"] = argparse.BooleanOptionalAction
            else:
                kwargs["type"] = at_least_one if opt.type is int and name.endswith(COUNT_SUFFIXES) \
                    else opt.type
                kwargs["metavar"] = name.split("_")[-1].upper() if opt.choices is None else None
                if opt.choices is not None:
                    kwargs["choices"] = list(opt.choices)
                    del kwargs["metavar"]
            group.add_argument(opt.flag, **kwargs)
    return list(seen)


def argparse_text(text: str) -> str:
    """A docstring's help as argparse prints it: a `%` in prose ("6% less time") is a format
    directive to argparse, which would crash `--help`."""
    return text.replace("%", "%%")


def add_scoring_flags(parser: argparse.ArgumentParser, metric_flags: bool = True) -> None:
    """--refs-mode, --tokenize and every generated metric flag (none with `metric_flags` False:
    the CLI's light parser for command lines that give no metric option)."""
    from dialeval.metrics.base import REFS_MODES

    parser.add_argument("--refs-mode", default="multi", choices=list(REFS_MODES),
                        help="how several references combine (default: multi, the original rule)")
    parser.add_argument("--tokenize", default=None,
                        help="tokenizer for every word-overlap metric: whitespace, space, ptb-lower, or for "
                             "text without spaces char, zh, intl as sacreBLEU's (default: each metric's "
                             "original; `dialeval metrics` describes them)")
    parser.set_defaults(_metric_flags=add_metric_flags(parser) if metric_flags else [])


def metric_options(args: argparse.Namespace) -> dict:
    """The generated flags the user gave (None = not given)."""
    return {name: getattr(args, name) for name in getattr(args, "_metric_flags", [])
            if getattr(args, name, None) is not None}


def add_estimator_flags(parser, cls: type, names: list[str] | None = None, *, exclude=(),
                        aliases: dict[str, list[str]] | None = None,
                        defaults: dict | None = None) -> list[str]:
    """Training flags for the constructor parameters of estimator `cls` (all of them, or
    `names`, less `exclude`): type, default and choices from the signature, help from the
    class's `Options:` docstring, so a default or a description is written once, where the
    estimator declares it. `aliases` keeps older flag spellings working (parameter -> extra
    flags, e.g. finetune_minutes -> --max-minutes); `defaults` overrides a default where the
    command's differs from the constructor's. Booleans get --X / --no-X. Returns the `dest`
    names, for `estimator_kwargs`."""
    from dialeval.options import constructor_options

    specs = constructor_options(cls)
    chosen = [n for n in (names or list(specs)) if n not in set(exclude)]
    aliases = aliases or {}
    defaults = defaults or {}
    for name in chosen:
        opt = specs[name]
        default = defaults.get(name, opt.default)
        text = opt.help or name.replace("_", " ")
        if default is not None and "default" not in text:
            text += f" (default: {default})"
        flags = [opt.flag, *[a for a in aliases.get(name, []) if a != opt.flag]]
        kwargs: dict = {"dest": name, "default": default, "help": argparse_text(text)}
        if opt.type is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = opt.type
            if opt.choices is not None:
                kwargs["choices"] = list(opt.choices)
            else:
                kwargs["metavar"] = name.split("_")[-1].upper()
        parser.add_argument(*flags, **kwargs)
    return chosen


def estimator_kwargs(args: argparse.Namespace, names: list[str]) -> dict:
    """The constructor keyword arguments that `add_estimator_flags` flags hold (a flag shared
    by two estimators of one command and not given is absent: each keeps its own default)."""
    return {name: getattr(args, name) for name in names if hasattr(args, name)}


def option_set_kwargs(args: argparse.Namespace, key: str) -> dict:
    """The constructor keyword arguments of a command's `Options(key=...)` set (e.g. LoRA's on
    `train lm`), by parameter name whatever their flags are called."""
    dests = getattr(args, "_option_sets", {}).get(key, {})
    return {name: getattr(args, dest) for name, dest in dests.items() if hasattr(args, dest)}


def add_command_arguments(parser: argparse.ArgumentParser, items, estimator: type | None) -> None:
    """A declared command's arguments (`models.estimator.TrainCommand.arguments`), in order:
    `Argument`s as written, each `Options` set as generated flags, callables called with the
    parser. A flag that two sets produce is added once, where it first appears, with no
    default (each estimator keeps its own when it is not given) and every differing default
    in its help. Sets `_estimator_flags` (the command's own set: `estimator_kwargs`) and
    `_option_sets` (every set's parameter -> dest: `option_set_kwargs`)."""
    from dialeval.models.commands import Argument, Options, resolve
    from dialeval.options import constructor_options

    planned: list[tuple[Options, list[tuple[str, str, object, object]]]] = []
    owners: dict[str, list[tuple[int, str, object]]] = {}
    for item in items:
        if not isinstance(item, Options):
            continue
        cls = resolve(item.estimator) if item.estimator is not None else estimator
        specs = constructor_options(cls)
        chosen = [n for n in (item.names or list(specs)) if n not in set(item.exclude)]
        entries = []
        for name in chosen:
            spec = specs[name]
            flag = item.flags.get(name, spec.flag)
            default = item.defaults.get(name, spec.default)
            entries.append((name, flag, spec, default))
            owners.setdefault(flag, []).append((len(planned), name, default))
        planned.append((item, entries))

    groups: dict[str, argparse._ArgumentGroup] = {}

    def container(title: str | None):
        if title is None:
            return parser
        if title not in groups:
            groups[title] = parser.add_argument_group(title)
        return groups[title]

    option_sets: dict[str, dict[str, str]] = {}
    dest_of: dict[str, str] = {}
    index = 0
    for item in items:
        if isinstance(item, Argument):
            container(item.group).add_argument(*item.flags, **item.options)
            continue
        if not isinstance(item, Options):
            item(parser)
            continue
        options, entries = planned[index]
        dests = option_sets.setdefault(options.key, {})
        for name, flag, spec, default in entries:
            sharing = owners[flag]
            if sharing[0][0] != index:                 # added by an earlier set: read its value
                dests[name] = dest_of[flag]
                continue
            dest = name if not options.key else flag.lstrip("-").replace("-", "_")
            dest_of[flag] = dests[name] = dest
            text = spec.help or name.replace("_", " ")
            notes = []
            if default is not None and "default" not in text and name not in options.switches:
                notes.append(f"default: {default}")
            for other, _, other_default in sharing[1:]:
                if other_default != default:
                    notes.append(f"with --{planned[other][0].key.replace('_', '-')}: {other_default}")
            if notes:
                text += f" ({'; '.join(notes)})"
            kwargs: dict = {"dest": dest, "help": argparse_text(text),
                            "default": argparse.SUPPRESS if len(sharing) > 1 else default}
            if spec.type is bool:
                kwargs["action"] = "store_true" if name in options.switches else argparse.BooleanOptionalAction
            else:
                kwargs["type"] = spec.type
                if spec.choices is not None:
                    kwargs["choices"] = list(spec.choices)
                else:
                    kwargs["metavar"] = name.split("_")[-1].upper()
            flags = [flag, *[a for a in options.aliases.get(name, []) if a != flag]]
            container(options.title).add_argument(*flags, **kwargs)
        index += 1
    parser.set_defaults(_estimator_flags=list(option_sets.get("", {})), _option_sets=option_sets)


def add_table_format(p, *, alias: bool = True) -> None:
    """`--table-format`, the one name every table-printing command gives this option (`score`'s
    `--format` names its input format). `--format`, the older name of the other commands, still
    works where that name is free, unlisted, so that scripts written for it keep running."""
    import argparse

    from dialeval.report.tables import TABLE_FORMATS

    p.add_argument("--table-format", dest="table_format", default="plain", choices=TABLE_FORMATS,
                   help="table format: plain, markdown, latex (a booktabs tabular) or csv")
    if alias:
        p.add_argument("--format", dest="table_format", default=argparse.SUPPRESS,
                       choices=TABLE_FORMATS, help=argparse.SUPPRESS)
