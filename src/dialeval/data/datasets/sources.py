"""Where every data set folder comes from: gathered from the loaders' `SOURCE` declarations
(and the training corpora's) and rendered for `dialeval datasets --sources` and for
docs/datasets.md, so the two cannot disagree (a test compares the page with `markdown()`)."""

from __future__ import annotations

import importlib

from .base import Source


def all_sources() -> list[tuple[Source, list[str]]]:
    """(source, loader names reading it) per folder: the rated sets in registry order, then the
    training corpora."""
    from . import _SPECS
    from .corpora import sources

    found: dict[str, tuple[Source, list[str]]] = {}
    for spec in _SPECS:
        module = importlib.import_module(f"{__package__}.{spec.target.split(':')[0]}")
        source: Source = module.SOURCE
        found.setdefault(source.folder, (source, []))[1].append(spec.name)
    for source in sources():
        found.setdefault(source.folder, (source, []))
    return list(found.values())


def text() -> str:
    lines = []
    for source, names in all_sources():
        lines.append(f"{source.folder}/  {source.title}")
        lines.append(f"  loaders: {', '.join(names) if names else 'none (a training corpus)'}")
        lines.append(f"  source: {source.origin}")
        lines.append(f"  licence: {source.licence}")
        lines.append(f"  layout: {'; '.join(source.layout)}")
        if source.note:
            lines.append(f"  note: {source.note}")
        lines.append("")
    lines.append("Put each folder under one DIR and give --data-root DIR (or NAME:DIR/FOLDER to --data).")
    return "\n".join(lines)


def markdown() -> str:
    out = ["# Public data sets: sources, licences, folder layout", "",
           "<!-- generated from the loaders' SOURCE declarations: "
           "python3 -c \"from dialeval.data.datasets.sources import markdown; print(markdown(), end='')\" "
           "> docs/datasets.md -->", "",
           "dialeval's loaders (`dialeval datasets`) and training recipes read the public data sets below, each "
           "from a folder named as here under one data root: `dialeval datasets --data-root DIR`, "
           "`dialeval models build --data-root DIR`, and `NAME:DIR/FOLDER` for `--data`. The same list prints with "
           "`dialeval datasets --sources`. Fetch each from its source; nothing is downloaded by dialeval. The "
           "licences are the data's own terms, in short: read the source's before redistributing anything "
           "trained on it.", ""]
    for source, names in all_sources():
        out.append(f"## `{source.folder}/`: {source.title}")
        out.append("")
        out.append(f"- loaders: {', '.join(f'`{n}`' for n in names) if names else 'none (a training corpus)'}")
        out.append(f"- source: {source.origin}")
        out.append(f"- licence: {source.licence}")
        out.append("- layout (relative to the folder): " + "; ".join(f"`{p}`" if " " not in p else p
                                                                     for p in source.layout))
        if source.note:
            out.append(f"- note: {source.note}")
        out.append("")
    return "\n".join(out)
