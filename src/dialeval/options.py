"""Options are declared once: as constructor parameters.

A metric's (or estimator's) keyword arguments are its options. Their type and default come
from the signature, their help from an `Options:` block in the class docstring
(`name: what it does`), their choices from a `Literal[...]` annotation. The command line builds
its flags from these specs, the registry validates keyword options against them, and an
unknown name is refused with the closest valid one, so a typo never passes silently.
"""

from __future__ import annotations

import inspect
import re
import typing
from dataclasses import dataclass
from typing import Any, Iterable

from .errors import DialevalError

_MISSING = object()


@dataclass(frozen=True)
class OptionSpec:
    name: str
    type: type                      # str, int, float or bool
    default: Any
    help: str = ""
    choices: tuple[Any, ...] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def closest_hint(name: str, valid: Iterable[str]) -> str:
    """'; did you mean X?' for the closest valid name (case-insensitive), or ''."""
    valid = list(valid)
    lowered = {v.lower(): v for v in valid}
    if name.lower() in lowered:
        return f"; did you mean {lowered[name.lower()]!r}?"
    import difflib   # only when a name is misspelt

    match = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean {lowered[match[0]]!r}?" if match else ""


def docstring_options(cls: type) -> dict[str, str]:
    """`name: help` lines of the `Options:` blocks in the docstrings of `cls` and its bases."""
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        doc = inspect.getdoc(klass) if "__doc__" in vars(klass) else None
        if not doc or "Options:" not in doc:
            continue
        block = doc.split("Options:", 1)[1]
        current, indent = None, None
        for line in block.splitlines()[1:]:
            if not line.strip():
                if current is None:
                    continue
                break
            m = re.match(r"^(\s+)(\w+):\s*(.*)$", line)
            # a line indented deeper than the options is a continuation, even one that opens
            # with "word:" (e.g. "hred:DIR")
            if m and (indent is None or len(m.group(1)) <= indent):
                indent = len(m.group(1))
                current = m.group(2)
                found[current] = m.group(3).strip()
            elif current is not None and line.startswith(" "):
                found[current] += " " + line.strip()
            else:
                break
    return found


def _base_type(annotation: Any) -> tuple[type, tuple[Any, ...] | None]:
    """(str/int/float/bool, choices) of an annotation such as `int | None` or `Literal['a', 'b']`."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        args = typing.get_args(annotation)
        return type(args[0]), tuple(args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for arg in typing.get_args(annotation):
            if arg is type(None):
                continue
            return _base_type(arg)
    if annotation in (int, float, bool, str):
        return annotation, None
    return str, None


def constructor_options(cls: type, exclude: Iterable[str] = ()) -> dict[str, OptionSpec]:
    """The keyword parameters of `cls.__init__` as option specs."""
    exclude = set(exclude)
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # an annotation that cannot be evaluated: fall back to the defaults' types
        hints = {}
    helps = docstring_options(cls)
    specs: dict[str, OptionSpec] = {}
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name == "self" or p.name in exclude or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = None if p.default is inspect.Parameter.empty else p.default
        if p.name in hints:
            kind, choices = _base_type(hints[p.name])
        else:
            kind, choices = (type(default) if isinstance(default, (int, float, bool, str)) else str), None
        specs[p.name] = OptionSpec(p.name, kind, default, helps.get(p.name, ""), choices)
    return specs


def check_options(given: Iterable[str], valid: Iterable[str], what: str = "option") -> None:
    valid = set(valid)
    for name in given:
        if name not in valid:
            raise DialevalError(f"unknown {what} {name!r}{closest_hint(name, valid)}")


def coerce(spec: OptionSpec, value: Any) -> Any:
    """A value given as text (e.g. `--option k=v` or a config file) in the option's type."""
    if value is None or not isinstance(value, str) or spec.type is str:
        return value
    try:
        if spec.type is bool:
            low = value.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        return spec.type(value)
    except ValueError:
        raise DialevalError(f"option {spec.name}: expected {spec.type.__name__}, got {value!r}") from None
