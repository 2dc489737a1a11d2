"""A self-contained HTML report of a scored set: one file a person can send to a colleague.

Everything is inlined: the style, a small sorting script, and the figures as SVG text. A
Content-Security-Policy in the page forbids every network source (`default-src 'none'`), so
opening it can fetch nothing, and a browser reports any attempt as a console error (the
browser test checks there is none). The same input gives the same bytes: no timestamps, seeded
bootstrap and jitter, SVG ids from a fixed salt.

The numbers are `analysis.py`'s (from `meta/`: system comparison, correlations, Williams'
test, agreement); here they are laid out: `report_data` draws the figures (`figures.py`) and
gives the template its data, `render_html` fills the Jinja2 template `templates/report.html.j2`,
and `build_report` is the two in one call. Sections: run (signatures, input sha256, version),
systems (corpus scores with CIs and paired significance against a baseline), metric-human
correlation (with CIs and Williams marks at every level that applies), metric-metric heatmap,
scatter plots, human agreement, and the samples where metric and humans disagree most.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Sequence

from ..version import __version__
from .analysis import CORR_METHODS, WILLIAMS_METHODS, ReportAnalysis, ReportSettings, Scatter, analyse
from .analysis import default_qualities  # noqa: F401  (where it was)

SECTIONS = ("run", "systems", "correlation", "heatmap", "scatter", "agreement", "disagreement")


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_report(rows: Sequence[dict], settings: ReportSettings | None = None, *,
                 title: str = "dialeval report", inputs: dict[str, str] | None = None,
                 comparison=None, **options: Any) -> dict:
    """Every number and figure of the report, as plain data (see `render_html`): the analysis
    (`analysis.analyse`, with `settings`, or a `ReportSettings` made of `options`) laid out by
    `report_data`. `inputs`: label -> sha256 of input files."""
    if settings is not None and options:
        raise TypeError(f"build_report: give settings or {', '.join(options)}, not both")
    analysis = analyse(rows, settings or ReportSettings(**options), comparison=comparison)
    return report_data(analysis, title=title, inputs=inputs)


def report_data(a: ReportAnalysis, *, title: str = "dialeval report",
                inputs: dict[str, str] | None = None) -> dict:
    """The analysis as the template reads it, with its figures drawn as SVG text."""
    from . import figures

    colours = figures.system_colours(a.systems)
    scatter = [{"metric": f.metric, "quality": f.quality, "level": f.level, "svg": _draw(f, colours)}
               for f in a.scatter]
    heatmap_svg = None
    if a.heatmap is not None:
        heatmap_svg = figures.heatmap(a.heatmap, a.metric_names, title="Spearman between metrics (turn level)")
    cmp, caveats, human_names = a.cmp, a.caveats, a.human_names
    return {
        "title": title, "version": __version__, "sections": list(SECTIONS),
        "inputs": [{"name": k, "sha256": v} for k, v in (inputs or {}).items()],
        "signatures": [{"metric": m, "signature": a.signatures.get(m) or
                        cmp["measures"][m].get("signature") or "(not recorded in the input)"}
                       for m in a.metric_names],
        "human_signatures": [{"name": h, "signature": cmp["measures"][h]["signature"]}
                             for h in human_names],
        "compare_signature": cmp["signature"], "test": cmp["test"],
        "n_resamples": cmp["n_resamples"], "seed": cmp["seed"], "baseline": a.baseline,
        "corr": {"n_boot": a.settings.n_boot, "seed": a.settings.corr_seed,
                 "levels": list(dict.fromkeys(c["level"] for c in a.correlations)),
                 "caveats": list(dict.fromkeys(caveats)),
                 "fixed_human": any(cmp["measures"][h]["kind"] == "published-system-means"
                                    for h in human_names)},
        "measures": [{"name": m, "kind": cmp["measures"][m]["kind"]} for m in a.metric_names + human_names],
        "system_rows": a.system_rows, "notes": cmp["notes"],
        "warnings": list(getattr(a.comparison, "warnings", [])),
        "remarks": list(getattr(a.comparison, "remarks", [])) + list(dict.fromkeys(caveats)),
        "correlations": a.correlations, "correlation_grid": correlation_grid(a.correlations),
        "heatmap_svg": heatmap_svg, "scatter": scatter,
        "agreement": a.agreement, "disagreements": a.disagreements,
        "n_rows": a.n_rows, "n_systems": len(a.systems),
    }


def correlation_grid(rows: Sequence[dict]) -> dict:
    """The correlation rows grouped for reading: one row per (quality, metric), one column per
    (level, method) present, each cell one correlation row (None where absent). Flat, 23
    metrics at three levels and three methods made a 207-row list in which a metric's numbers
    lay far apart; the flat rows stay, folded, for their p, CI, n and Williams' test."""
    columns = list(dict.fromkeys((c["level"], c["method"]) for c in rows))
    where = {key: i for i, key in enumerate(columns)}
    grid: dict[tuple[str, str], list] = {}
    for c in rows:
        cells = grid.setdefault((c["quality"], c["metric"]), [None] * len(columns))
        cells[where[(c["level"], c["method"])]] = c
    return {"columns": [{"level": level, "method": method} for level, method in columns],
            "rows": [{"quality": q, "metric": m, "cells": cells} for (q, m), cells in grid.items()]}


def _draw(f: Scatter, colours: dict[str, str]) -> str:
    from . import figures

    if f.level == "system":
        return figures.system_scatter(f.x, f.y, f.systems, metric=f.metric, quality=f.quality,
                                      colours=colours, r=f.r, x_ci=f.x_ci, y_ci=f.y_ci)
    return figures.turn_scatter(f.x, f.y, f.systems, metric=f.metric, quality=f.quality, colours=colours,
                                r=f.r, seed=f.seed)


def render_html(report: dict) -> str:
    """The report as one HTML document (Jinja2, autoescaped; SVG figures inlined)."""
    from ..optional import require

    jinja2 = require("jinja2", "the HTML report", "report")

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(here), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["num"] = _fmt_num
    env.filters["pval"] = _fmt_p
    env.filters["sortkey"] = lambda v: "" if v is None else repr(float(v))
    with open(os.path.join(here, "report.css"), encoding="utf-8") as f:
        css = f.read()
    with open(os.path.join(here, "sort.js"), encoding="utf-8") as f:
        js = f.read()
    page = env.get_template("report.html.j2").render(r=report, css=css, js=js)
    page = _with_caveats(page, report["corr"].get("caveats") or [])
    if report.get("probes"):   # `report --probes` (report/probes.py `attach`): before the script,
        from .probes import probe_section   # which makes the tables above it sortable

        at = page.rfind("<script>")
        page = page[:at] + probe_section(report["probes"]) + "\n" + page[at:]
    return page


def _with_caveats(page: str, caveats: Sequence[str]) -> str:
    """The system level's caveats (too few systems: descriptive only) as a paragraph of the
    correlation section, just above its table."""
    if not caveats:
        return page
    import html as _html

    at = page.find('<table class="sortable" id="table-correlation">')
    if at < 0:
        return page
    text = " ".join(_html.escape(c[0].upper() + c[1:] + ".") for c in caveats)
    return (page[:at] + f'<p class="note caveat" id="system-level-caveat"><b>Caveat:</b> {text}</p>\n'
            + page[at:])


def _fmt_num(v: Any, digits: int = 4) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def _fmt_p(v: Any) -> str:
    from .tables import P_FLOOR

    if v is None:
        return "n/a"
    if v < P_FLOOR:   # 0 or below resolution: a bound, never 0.0e+00
        return f"< {P_FLOOR:.1e}"
    return f"{v:.4f}" if v >= 1e-4 else f"{v:.1e}"


def write_report(path: str | os.PathLike, report: dict) -> None:
    from ..data.writers import atomic_write

    with atomic_write(path) as handle:
        handle.write(render_html(report))


__all__ = ["build_report", "report_data", "render_html", "write_report", "sha256_file", "SECTIONS",
           "ReportSettings", "CORR_METHODS", "WILLIAMS_METHODS"]
