"""Behavioural probe results for people: a text table, an HTML section, a self-contained page.

Everything here reads the plain dictionary `ProbeResult.to_dict()` gives (or the JSON file
`dialeval probe -o` writes), so a page can be made from a saved run without scoring again:
`dialeval report scores.jsonl --probes probes.json -o report.html` adds the section to the
report. The HTML is built with `html.escape` on every text (no template engine needed for two
tables) and is deterministic: the same data give the same bytes.
"""

from __future__ import annotations

import html
import json
import math
import os
from typing import Any

from ..errors import DialevalError

KIND = "dialeval-probes"
SECTION_ID = "probes"
TABLE_HEADER = ("metric", "family", "share", "ci_low", "ci_high", "wins", "ties", "losses",
                "variant_nan", "nan", "skipped", "n")

EXPLANATION = (
    "Share: the fraction of items where the metric scores the original response strictly better "
    "than its degenerate variant, with a percentile bootstrap 95% CI over the items. A tie and a "
    "variant without a value (NaN) count as failures; items where the original has no value are "
    "not applicable (nan) and items for which the family could make no variant are skipped; "
    "neither enters the share (n = wins + ties + losses + variant_nan). Chance is not 0.5: a "
    "metric that cannot tell the two apart scores 0.")


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def check_probes(data: Any, where: str = "probe results") -> dict:
    """`data` if it is what `ProbeResult.to_dict()` gives, else a one-line error."""
    if not isinstance(data, dict) or data.get("kind") != KIND or not isinstance(data.get("results"), dict):
        raise DialevalError(f"{where}: not a probe result (write one with `dialeval probe -o FILE.json`)")
    return data


def read_result_json(path: str | os.PathLike, what: str) -> tuple[Any, str]:
    """(data, path) of a JSON result file a command wrote (`what` names it in the one-line error)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle), path
    except FileNotFoundError:
        raise DialevalError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DialevalError(f"{path}: cannot read {what} ({type(exc).__name__})") from None


def read_probes(path: str | os.PathLike) -> dict:
    """The JSON file `dialeval probe -o` wrote."""
    data, path = read_result_json(path, "probe results")
    return check_probes(data, path)


def rows(data: dict) -> list[list[Any]]:
    """TABLE_HEADER rows: one per (metric, family), in the run's order."""
    out = []
    for metric in data.get("metrics") or list(data["results"]):
        for family in data.get("families") or list(data["results"][metric]):
            r = data["results"][metric][family]
            out.append([metric, family, _num(r.get("share")), _num(r.get("ci_low")),
                        _num(r.get("ci_high"))] + [int(r.get(k) or 0) for k in TABLE_HEADER[5:]])
    return out


def probe_table(data: dict, fmt: str = "plain") -> str:
    """The results as one table (`dialeval.report.tables.format_table` formats)."""
    from .tables import format_table

    return format_table(TABLE_HEADER, rows(data), fmt=fmt)


def describe_items(data: dict) -> str:
    """One sentence: how many items were probed and what was left out."""
    items = data.get("items") or {}
    settings = data.get("settings") or {}
    parts = [f"{items.get('probed', 0)} of {items.get('input', 0)} items probed"]
    if items.get("reference_copies_dropped"):
        parts.append(f"{items['reference_copies_dropped']} dropped as copies of a reference")
    if items.get("not_in_top"):
        parts.append(f"{items['not_in_top']} outside --top {settings.get('top')}")
    if items.get("left_out_by_limit"):
        parts.append(f"{items['left_out_by_limit']} left out by --limit {settings.get('limit')}")
    return "; ".join(parts) + (f"; seed {settings.get('seed')}, {settings.get('n_boot')} bootstrap "
                               "resamples")


# --- HTML ---------------------------------------------------------------------------------------

def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _fmt(v: float, digits: int = 3) -> str:
    return "n/a" if not math.isfinite(v) else f"{v:.{digits}f}"


def _sortkey(v: float) -> str:
    return "" if not math.isfinite(v) else repr(v)


def _share_cell(r: dict) -> str:
    share, low, high = _num(r.get("share")), _num(r.get("ci_low")), _num(r.get("ci_high"))
    title = (f"wins {r.get('wins', 0)}, ties {r.get('ties', 0)}, losses {r.get('losses', 0)}, "
             f"variant NaN {r.get('variant_nan', 0)}; n = {r.get('n', 0)}, "
             f"n/a {r.get('nan', 0)}, skipped {r.get('skipped', 0)}")
    below = math.isfinite(share) and share < 0.5
    mark = '<span class="mark">*</span>' if below else ""
    ci = f'<span class="ci">[{_fmt(low)}, {_fmt(high)}]</span>' if math.isfinite(low) else ""
    return (f'<td class="num" data-sort="{_sortkey(share)}" title="{_e(title)}">'
            f"{_fmt(share)}{mark}{ci}</td>")


def probe_section(data: dict) -> str:
    """The "Behavioural probes" section: a metric x family table of shares with their CIs, then
    every count."""
    data = check_probes(data)
    metrics = data.get("metrics") or list(data["results"])
    families = data.get("families") or []
    lines = [f'<section id="{SECTION_ID}">', "<h2>Behavioural probes</h2>",
             f'<p class="note">{_e(EXPLANATION)} <span class="mark">*</span> marks a share below 0.5.</p>',
             f'<p class="note">{_e(describe_items(data))}. Signature: '
             f'<code class="sig">{_e(data.get("signature", ""))}</code></p>',
             '<table class="sortable" id="table-probes">',
             "<thead><tr><th>metric</th>" + "".join(f"<th>{_e(f)}</th>" for f in families) + "</tr></thead>",
             "<tbody>"]
    for m in metrics:
        cells = "".join(_share_cell(data["results"][m][f]) for f in families)
        lines.append(f"<tr><td>{_e(m)}</td>{cells}</tr>")
    lines += ["</tbody>", "</table>", "<details>", "<summary>Every count</summary>",
              '<table class="sortable" id="table-probe-counts">',
              "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in TABLE_HEADER) + "</tr></thead>",
              "<tbody>"]
    for row in rows(data):
        cells = [f"<td>{_e(row[0])}</td>", f"<td>{_e(row[1])}</td>"]
        cells += [f'<td class="num" data-sort="{_sortkey(v)}">{_fmt(v)}</td>' for v in row[2:5]]
        cells += [f'<td class="num">{v}</td>' for v in row[5:]]
        lines.append("<tr>" + "".join(cells) + "</tr>")
    lines += ["</tbody>", "</table>", "</details>"]
    signatures = data.get("signatures") or {}
    if signatures:
        lines.append('<p class="note">Metric signatures: '
                     + "; ".join(f'{_e(m)} <code class="sig">{_e(s)}</code>' for m, s in signatures.items())
                     + "</p>")
    skipped = data.get("skipped") or {}
    if any(skipped.values()):
        lines.append('<p class="note">Items without a variant, per family: '
                     + ", ".join(f"{_e(f)} {n}" for f, n in skipped.items() if n) + ".</p>")
    lines.append("</section>")
    return "\n".join(lines) + "\n"


def attach(report: dict, data: dict) -> dict:
    """Add probe results to a `dialeval.report.html.build_report` dictionary: `render_html`
    then writes the section (and the navigation links to it)."""
    report["probes"] = check_probes(data)
    if SECTION_ID not in report.get("sections", []):
        report["sections"] = list(report.get("sections", [])) + [SECTION_ID]
    return report


def _asset(name: str) -> str:
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates", name)
    with open(here, encoding="utf-8") as handle:
        return handle.read()


def render_page(data: dict, title: str = "dialeval probes") -> str:
    """A self-contained HTML page of the probe results: style and sorting script inlined, and
    the report's Content-Security-Policy, so opening it fetches nothing."""
    data = check_probes(data)
    version = data.get("version", "")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="dialeval {_e(version)}">', f"<title>{_e(title)}</title>",
        "<style>", _asset("report.css"), "</style>", "</head>", "<body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="note">Made by dialeval {_e(version)}. Tables sort on a click on a column header.</p>',
        probe_section(data), "<script>", _asset("sort.js"), "</script>", "</body>", "</html>", ""])


def write_page(path: str | os.PathLike, data: dict, title: str = "dialeval probes") -> None:
    from ..data.writers import atomic_write

    page = render_page(data, title)
    with atomic_write(path) as handle:
        handle.write(page)


__all__ = ["TABLE_HEADER", "attach", "check_probes", "describe_items", "probe_section",
           "probe_table", "read_probes", "render_page", "rows", "write_page"]
