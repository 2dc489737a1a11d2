"""The documentation of `dialeval.score`, written from the registry rather than by hand.

The hand-kept list of metric options in `score`'s docstring had drifted (seven options
missing); every option is declared once, as a metric constructor's parameter with its help in
the class's `Options:` block, so the list is generated from those declarations. Reading them
imports every metric module (about a quarter of a second, numpy included), so it happens when
`dialeval.score` is first looked up, not when `dialeval` is imported.
"""

from __future__ import annotations

import textwrap

INTRO = "Metric options (each metric takes the ones it declares; an unknown name is an error " \
        "that names the closest valid one):"
# the paragraph of `scoring.score`'s docstring that this generated section replaces
STATIC_POINTER = "    Metric options: each metric takes"


def metric_options_section(indent: str = "    ") -> str:
    """One line per registered option: `name: help (the metrics that take it)`; a family's
    metrics are named by the family when all of them take it."""
    from .errors import DialevalError
    from .metrics.registry import REGISTRY

    takers: dict[str, list[str]] = {}
    helps: dict[str, str] = {}
    families: dict[str, list[str]] = {}
    unavailable: list[str] = []
    for spec in REGISTRY.values():
        families.setdefault(spec.family, []).append(spec.name)
        try:
            options = spec.option_specs()
        except DialevalError:           # a family whose extra is not installed
            unavailable.append(spec.name)
            continue
        for name, opt in options.items():
            if name in ("refs_mode", "tokenizer"):
                continue
            takers.setdefault(name, []).append(spec.name)
            if not helps.get(name):
                default = "" if opt.default is None or "default" in opt.help else f" (default {opt.default})"
                helps[name] = (opt.help or name.replace("_", " ")) + default
    lines = textwrap.wrap(INTRO, width=92, initial_indent=indent, subsequent_indent=indent)
    for name, metrics in takers.items():
        named = []
        for family, members in families.items():
            mine = [m for m in members if m in metrics]
            if not mine:
                continue
            named.append(f"{family} metrics" if mine == members and len(members) > 1 else ", ".join(mine))
        text = f"{name}: {helps[name]} ({'; '.join(named)})"
        lines.extend(textwrap.wrap(text, width=96, initial_indent=indent * 2,
                                   subsequent_indent=indent * 3, break_on_hyphens=False))
    if unavailable:
        lines.append(indent * 2 + "(not listed: the options of " + ", ".join(unavailable)
                     + ", whose dependencies are not installed)")
    return "\n".join(lines)


def score_doc() -> str:
    """`scoring.score`'s docstring with its metric-option paragraph replaced by the generated
    list (dedented, as `help` shows a function defined at module level)."""
    from .scoring import score

    doc = score.__doc__ or ""
    head, sep, tail = doc.partition(STATIC_POINTER)
    if sep:
        rest = tail.split("\n\n", 1)
        doc = head + metric_options_section() + ("\n\n" + rest[1] if len(rest) > 1 else "\n")
    first, _, body = doc.partition("\n")
    return first + "\n" + textwrap.dedent(body)
