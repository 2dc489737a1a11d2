"""Pairwise verdicts between systems that answered the same items (MT-Bench, AlpacaEval,
Chatbot Arena do it this way): a judge says which of two replies is better, asked in both orders.

- **Items and comparisons.** Rows pair across systems by `meta.pairing`'s keys (`--pair-by`);
  every item two systems both answered gives one comparison of the two, asked twice: a's reply
  shown first, then b's. `max_items` keeps a seeded sample of the items (the judge is the cost).
- **Verdict.** Each order gives P(the reply shown first is better). The order-free preference
  for a is the mean of P(a | a first) and 1 - P(first | b first). A **win** needs both orders
  to pick the same reply; orders that disagree (the judge picked the same *position* twice) are
  a **tie** and count as position-biased. The position-bias rate is their share; the
  first-position rate is the share of single-order verdicts that picked the reply shown first
  (0.5: no liking for either position).
- **Win rates.** a's win rate against b is (wins + ties / 2) / comparisons; a system's overall
  win rate pools all its comparisons. 95% CIs are percentile bootstrap intervals over items
  (`meta.resampling`'s draws, sacreBLEU's seed by default): one item's comparisons move together.
- **Bradley-Terry.** P(i beats j) = s_i / (s_i + s_j), fitted by Hunter's (2004) MM iterations
  to the wins (a tie half a win each), with one virtual tie per compared pair so that a system
  that won or lost everything keeps a finite strength. Strengths are reported as log s, centred
  to mean 0, with bootstrap CIs from refitting on each resample; the ranking orders them.
- **Agreement with people.** Where the rows carry ratings, each comparison whose two replies
  got different mean ratings is a human preference; a measure agrees when it prefers the same
  reply (1), disagrees (0) or ties (1/2). The judge is measured both ways (both orders agreeing,
  and its order-free preference), and every metric of the rows by which reply it scores higher,
  on the same comparisons, with bootstrap CIs over items.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import DialevalError
from .human import human_value
from .pairing import resolve_pair_by
from .resampling import DEFAULT_SEED, estimate_ci, resample_counts

BT_PRIOR = 0.5          # virtual wins each way per compared pair (one virtual tie)
BT_ITERATIONS = 500
BT_TOLERANCE = 1e-10


@dataclass
class Plan:
    """Which comparisons to ask: the items (rows per system) and (item, a, b) triples."""

    pair_by: str
    systems: list[str]
    items: list[dict[str, int]]                 # system -> row index, per item
    comparisons: list[tuple[int, str, str]]     # (item, a, b), a before b in `systems`
    n_items_all: int


def plan_comparisons(rows: Sequence[dict], *, pair_by: str = "auto", systems: Sequence[str] | None = None,
                     max_items: int | None = None, seed: int = 0) -> Plan:
    """Every pair of systems on every item both answered (items answered by one system only
    compare nothing); `systems` restricts and orders them; `max_items` keeps a seeded sample
    of the items, in their order."""
    rows = list(rows)
    if not rows:
        raise DialevalError("no rows to compare")
    system_of = [r.get("system") if r.get("system") is not None else "all" for r in rows]
    every = list(dict.fromkeys(system_of))
    if systems:
        unknown = [s for s in systems if s not in every]
        if unknown:
            raise DialevalError(f"--pairwise-systems: {unknown[0]!r} is not a system of the file "
                                f"(systems: {', '.join(every[:10])})")
        chosen = list(dict.fromkeys(systems))
    else:
        chosen = every
    if len(chosen) < 2:
        raise DialevalError(f"pairwise verdicts need two systems or more; the rows have {len(chosen)}"
                            + (f" ({chosen[0]})" if chosen else ""))
    pair_by, keys = resolve_pair_by(rows, pair_by, system_of)
    by_key: dict[Any, dict[str, int]] = {}
    for i, (s, k) in enumerate(zip(system_of, keys)):
        if s in chosen:
            by_key.setdefault(k, {}).setdefault(s, i)
    items = [v for v in by_key.values() if len(v) >= 2]
    n_all = len(items)
    if not items:
        raise DialevalError(f"no item was answered by two of the systems (items paired by {pair_by}); "
                            "give the rows an `item` field or choose --pair-by")
    if max_items is not None and max_items < len(items):
        if max_items < 1:
            raise DialevalError("--pairwise-max-items must be 1 or more")
        keep = np.sort(np.random.default_rng(seed).choice(len(items), size=max_items, replace=False))
        items = [items[i] for i in keep]
    order = {s: j for j, s in enumerate(chosen)}
    comparisons = []
    for t, item in enumerate(items):
        present = sorted(item, key=order.__getitem__)
        comparisons += [(t, a, b) for x, a in enumerate(present) for b in present[x + 1:]]
    return Plan(pair_by, chosen, items, comparisons, n_all)


ASK_CHUNK = 16      # prompts per call to the judge: the unit of progress, nothing else (each
                    # prompt is scored on its own, so the values do not depend on it)


def ask_judge(judge, rows: Sequence[dict], plan: Plan, progress: bool | None = False) -> tuple[np.ndarray, np.ndarray]:
    """(P(a better | a shown first), P(shown first better | b shown first)) per comparison.
    `progress`: as the engine's (None: a bar on a terminal, a line every 15 s in a log; False:
    silent), counted in prompts, since a local judge takes seconds per prompt."""
    from ..progress import Progress, default_mode
    contexts, firsts, seconds, refs = [], [], [], []
    for t, a, b in plan.comparisons:
        ra, rb = rows[plan.items[t][a]], rows[plan.items[t][b]]
        context = list(ra.get("context") or [])
        references = list(ra.get("references") or [])
        for x, y in ((ra, rb), (rb, ra)):
            contexts.append(context)
            refs.append(references)
            firsts.append(str(x.get("response") or ""))
            seconds.append(str(y.get("response") or ""))
    parts = []
    bar = Progress(len(firsts), default_mode(progress), unit="prompt")
    try:
        for lo in range(0, len(firsts), ASK_CHUNK):
            hi = lo + ASK_CHUNK
            parts.append(judge.prefer_first(contexts[lo:hi], firsts[lo:hi], seconds[lo:hi], refs[lo:hi]))
            bar.advance(len(parts[-1]))
    finally:
        bar.close()
    p = np.concatenate(parts) if parts else np.zeros(0)
    return p[0::2], p[1::2]


def verdicts(p_ab: np.ndarray, p_ba: np.ndarray) -> dict[str, np.ndarray]:
    """Per comparison: `score` of a (1 win, 0.5 tie, 0 loss; NaN: a served judge named neither
    reply in an order), `biased` (the orders disagreed), `soft` (a's order-free preference) and
    `first` (how many of the two orders picked the reply shown first)."""
    p_ab, p_ba = np.asarray(p_ab, dtype=np.float64), np.asarray(p_ba, dtype=np.float64)
    read = np.isfinite(p_ab) & np.isfinite(p_ba)
    a_first = np.sign(p_ab - 0.5)          # +1: a (shown first) picked; 0: no choice
    a_second = -np.sign(p_ba - 0.5)        # +1: a (shown second) picked
    both = a_first + a_second              # 2: a twice, -2: b twice, else no agreement
    score = np.where(both >= 2, 1.0, np.where(both <= -2, 0.0, 0.5))
    score[~read] = np.nan
    biased = read & (np.abs(both) < 2) & (a_first != 0) & (a_second != 0)
    soft = (p_ab + (1.0 - p_ba)) / 2.0
    first = (p_ab > 0.5).astype(float) + (p_ba > 0.5).astype(float)
    first[~read] = np.nan
    return {"score": score, "biased": biased, "soft": soft, "first": first, "read": read}


def bradley_terry(wins: np.ndarray, prior: float = BT_PRIOR) -> np.ndarray:
    """Log-strengths (mean 0) from win matrices `wins[..., i, j]` (i's wins over j, ties as half
    a win each), batched over leading axes; `prior` virtual wins each way per compared pair."""
    w = np.asarray(wins, dtype=np.float64)
    k = w.shape[-1]
    compared = (w + np.swapaxes(w, -1, -2)) > 0
    w = w + prior * compared
    n = w + np.swapaxes(w, -1, -2)
    won = w.sum(axis=-1)
    p = np.ones(w.shape[:-1])
    eye = np.eye(k, dtype=bool)
    for _ in range(BT_ITERATIONS):
        denom = np.where(eye | (n == 0), 0.0, n / (p[..., :, None] + p[..., None, :] + 1e-300)).sum(axis=-1)
        new = np.where(denom > 0, won / np.where(denom > 0, denom, 1.0), p)
        new = new / np.exp(np.log(np.maximum(new, 1e-300)).mean(axis=-1, keepdims=True))
        done = np.max(np.abs(new - p)) < BT_TOLERANCE
        p = new
        if done:
            break
    theta = np.log(np.maximum(p, 1e-300))
    return theta - theta.mean(axis=-1, keepdims=True)


@dataclass
class PairwiseResult:
    signature: str
    pair_by: str
    systems: list[str]
    n_items: int
    n_items_all: int
    n_comparisons: int
    n_resamples: int
    seed: int | None
    pairs: list[dict] = field(default_factory=list)
    standings: list[dict] = field(default_factory=list)
    position_bias: dict = field(default_factory=dict)
    agreement: list[dict] = field(default_factory=list)
    agreement_quality: str | None = None
    comparisons: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"kind": "dialeval-pairwise", "signature": self.signature, "pair_by": self.pair_by,
                "systems": self.systems, "n_items": self.n_items, "n_items_all": self.n_items_all,
                "n_comparisons": self.n_comparisons, "n_resamples": self.n_resamples, "seed": self.seed,
                "pairs": self.pairs, "standings": self.standings, "position_bias": self.position_bias,
                "agreement_quality": self.agreement_quality, "agreement": self.agreement,
                "comparisons": self.comparisons, "notes": self.notes}


def summarise(plan: Plan, p_ab: np.ndarray, p_ba: np.ndarray, *, signature: str = "pairwise",
              n_resamples: int = 1000, seed: int | None = DEFAULT_SEED, rows: Sequence[dict] | None = None,
              human: str | None = None, metrics: Sequence[str] = ()) -> PairwiseResult:
    """Win/tie/loss per pair of systems, win rates with CIs, the Bradley-Terry standings, the
    position bias, and (with `rows` and `human`) agreement with human preferences."""
    v = verdicts(p_ab, p_ba)
    systems = plan.systems
    k, n_items = len(systems), len(plan.items)
    index = {s: j for j, s in enumerate(systems)}
    item = np.array([t for t, _, _ in plan.comparisons], dtype=np.int64)
    ia = np.array([index[a] for _, a, _ in plan.comparisons], dtype=np.int64)
    ib = np.array([index[b] for _, _, b in plan.comparisons], dtype=np.int64)
    read = v["read"]
    counts = resample_counts(n_items, n_resamples, seed)        # (R, items)
    weight = counts[:, item] * read                               # (R, comparisons)
    score = np.nan_to_num(v["score"])
    result = PairwiseResult(signature=signature, pair_by=plan.pair_by, systems=list(systems), n_items=n_items,
                            n_items_all=plan.n_items_all, n_comparisons=len(plan.comparisons),
                            n_resamples=n_resamples, seed=seed)
    if plan.n_items_all > n_items:
        result.notes.append(f"{n_items} of the {plan.n_items_all} items two systems or more answered "
                            "were judged (--pairwise-max-items)")
    unread = int((~read).sum())
    if unread:
        result.notes.append(f"{unread} comparison(s) without a verdict (the served judge's answers named "
                            "neither reply in an order): left out of every count")

    def ratio(num_w: np.ndarray, den_w: np.ndarray, num: float, den: float) -> tuple[float, float, float]:
        value = num / den if den else math.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = num_w / den_w
        _, low, high = estimate_ci(boot)
        return value, low, high

    for x, a in enumerate(systems):
        for b in systems[x + 1:]:
            sel = (ia == index[a]) & (ib == index[b]) & read
            n = int(sel.sum())
            if not n:
                continue
            s = score[sel]
            wins, losses = int((s == 1.0).sum()), int((s == 0.0).sum())
            rate, low, high = ratio(weight[:, sel] @ s, weight[:, sel].sum(axis=1), float(s.sum()), float(n))
            result.pairs.append({"a": a, "b": b, "n": n, "wins": wins, "ties": n - wins - losses,
                                 "losses": losses, "win_rate": rate, "ci_low": low, "ci_high": high,
                                 "position_bias": float(v["biased"][sel].mean()),
                                 "soft_preference": float(np.nanmean(v["soft"][sel]))})
    # Bradley-Terry on the observed wins, and on each resample
    def win_matrix(w: np.ndarray) -> np.ndarray:          # w: (..., comparisons) weights
        m = np.zeros(w.shape[:-1] + (k, k))
        np.add.at(np.moveaxis(m, (-2, -1), (0, 1)), (ia, ib), np.moveaxis(w * score, -1, 0))
        np.add.at(np.moveaxis(m, (-2, -1), (0, 1)), (ib, ia), np.moveaxis(w * (1.0 - score), -1, 0))
        return m
    theta = bradley_terry(win_matrix(read.astype(float)))
    theta_boot = bradley_terry(win_matrix(weight))
    for j, s in enumerate(systems):
        mine_a, mine_b = (ia == j) & read, (ib == j) & read
        own = np.where(mine_a, score, 0.0) + np.where(mine_b, 1.0 - score, 0.0)
        mask = (mine_a | mine_b).astype(float)
        rate, low, high = ratio((weight * own) @ np.ones(len(own)), (weight * mask).sum(axis=1),
                                float(own.sum()), float(mask.sum()))
        _, bt_low, bt_high = estimate_ci(theta_boot[:, j])
        result.standings.append({"system": s, "n": int(mask.sum()), "win_rate": rate, "ci_low": low,
                                 "ci_high": high, "bt": float(theta[j]), "bt_ci_low": bt_low,
                                 "bt_ci_high": bt_high, "bt_vs_mean": float(1 / (1 + math.exp(-theta[j])))})
    result.standings.sort(key=lambda r: -r["bt"])
    for rank, r in enumerate(result.standings, 1):
        r["rank"] = rank
    n_read = int(read.sum())
    result.position_bias = {
        "n": n_read, "rate": float(v["biased"][read].mean()) if n_read else math.nan,
        "first_rate": float(np.nanmean(v["first"][read]) / 2) if n_read else math.nan,
        "consistent": int(((score == 1.0) | (score == 0.0))[read].sum())}
    result.comparisons = [{"item": int(t), "a": a, "b": b, "p_a_first": _f(p_ab[c]), "p_first_b_first": _f(p_ba[c]),
                           "score_a": _f(v["score"][c]), "soft_a": _f(v["soft"][c])}
                          for c, (t, a, b) in enumerate(plan.comparisons)]
    if rows is not None and human:
        result.agreement_quality = human
        result.agreement = human_agreement(rows, plan, v, human, metrics, counts)
    return result


def _f(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def preference_credit(diff_measure: np.ndarray, diff_human: np.ndarray) -> np.ndarray:
    """1 where a measure prefers the reply people rated higher, 0 the other, 1/2 a tie (or no
    value); `diff_*` are a-minus-b differences."""
    d = np.where(np.isfinite(diff_measure), np.sign(diff_measure), 0.0)
    return np.where(d == 0, 0.5, (d == np.sign(diff_human)).astype(float))


def human_agreement(rows: Sequence[dict], plan: Plan, v: dict[str, np.ndarray], quality: str,
                    metrics: Sequence[str], counts: np.ndarray) -> list[dict]:
    """Share of human-decided comparisons on which each measure prefers the reply people rated
    higher, with a bootstrap CI over items."""
    ha = np.array([human_value(rows[plan.items[t][a]], quality) for t, a, _ in plan.comparisons])
    hb = np.array([human_value(rows[plan.items[t][b]], quality) for t, _, b in plan.comparisons])
    decided = np.isfinite(ha) & np.isfinite(hb) & (ha != hb)
    if not decided.any():
        raise DialevalError(f"no two replies to one item have different {quality!r} ratings: no human "
                            "preference to agree with")
    item = np.array([t for t, _, _ in plan.comparisons], dtype=np.int64)
    dh = (ha - hb)[decided]
    weight = counts[:, item[decided]]
    measures: list[tuple[str, np.ndarray]] = [
        ("judge (both orders)", np.nan_to_num(v["score"], nan=0.5)[decided] - 0.5),
        ("judge (order-free)", v["soft"][decided] - 0.5)]
    for m in metrics:
        sa = np.array([_score(rows[plan.items[t][a]], m) for t, a, _ in plan.comparisons])
        sb = np.array([_score(rows[plan.items[t][b]], m) for t, _, b in plan.comparisons])
        measures.append((m, (sa - sb)[decided]))
    out = []
    for name, diff in measures:
        credit = preference_credit(diff, dh)
        value = float(credit.mean())
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = (weight @ credit) / weight.sum(axis=1)
        _, low, high = estimate_ci(boot)
        out.append({"measure": name, "n": int(decided.sum()), "agreement": value, "ci_low": low, "ci_high": high,
                    "ties": int((credit == 0.5).sum())})
    return out


def _score(row: dict, metric: str) -> float:
    value = (row.get("scores") or {}).get(metric)
    try:
        return float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


__all__ = ["Plan", "PairwiseResult", "ask_judge", "bradley_terry", "human_agreement", "plan_comparisons",
           "preference_credit", "summarise", "verdicts"]
