"""The paper's hyper-parameter curves, from score grids: system-level Pearson against L
(Figure 1), against the n-gram order (Table 2) and against lambda (Figure 2), plus the
fixed-lambda and cross-validated AM-FM numbers of Table 1. One CSV row per point, one PNG per
curve with a line per training substitute."""

from __future__ import annotations

import csv
import io
import json
import os
from typing import Any, Sequence

import numpy as np

from .tuning import Grid, combine, cross_validate, pearson, system_means

LAMBDAS = [round(0.1 * i, 1) for i in range(11)]
# The paper's own numbers on DSTC6 (Twitter training data), drawn beside ours for comparison.
PAPER_TABLE2 = {1: 0.8128, 2: 0.8596, 3: 0.8272}      # FM Pearson by n-gram order
PAPER_AMFM = 0.8907                                    # AM-FM, L=10, n=2, lambda=0.8 (Table 1)
CSV_FIELDS = ["training", "sweep", "dims", "order", "lambda", "pearson", "p_value"]


MIN_SYSTEMS = 3


def check_systems(order: Sequence[str]) -> None:
    """The sweep correlates system means: with fewer than 3 systems a Pearson r is +-1 or
    undefined, so every curve would be meaningless (or all NaN)."""
    from ...errors import DialevalError

    if len(order) < MIN_SYSTEMS:
        raise DialevalError(f"the AM-FM sweep correlates system means and needs at least {MIN_SYSTEMS} "
                            f"systems; the input has {len(order)}"
                            + (f" ({', '.join(map(str, order))})" if order else ""))


def _nearest(values: Sequence[int], want: int) -> int:
    return int(min(range(len(values)), key=lambda i: (abs(values[i] - want), values[i])))


def analyse(grid: Grid, label: str, systems: Sequence[str], order: Sequence[str], human: np.ndarray,
            *, dims: int = 10, lm_order: int = 2, lam: float = 0.8, lambdas: Sequence[float] = LAMBDAS,
            cv: str = "loso", k: int = 5, seed: int = 0) -> tuple[list[dict], dict[str, Any]]:
    """Curve rows and a summary for one training substitute."""
    check_systems(order)
    am_sys = system_means(grid.am, systems, order)      # (len(dims), S)
    fm_sys = system_means(grid.fm, systems, order)      # (len(orders), S)
    rows: list[dict] = []
    d0 = _nearest(grid.dims, dims)
    o0 = _nearest(grid.orders, lm_order)
    for j, d in enumerate(grid.dims):
        r, p = pearson(am_sys[j], human)
        rows.append({"training": label, "sweep": "dims", "dims": d, "order": "", "lambda": 1.0,
                     "pearson": r, "p_value": p})
    for j, n in enumerate(grid.orders):
        r, p = pearson(fm_sys[j], human)
        rows.append({"training": label, "sweep": "order", "dims": "", "order": n, "lambda": 0.0,
                     "pearson": r, "p_value": p})
    for lam_i in lambdas:
        r, p = pearson(combine(am_sys[d0], fm_sys[o0], lam_i), human)
        rows.append({"training": label, "sweep": "lambda", "dims": grid.dims[d0], "order": grid.orders[o0],
                     "lambda": lam_i, "pearson": r, "p_value": p})

    def best(kind: str) -> dict:
        part = [r for r in rows if r["sweep"] == kind and r["pearson"] == r["pearson"]]
        return max(part, key=lambda r: r["pearson"]) if part else {}

    fixed = pearson(combine(am_sys[d0], fm_sys[o0], lam), human)
    lam_cv = cross_validate({l: combine(am_sys[d0], fm_sys[o0], l) for l in lambdas}, human,
                            scheme=cv, k=k, seed=seed)
    joint = {(grid.dims[a], grid.orders[b], l): combine(am_sys[a], fm_sys[b], l)
             for a in range(len(grid.dims)) for b in range(len(grid.orders)) for l in lambdas}
    joint_cv = cross_validate(joint, human, scheme=cv, k=k, seed=seed)
    summary = {
        "training": label, "dims": grid.dims[d0], "order": grid.orders[o0],
        "am": pearson(am_sys[d0], human)[0], "fm": pearson(fm_sys[o0], human)[0],
        "amfm_fixed_lambda": {"lambda": lam, "pearson": fixed[0], "p_value": fixed[1]},
        "amfm_cv_lambda": {"scheme": cv, "pearson": lam_cv.pearson, "p_value": lam_cv.p_value,
                           "chosen": sorted(set(lam_cv.chosen)),
                           "chosen_counts": {str(c): lam_cv.chosen.count(c) for c in set(lam_cv.chosen)}},
        "amfm_cv_dims_order_lambda": {"scheme": cv, "pearson": joint_cv.pearson, "p_value": joint_cv.p_value,
                                      "chosen_counts": {str(c): joint_cv.chosen.count(c)
                                                        for c in set(joint_cv.chosen)}},
        "best_in_sample": {"dims": best("dims").get("dims"), "dims_pearson": best("dims").get("pearson"),
                           "order": best("order").get("order"), "order_pearson": best("order").get("pearson"),
                           "lambda": best("lambda").get("lambda"), "lambda_pearson": best("lambda").get("pearson")},
        "system_scores": {"systems": list(order), "am": am_sys[d0].tolist(), "fm": fm_sys[o0].tolist(),
                          "human": np.asarray(human).tolist()},
        "grid_info": grid.info,
    }
    return rows, summary


def write_outputs(out_dir: str, rows: list[dict], summaries: list[dict]) -> list[str]:
    """CSV, JSON summary and the three PNG curves, each written atomically."""
    from ...data.writers import atomic_write, json_value

    os.makedirs(out_dir, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: (f"{v:.6f}" if isinstance(v, float) and k in ("pearson", "p_value") else v)
                         for k, v in row.items()})
    paths = [os.path.join(out_dir, "amfm_sweep.csv"), os.path.join(out_dir, "amfm_summary.json")]
    with atomic_write(paths[0]) as handle:
        handle.write(buffer.getvalue())
    with atomic_write(paths[1]) as handle:
        json.dump(json_value(summaries), handle, indent=1, default=_jsonable)
    paths += plot(out_dir, rows)
    return paths


def read_outputs(out_dir: str) -> tuple[list[dict], list[dict]]:
    """Rows and summaries of an earlier sweep folder, so runs made separately (one per
    training substitute, in parallel) can be drawn on one set of curves."""
    from ...errors import DialevalError

    try:
        with open(os.path.join(out_dir, "amfm_sweep.csv"), encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        with open(os.path.join(out_dir, "amfm_summary.json"), encoding="utf-8") as handle:
            summaries = json.load(handle)
    except (OSError, ValueError) as exc:
        raise DialevalError(f"{out_dir}: not an AM-FM sweep folder ({exc})") from None
    for row in rows:
        for key in ("pearson", "p_value"):
            row[key] = float(row[key]) if row[key] not in ("", "nan") else float("nan")
    return rows, summaries


def _jsonable(value: Any) -> Any:
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def plot(out_dir: str, rows: list[dict]) -> list[str]:
    from ...optional import require

    matplotlib = require("matplotlib", "drawing the sweep's plots", "amfm")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...data.writers import atomic_write

    specs = [("dims", "dims", "LSI dimension L (log scale)", "AM: Pearson vs L (paper Fig. 1)", True),
             ("order", "order", "n-gram order n", "FM: Pearson vs n (paper Table 2)", False),
             ("lambda", "lambda", "lambda (weight of AM)", "AM-FM: Pearson vs lambda (paper Fig. 2)", False)]
    paths = []
    for sweep, x_key, xlabel, title, logx in specs:
        fig, ax = plt.subplots(figsize=(5.5, 3.8), dpi=110)
        for label in dict.fromkeys(r["training"] for r in rows):
            part = [r for r in rows if r["training"] == label and r["sweep"] == sweep]
            ax.plot([float(r[x_key]) for r in part], [r["pearson"] for r in part], marker="o", label=label)
        if sweep == "order":
            ax.plot(list(PAPER_TABLE2), list(PAPER_TABLE2.values()), "k--", marker="s", label="paper (Table 2)")
        if sweep == "lambda":
            ax.axhline(PAPER_AMFM, color="k", ls="--", lw=1, label="paper, lambda=0.8 (Table 1)")
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("system-level Pearson")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, f"amfm_{sweep}.png")
        with atomic_write(path, "wb") as handle:
            fig.savefig(handle, format="png")
        plt.close(fig)
        paths.append(path)
    return paths
