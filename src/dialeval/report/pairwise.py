"""Pairwise verdicts for people, as text tables (`compare --pairwise`) and as a section of the
HTML report: the standings (Bradley-Terry ranking and win rates), each pair's wins, ties and
losses, the position bias, and the agreement with human preferences.

It reads the plain dictionary `meta.pairwise.PairwiseResult.to_dict()` gives, so `compare
--pairwise --report x.html` and `report --pairwise FILE.json` (the JSON `compare --pairwise-out`
wrote) draw the same section. Every text is escaped; the same data give the same bytes.
"""

from __future__ import annotations

import html
import math
import os
from typing import Any

from ..errors import DialevalError

KIND = "dialeval-pairwise"
SECTION_ID = "pairwise"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _fmt(v: Any, digits: int = 3) -> str:
    x = _num(v)
    return "n/a" if not math.isfinite(x) else f"{x:.{digits}f}"


def _cell(v: Any, low: Any = None, high: Any = None) -> str:
    x = _num(v)
    key = "" if not math.isfinite(x) else repr(x)
    ci = f' <span class="ci">[{_fmt(low)}, {_fmt(high)}]</span>' if math.isfinite(_num(low)) else ""
    return f'<td class="num" data-sort="{key}">{_fmt(v)}{ci}</td>'


def check_pairwise(data: Any, where: str = "pairwise verdicts") -> dict:
    if not isinstance(data, dict) or data.get("kind") != KIND or not isinstance(data.get("standings"), list):
        raise DialevalError(f"{where}: not pairwise verdicts (write them with `dialeval compare --pairwise "
                            "--pairwise-out FILE.json`)")
    return data


def read_pairwise(path: str | os.PathLike) -> dict:
    from .probes import read_result_json

    data, path = read_result_json(path, "pairwise verdicts")
    return check_pairwise(data, path)


def pairwise_section(data: dict) -> str:
    data = check_pairwise(data)
    pb = data.get("position_bias") or {}
    lines = [f'<section id="{SECTION_ID}">', "<h2>Pairwise verdicts</h2>",
             '<p class="note">A judge was asked which of two replies to the same item is better, in both '
             "orders. A win needs both orders to pick the same reply; orders that disagree are a tie. "
             "Win rate: (wins + ties / 2) / comparisons. Bradley-Terry log-strengths are centred to mean 0; "
             "95% CIs are percentile bootstrap intervals over items "
             f"({_e(data.get('n_resamples'))} resamples, seed {_e(data.get('seed'))}).</p>",
             f'<p class="note">{_e(data.get("n_items"))} items, {_e(data.get("n_comparisons"))} comparisons '
             f"(items paired by {_e(data.get('pair_by'))}). Position bias: the orders disagreed on "
             f"{_fmt(pb.get('rate'))} of {_e(pb.get('n'))} comparisons; the reply shown first was picked in "
             f"{_fmt(pb.get('first_rate'))} of single-order verdicts (0.5: no preference for a position). "
             f'Signature: <code class="sig">{_e(data.get("signature", ""))}</code></p>',
             '<table class="sortable" id="table-pairwise-standings">',
             "<thead><tr><th>rank</th><th>system</th><th>comparisons</th><th>win rate</th>"
             "<th>Bradley-Terry</th></tr></thead>", "<tbody>"]
    for r in data["standings"]:
        lines.append(f"<tr><td class=\"num\">{_e(r['rank'])}</td><td>{_e(r['system'])}</td>"
                     f"<td class=\"num\">{_e(r['n'])}</td>{_cell(r['win_rate'], r['ci_low'], r['ci_high'])}"
                     f"{_cell(r['bt'], r['bt_ci_low'], r['bt_ci_high'])}</tr>")
    lines += ["</tbody>", "</table>", '<table class="sortable" id="table-pairwise-pairs">',
              "<thead><tr><th>a</th><th>b</th><th>n</th><th>a wins</th><th>ties</th><th>b wins</th>"
              "<th>a win rate</th><th>position bias</th></tr></thead>", "<tbody>"]
    for p in data["pairs"]:
        lines.append(f"<tr><td>{_e(p['a'])}</td><td>{_e(p['b'])}</td><td class=\"num\">{_e(p['n'])}</td>"
                     f"<td class=\"num\">{_e(p['wins'])}</td><td class=\"num\">{_e(p['ties'])}</td>"
                     f"<td class=\"num\">{_e(p['losses'])}</td>{_cell(p['win_rate'], p['ci_low'], p['ci_high'])}"
                     f"{_cell(p['position_bias'])}</tr>")
    lines += ["</tbody>", "</table>"]
    if data.get("agreement"):
        lines += [f'<p class="note">Agreement with human preferences ({_e(data.get("agreement_quality"))}): '
                  "on the comparisons whose two replies people rated apart, the share on which the measure "
                  "prefers the reply people rated higher (a tie counts 1/2).</p>",
                  '<table class="sortable" id="table-pairwise-agreement">',
                  "<thead><tr><th>measure</th><th>pairs</th><th>agreement</th><th>ties</th></tr></thead>",
                  "<tbody>"]
        for a in data["agreement"]:
            lines.append(f"<tr><td>{_e(a['measure'])}</td><td class=\"num\">{_e(a['n'])}</td>"
                         f"{_cell(a['agreement'], a['ci_low'], a['ci_high'])}<td class=\"num\">{_e(a['ties'])}</td></tr>")
        lines += ["</tbody>", "</table>"]
    for note in data.get("notes") or []:
        lines.append(f'<p class="note">{_e(note)}</p>')
    lines.append("</section>")
    return "\n".join(lines) + "\n"


def attach(report: dict, data: dict) -> dict:
    """Add pairwise verdicts to a `report.html.build_report` dictionary: `render_html` then
    writes the section (and the navigation link to it)."""
    report["pairwise"] = check_pairwise(data)
    if SECTION_ID not in report.get("sections", []):
        report["sections"] = list(report.get("sections", [])) + [SECTION_ID]
    return report


def pairwise_tables(data: dict, fmt: str = "plain") -> list[tuple[str, str]]:
    """(title, table) pairs for `PairwiseResult.to_dict()`."""
    from .tables import format_table

    out = []
    rows = [[p["a"], p["b"], p["n"], p["wins"], p["ties"], p["losses"], p["win_rate"], p["ci_low"], p["ci_high"],
             p["position_bias"]] for p in data["pairs"]]
    out.append(("pairwise verdicts: a against b (both orders; a win needs both)",
                format_table(["a", "b", "n", "a wins", "ties", "b wins", "a win rate", "ci_low", "ci_high",
                              "position bias"], rows, fmt=fmt, digits=3)))
    rows = [[r["rank"], r["system"], r["n"], r["win_rate"], r["ci_low"], r["ci_high"], r["bt"], r["bt_ci_low"],
             r["bt_ci_high"]] for r in data["standings"]]
    out.append(("pairwise standings: Bradley-Terry log-strength (mean 0) and win rate, 95% bootstrap CIs",
                format_table(["rank", "system", "comparisons", "win rate", "ci_low", "ci_high", "bt", "bt_low",
                              "bt_high"], rows, fmt=fmt, digits=3)))
    if data.get("agreement"):
        rows = [[a["measure"], a["n"], a["agreement"], a["ci_low"], a["ci_high"], a["ties"]]
                for a in data["agreement"]]
        out.append((f"agreement with human preferences ({data['agreement_quality']}): share of pairs people "
                    "rated apart on which the measure prefers the same reply (tie 1/2)",
                    format_table(["measure", "pairs", "agreement", "ci_low", "ci_high", "ties"], rows, fmt=fmt,
                                 digits=3)))
    return out


def describe_bias(data: dict) -> str:
    pb = data["position_bias"]
    return (f"position bias: the two orders disagreed on {pb['rate']:.1%} of {pb['n']} comparisons; "
            f"{pb['first_rate']:.1%} of single-order verdicts picked the reply shown first")


def with_section(page: str, data: dict) -> str:
    """A rendered report page (`report.html.render_html` of a report `attach` was given) with
    the section put where the probes' goes: before the script that makes its tables sortable."""
    at = page.rfind("<script>")
    return page[:at] + pairwise_section(data) + "\n" + page[at:]


__all__ = ["attach", "check_pairwise", "describe_bias", "pairwise_section", "pairwise_tables", "read_pairwise",
           "with_section"]
