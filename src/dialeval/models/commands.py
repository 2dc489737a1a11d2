"""Training commands declared as data: what `dialeval train NAME` (or `fit NAME`) takes.

Kept apart from `estimator.py` (which imports numpy and the artifact store) because the
command line reads these declarations while it builds its parser, before it knows whether
anything heavy is needed. Plug-ins import them from `dialeval.models.estimator`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, Union


class Argument:
    """A training command's argument that is not a hyper-parameter (data to fit on, the folder
    to write, a switch of the command): argparse's `add_argument` arguments, kept as given so
    the declaration reads like the parser it becomes. `group` names the argument group it is
    listed under in `--help` (the same title as an `Options` puts them together)."""

    def __init__(self, *flags: str, group: str | None = None, **options: Any):
        self.flags = flags
        self.group = group
        self.options = options

    @property
    def dest(self) -> str:
        if "dest" in self.options:
            return self.options["dest"]
        long_flag = next((f for f in self.flags if f.startswith("--")), self.flags[0])
        return long_flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Options:
    """Where a training command lists an estimator's hyper-parameters as generated flags (type,
    default and choices from the constructor, help from its `Options:` block).

    `estimator` is the class or "module:Class" (None: the command's own). `names` / `exclude`
    choose the parameters; `flags` spells a parameter's flag where `--param-name` is not its
    name on this command (LoRA's `rank` is `--lora-rank`); `aliases` keeps older spellings;
    `defaults` overrides a constructor default on this command; `switches` are booleans given
    as a bare `--flag` (no `--no-flag`), as they always were. When two `Options` of one command
    produce the same flag, it is one flag that sets both, listed where it first appears; a
    value not given leaves each estimator its own default."""

    estimator: Any = None
    names: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    flags: Mapping[str, str] = field(default_factory=dict)
    aliases: Mapping[str, Sequence[str]] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    switches: tuple[str, ...] = ()
    title: str | None = None
    key: str = ""                       # name of this set on the parsed arguments ("" the command's own)


@dataclass(frozen=True)
class TrainCommand:
    """A training command, declared once: `dialeval <group> <name>`.

    `arguments` are `Argument`s, `Options` and callables that add arguments to the parser
    themselves (the scoring flags of `fit compose`), in the order `--help` lists them. `run` is
    "module:function", the function taking the parsed arguments and returning the exit status,
    for a command that truly differs (several estimators, or a search over them). Without it the
    command builds the estimator from its flags, calls its method `fit` (named here: a method
    that reads the command's data, such as `fit_corpus`) with every `Argument` but the output
    folder as keywords (and `checkpoint` / `say` where the method takes them), saves to
    `--output` and prints one JSON line: the folder and the estimator's `summary()`, if any."""

    name: str
    help: str
    estimator: Any = None               # the class or "module:Class"
    arguments: tuple[Union[Argument, Options, Callable[[Any], None]], ...] = (Options(),)
    run: str = ""
    group: str = "train"
    fit: str = "fit"


def resolve(target: Any) -> Any:
    """A "module:attribute" name, imported; anything else as it is."""
    if not isinstance(target, str):
        return target
    import importlib

    module, _, attribute = target.partition(":")
    value = importlib.import_module(module)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value
