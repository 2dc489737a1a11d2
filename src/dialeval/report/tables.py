"""Tables for people and papers: one formatter, four formats.

- `plain`: aligned columns for a terminal;
- `markdown`: a GitHub table;
- `latex`: a `tabular` (booktabs rules) that compiles as it is: special characters escaped,
  numeric columns right-aligned;
- `csv`: RFC 4180, for a spreadsheet.

Every table-printing command takes `--table-format` (and `--format` where that name is free)
with these choices. Numbers are formatted here, once, so that a table reads the same in every
format.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any, Sequence

TABLE_FORMATS = ("plain", "markdown", "latex", "csv")

_LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
                  "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "\\": r"\textbackslash{}", "<": r"\textless{}", ">": r"\textgreater{}",
                  "±": r"$\pm$", "Δ": r"$\Delta$", "τ": r"$\tau$"}


def cell(value: Any, digits: int = 4) -> str:
    """One cell as text: floats to `digits` places (NaN as `nan`), None as `n/a`."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def fmt_float(v: Any, digits: int = 4) -> str:
    """A number for a results table: NaN and None read `n/a`."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return f"{float(v):.{digits}f}"
    return str(v)


P_FLOOR = 2.2e-16   # below double precision's resolution near 1 (R's format.pval bound)


def fmt_p(v: Any) -> str:
    """A p-value: 4 places, or scientific notation below 1e-4, and `< 2.2e-16` below that
    (a p of exactly 0 is a value below the resolution of the computation, never 0.0e+00)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if v < P_FLOOR:
        return f"< {P_FLOOR:.1e}"
    return f"{v:.4f}" if v >= 1e-4 else f"{v:.2e}"


def fmt_ci(low: Any, high: Any, digits: int = 4) -> str:
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return "n/a"
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def _numeric(column: Sequence[str]) -> bool:
    def is_num(s: str) -> bool:
        s = s.rstrip("*").strip().lstrip("<").strip()   # "< 2.2e-16" is a number too
        if s in ("", "n/a", "nan"):
            return True
        try:
            float(s)
            return True
        except ValueError:
            return False
    return bool(column) and all(is_num(c) for c in column)


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str = "plain",
                 digits: int = 4, caption: str | None = None) -> str:
    """`header` and `rows` as a table in `fmt` (one of TABLE_FORMATS)."""
    if fmt not in TABLE_FORMATS:
        raise ValueError(f"unknown table format {fmt!r}; choose from {', '.join(TABLE_FORMATS)}")
    header = [str(h) for h in header]
    body = [[cell(v, digits) for v in row] for row in rows]
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(body)
        return out.getvalue().rstrip("\n")
    if fmt == "latex":
        numeric = [i > 0 and _numeric([r[i] for r in body]) for i in range(len(header))]
        spec = "".join("r" if n else "l" for n in numeric)
        lines = []
        if caption:
            lines.append(f"% {caption}")
        lines += [f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
                  " & ".join(latex_escape(h) for h in header) + " \\\\", "\\midrule"]
        lines += [" & ".join(latex_escape(c) for c in r) + " \\\\" for r in body]
        lines += ["\\bottomrule", "\\end{tabular}"]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h)
              for i, h in enumerate(header)]
    if fmt == "markdown":
        lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
                 "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        lines += ["| " + " | ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                                    enumerate(zip(r, widths))) + " |" for r in body]
    else:
        lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in
                           enumerate(zip(header, widths)))]
        lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                            enumerate(zip(r, widths))) for r in body]
    return "\n".join(lines)


# --- the tables the commands print -----------------------------------------------------------

def system_table(result, fmt: str = "plain", width: int | None = None) -> str:
    """Per-system corpus values of a ScoreResult or a streamed run's summary (which carries
    `counts` instead of the samples), and an `(all)` row for several systems."""
    header = ["system", "n"] + list(result.metrics)
    counts: dict[str, int] = dict(getattr(result, "counts", None) or {})
    if not counts:
        for s in result.samples:
            key = s.system if s.system is not None else "all"
            counts[key] = counts.get(key, 0) + 1
    scored: dict[str, dict[str, int]] = dict(getattr(result, "scored", None) or {})

    def n_cell(system: str, rows: int) -> Any:
        """The rows every metric scored; `scored/rows` when some metric left rows out (a line
        per metric on stderr says which and why)."""
        systems = [system] if system is not None else list(scored)
        fewest = min((min(scored[s].values(), default=counts.get(s, 0)) for s in systems if s in scored),
                     default=rows) if system is not None else \
            min((sum(scored[s].get(m, counts.get(s, 0)) for s in scored) for m in result.metrics), default=rows)
        return rows if fewest >= rows else f"{fewest}/{rows}"

    rows = [[system, n_cell(system, counts[system])] + [vals[m] for m in result.metrics]
            for system, vals in result.systems.items()]
    if len(rows) > 1:
        rows.append(["(all)", n_cell(None, sum(counts.values()))] + [result.corpus[m] for m in result.metrics])
    table = format_table(header, rows, fmt=fmt)
    if fmt == "plain":
        # a row per metric and a column per system stays readable with many metrics
        import shutil

        if width is None:
            width = shutil.get_terminal_size((120, 24)).columns
        too_wide = max(len(line) for line in table.splitlines()) > width
        if too_wide and len(result.metrics) > len(rows):
            t_header = ["metric"] + [str(r[0]) for r in rows]
            t_rows = [["n"] + [r[1] for r in rows]]
            t_rows += [[m] + [r[2 + k] for r in rows] for k, m in enumerate(result.metrics)]
            return format_table(t_header, t_rows, fmt=fmt)
    return table


def correlation_table(rows: Sequence[dict], fmt: str = "plain") -> str:
    header = ["metric", "quality", "level", "method", "r", "p", "95% CI", "n"]
    # a row over too few systems (`descriptive_only`) shows its r only: p and CI are n/a
    body = [[r["metric"], r["quality"], r["level"], r["method"], fmt_float(r["r"])]
            + (["n/a", "n/a"] if r.get("descriptive_only") else
               [fmt_p(r["p"]), fmt_ci(r["ci_low"], r["ci_high"])]) + [r["n"]] for r in rows]
    return format_table(header, body, fmt=fmt)


def metric_comparison_table(rows: Sequence[dict], fmt: str = "plain") -> str:
    header = ["A", "B", "quality", "level", "method", "r(A)", "r(B)", "r(A,B)", "Williams t",
              "p (Williams)", "p (bootstrap)", "95% CI r(A)-r(B)"]
    body = [[r["metric_a"], r["metric_b"], r["quality"], r["level"], r["method"], fmt_float(r["r_a"]),
             fmt_float(r["r_b"]), fmt_float(r["r_ab"])]
            + (["n/a"] * 4 if r.get("descriptive_only") else   # too few systems: no test
               [fmt_float(r["williams_t"], 3), fmt_p(r["williams_p"]),
                f"<{1 / r['n_boot']:.0e}" if r["bootstrap_p"] == 0 else fmt_p(r["bootstrap_p"]),
                fmt_ci(r["diff_ci_low"], r["diff_ci_high"])]) for r in rows]
    return format_table(header, body, fmt=fmt)


def agreement_table(rows: Sequence[dict], fmt: str = "plain") -> str:
    header = ["quality", "items", "raters", "mean", "split-half", "LOO mean", "LOO max",
              "kappa", "kappa (quad.)", "Fleiss", "alpha (ord.)"]
    body = [[r["quality"], r["items"], r["raters"], fmt_float(r["mean"], 3),
             "n/a" if not math.isfinite(r["split_half"]) else
             f"{r['split_half']:.3f}±{r['split_half_std']:.3f}",
             fmt_float(r["loo_mean"], 3), fmt_float(r["loo_max"], 3), fmt_float(r["kappa"], 3),
             fmt_float(r["kappa_quadratic"], 3), fmt_float(r["fleiss"], 3),
             fmt_float(r["alpha_ordinal"], 3)] for r in rows]
    return format_table(header, body, fmt=fmt)


def compare_tables(cmp: dict, fmt: str = "plain") -> list[tuple[str, str]]:
    """(title, table) pairs for a `Comparison.to_dict()`: one system table per measure, the
    pairwise table when there is no baseline, and the rank agreement. Beside each p, the number
    of items its comparison paired. In CSV every number is its own column (CI low and high, p,
    the smallest attainable p) and the significance mark has a column of its own; elsewhere the
    mark follows the p-value."""
    from ..meta.systems import significance_mark

    csv_out = fmt == "csv"

    def mark(r: dict) -> str:
        return r["mark"] if "mark" in r else significance_mark(r.get("p"))

    def p_cells(r: dict) -> list:
        if csv_out:
            return [_num(r.get("p")), mark(r), r.get("n_paired", ""), _num(r.get("p_min"))]
        return [fmt_p(r.get("p")) + mark(r), r.get("n_paired", "n/a")]

    def ci_cells(low, high) -> list:
        return [_num(low), _num(high)] if csv_out else [fmt_ci(low, high)]

    ci_head = ["ci_low", "ci_high"] if csv_out else ["95% CI"]
    p_head = ["p", "mark", "pairs", "p_min"] if csv_out else ["p", "pairs"]
    out = []
    by_measure: dict[str, list[dict]] = {}
    for r in cmp["scores"]:
        by_measure.setdefault(r["measure"], []).append(r)
    baseline = cmp.get("baseline")
    for measure, rows in by_measure.items():
        header = ["system", "n", "score"] + ci_head
        if baseline:
            header += (["delta"] if csv_out else [f"Δ vs {baseline}"]) + p_head
        body = []
        for r in rows:
            line = [r["system"], "n/a" if r["n"] is None else r["n"],
                    _num(r["score"]) if csv_out else fmt_float(r["score"])]
            line += ci_cells(r["ci_low"], r["ci_high"])
            if baseline:
                if r["system"] == baseline:
                    line += ["" if csv_out else "(baseline)"] + [""] * len(p_head)
                else:
                    line += [_num(r.get("delta")) if csv_out else fmt_float(r.get("delta"))]
                    line += p_cells(r)
            body.append(line)
        kind = cmp["measures"].get(measure, {}).get("kind", "")
        out.append((f"{measure} ({kind})", format_table(header, body, fmt=fmt)))
    if cmp.get("pairs"):
        header = ["measure", "A", "B", "score A", "score B", "B - A"] + p_head
        body = [[r["measure"], r["a"], r["b"]]
                + ([_num(r["score_a"]), _num(r["score_b"]), _num(r["delta"])] if csv_out else
                   [fmt_float(r["score_a"]), fmt_float(r["score_b"]), fmt_float(r["delta"])])
                + p_cells(r) for r in cmp["pairs"]]
        out.append(("pairwise tests", format_table(header, body, fmt=fmt)))
    if cmp.get("rank_agreement"):
        from ..meta.system_level import MIN_SYSTEMS

        header = ["metric", "human", "method", "r", "p"] + ci_head + ["systems"]
        body = []
        for r in cmp["rank_agreement"]:
            few = r["n_systems"] < MIN_SYSTEMS   # descriptive only: r, no p or CI
            body.append([r["metric"], r["human"], r["method"]]
                        + ([_num(r["r"]), "" if few else _num(r["p"])] if csv_out else
                           [fmt_float(r["r"]), "n/a" if few else fmt_p(r["p"])])
                        + ci_cells(*((math.nan, math.nan) if few else (r["ci_low"], r["ci_high"])))
                        + [r["n_systems"]])
        n_few = min((r["n_systems"] for r in cmp["rank_agreement"]), default=MIN_SYSTEMS)
        title = "system ranking: metric vs human" + (
            f" (only {n_few} systems: descriptive only, no p or CI; a test needs at least "
            f"{MIN_SYSTEMS})" if n_few < MIN_SYSTEMS else "")
        out.append((title, format_table(header, body, fmt=fmt)))
    return out


def _num(v: Any) -> str:
    """A number for a CSV cell: full precision (repr), empty when missing."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return repr(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def comment_lead(fmt: str) -> str:
    """What starts a line that is not part of a table: `# ` in CSV (pandas:
    `read_csv(..., comment="#")`), `% ` in LaTeX, nothing otherwise."""
    return {"csv": "# ", "latex": "% "}.get(fmt, "")
