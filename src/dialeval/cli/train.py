"""`dialeval train NAME` (and `dialeval fit NAME`), generated from declared training commands.

A command is a `models.estimator.TrainCommand`: the command modules name theirs in
`TRAIN_COMMANDS`, and an installed package adds its own through the `dialeval.train`
entry-point group (an Estimator subclass with `train_command`, or a `TrainCommand`). The
parser is built here from the declaration, the hyper-parameter flags from the estimator's
constructor (`cli/options.py::add_command_arguments`), so a trainable metric needs no parser
code of its own.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import warnings

from dialeval.plugins import PluginRegistry

GROUP_HELP = {"train": "train a model-based metric's artifact",
              "fit": "fit a combination of metrics on rated development data"}
ENTRY_POINTS = "dialeval.train"


def group_subparsers(sub, group: str):
    """The sub-parsers of command `group` (`train`, `fit`), creating the command on first use,
    so that every module adding a target to it shares one parser."""
    parser = sub.choices.get(group)
    if parser is None:
        parser = sub.add_parser(group, help=GROUP_HELP.get(group))
        return parser.add_subparsers(dest="what", required=True)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return parser.add_subparsers(dest="what", required=True)


def as_command(target, name: str | None = None):
    """A `TrainCommand` from a declaration or from an Estimator class carrying one (its
    `estimator` then defaults to the class); `name` renames it (an entry point's name)."""
    from dialeval.errors import DialevalError
    from dialeval.models.commands import TrainCommand

    if isinstance(target, TrainCommand):
        command = target
    else:
        command = getattr(target, "train_command", None)
        if not isinstance(command, TrainCommand):
            raise DialevalError(f"{target!r} declares no train_command")
        if command.estimator is None:
            command = dataclasses.replace(command, estimator=target)
    if name is not None and name != command.name:
        command = dataclasses.replace(command, name=name)
    return command


class TrainCommands(PluginRegistry):
    """The built-in training commands, then those installed packages declare."""

    what = "train command"

    def plugin_spec(self, name: str, target: str, origin: str):
        return _PluginCommand(name, target, origin)


@dataclasses.dataclass
class _PluginCommand:
    """An entry point, loaded when the parser is built (a package that fails to import costs
    a warning, not the command line)."""

    name: str
    target: str
    origin: str

    def load(self):
        from dialeval.models.commands import resolve

        try:
            return as_command(resolve(self.target), self.name)
        except Exception as exc:  # noqa: BLE001 - any failure of a third-party import
            warnings.warn(f"plug-in train command {self.name!r} ({self.origin}): cannot load "
                          f"{self.target} ({type(exc).__name__}: {exc}); ignored", stacklevel=2)
            return None


def plugin_commands(built_in) -> list:
    """The installed packages' training commands, in name order, after the built-in ones."""
    registry = TrainCommands(list(built_in), ENTRY_POINTS)
    names = {c.name for c in built_in}
    found = []
    for name in registry:
        if name in names:
            continue
        command = registry[name].load()
        if command is not None:
            found.append(command)
    return found


def add_train_command(sub, command) -> argparse.ArgumentParser:
    """The parser of one declared command, under its group."""
    from dialeval.models.commands import Argument, resolve

    from .options import add_command_arguments

    p = group_subparsers(sub, command.group).add_parser(command.name, help=command.help)
    items = tuple(command.arguments)
    if not command.run and not any(isinstance(a, Argument) and a.dest == "output" for a in items):
        items += (Argument("-o", "--output", required=True, help="model folder to write"),)
    estimator = resolve(command.estimator) if command.estimator is not None else None
    add_command_arguments(p, items, estimator)
    add_resume_arguments(p)
    p.set_defaults(func=_Runner(command, items))
    return p


def add_resume_arguments(p) -> None:
    """`--resume` and `--checkpoint-minutes`, which every training command takes (models.resume)."""
    g = p.add_argument_group("stopping and resuming")
    g.add_argument("--resume", action="store_true",
                   help="continue the run whose checkpoint is in OUTPUT.checkpoint/ (the same command and "
                        "arguments; the result is the same bytes as an uninterrupted run)")
    g.add_argument("--checkpoint-minutes", type=_positive_minutes, default=None, metavar="MINUTES",
                   help="minutes between checkpoints of a training loop (default: 5)")


def _positive_minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


def open_checkpoint(command_name: str, args, output: str | None):
    """The run's `TrainingCheckpoint` beside `output` (None without an output folder)."""

    from dialeval.models.resume import DEFAULT_MINUTES, TrainingCheckpoint, checkpoint_folder, run_identity

    if output is None:
        return None
    minutes = getattr(args, "checkpoint_minutes", None) or DEFAULT_MINUTES
    return TrainingCheckpoint(checkpoint_folder(output), run_identity(command_name, vars(args)),
                              every_seconds=60 * minutes, resume=bool(getattr(args, "resume", False)),
                              say=lambda m: print(f"dialeval: {m}", file=sys.stderr, flush=True)).open()


def run_resumable(command_name: str, args, output: str | None, run) -> int:
    """`run()` with the run's checkpoint on `args._checkpoint`: removed when the run succeeds,
    kept (and named, with the command that continues it) when it stops on Ctrl-C."""

    checkpoint = open_checkpoint(command_name, args, output)
    args._checkpoint = checkpoint
    try:
        status = run()
    except KeyboardInterrupt:
        if checkpoint is None:
            raise
        if not checkpoint.has_progress():
            checkpoint.finish()
            print("dialeval: interrupted before the first checkpoint: nothing to resume", file=sys.stderr)
            return 130
        print(f"dialeval: interrupted; the checkpoint is in {checkpoint.folder}: run the same command with "
              "--resume to continue", file=sys.stderr)
        return 130
    except BaseException:
        # a refused input or a failure before anything was saved leaves no folder that would
        # make the corrected command ask for --resume
        if checkpoint is not None and not checkpoint.has_progress():
            checkpoint.finish()
        raise
    if checkpoint is not None and status == 0:
        checkpoint.finish()
    return status


class _Runner:
    """`args.func` of a generated command: its declared `run`, or the plain fit-and-save."""

    def __init__(self, command, items):
        self.command = command
        self.items = items

    def __call__(self, args) -> int:
        from dialeval.backbones.runtime import check_device
        from dialeval.models.commands import resolve

        if getattr(args, "device", None) is not None:
            # a torch device that is not here stops every trainer before it reads its data
            args.device = check_device("device", args.device)
        name = f"{self.command.group} {self.command.name}"
        if self.command.run:
            return run_resumable(name, args, getattr(args, "output", None), lambda: resolve(self.command.run)(args))
        return run_resumable(name, args, getattr(args, "output", None),
                             lambda: default_run(self.command, self.items, args))


def default_run(command, items, args) -> int:
    """Build the estimator from its flags, call its `command.fit` method with the command's
    other arguments (and the run's checkpoint and a stderr logger where it takes them), save it,
    print `{"output": FOLDER, **summary()}` as one JSON line."""
    from dialeval.models.commands import Argument, resolve

    from .options import estimator_kwargs

    import inspect

    estimator = resolve(command.estimator)(**estimator_kwargs(args, args._estimator_flags))
    fit = getattr(estimator, command.fit)
    data = {a.dest: getattr(args, a.dest) for a in items if isinstance(a, Argument) and a.dest != "output"}
    takes = inspect.signature(fit).parameters
    if "checkpoint" in takes:
        data["checkpoint"] = getattr(args, "_checkpoint", None)
    if "say" in takes:
        from dialeval.progress import say

        data["say"] = say
    fit(**data)
    path = estimator.save(args.output)
    summary = estimator.summary() if hasattr(estimator, "summary") else {}
    print(json.dumps({"output": path, **summary}, default=str))
    return 0
