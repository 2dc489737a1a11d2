"""Training negatives, before and after: `mme_rm`, `compose` and `compose_ref` leave one rated set out.

"Before" is an MME folder and compositions fitted without training negatives (today's recipe);
"after" is an MME folder whose RM trained against probe families and compositions fitted with
`negative_share` degenerate rows per rated item (`fit compose --negative-share`). Every row is
held out: the MME sub-metrics never see a rated set, and each composition is fitted on the other
sets (compose_ref only among the sets with references), then scored on the held-out one.

    python3 benchmarks/negatives_lodo.py --data-root $DATA --before-mme OLD_MME --after-mme NEW_MME

Writes OUT/negatives_lodo.md and .json: turn-level Spearman with each set's main quality, 95%
bootstrap CIs over items, the mean over sets, and paired mean differences (bootstrap over items,
averaged over sets) of each "after" row against its "before" row and against sent_cosine.
Scores are cached per set under OUT/scores/<tag>/ (one column per metric; a column is scored once).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "src"))

MME = ["mme_fm", "mme_rm", "mme_tcm", "mme_em", "mme_sm_nll"]
REFS = ["sent_cosine", "bertscore_f"]
NEGATIVE_ITEMS = 150      # rated items per set whose variants are scored (the fit draws share x items)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cached_columns(path: str, rows, metrics: list[str], options: dict) -> dict[str, np.ndarray]:
    """Columns of `metrics` on `rows`, from the npz at `path`, scoring only the missing ones."""
    from dialeval.scoring import score

    have = dict(np.load(path)) if os.path.exists(path) else {}
    todo = [m for m in metrics if m not in have]
    if todo:
        t0 = time.process_time()
        result = score(rows, todo, progress=False, **options)
        for m in todo:
            have[m] = np.asarray(result.sentence[m], dtype=float)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        np.savez(path, **have)
        log(f"  {os.path.basename(path)}: {len(rows)} rows, {', '.join(todo)}: {time.process_time() - t0:.1f} CPU s")
    return {m: have[m] for m in metrics}


def negative_rows(samples, seed: int = 0, families=None):
    """The training negatives' rows for one set: variants of up to NEGATIVE_ITEMS items outside
    the probes' top 40% (what `fit compose --negative-share` makes, on a seeded subset); the
    shipped families unless `families` (a comma-separated string) says otherwise. The subset of
    items does not depend on the families."""
    from dialeval.meta.probes import TRAINING_FAMILIES, negative_samples

    rows = negative_samples(samples, families or TRAINING_FAMILIES, seed=seed)
    rng = np.random.default_rng(seed)
    items = sorted({r.id for r in rows})
    keep = set(items) if len(items) <= NEGATIVE_ITEMS else set(rng.choice(items, NEGATIVE_ITEMS, replace=False))
    return [r for r in rows if r.id in keep]


def has_refs(dev) -> bool:
    """Whether a scored set has references (its sent_cosine column is not all NaN)."""
    return bool(np.isfinite(dev.scores["sent_cosine"]).any())


def lodo_compose(devs, members: list[str], *, with_refs_only: bool = False, share: float = 0.0,
                 negatives: dict | None = None, watch: str | None = None, stand_in: str = "", extra=()):
    """Held-out predictions of the shipped kind of composition (ridge, weights >= 0, `overall`):
    for each set of `devs` (only those with references when `with_refs_only`), fitted on the
    others with `share` degenerate rows per item from `negatives` (and, with `stand_in`, the sets
    that do not rate overall lending their own rating: `ComposeModel.stand_in`). Returns ({set: prediction},
    [the `watch` member's weight per held-out set]); a tuple of members as `watch` gives
    {member: [weight per held-out set]} from the same fits. `extra` sets join every fit and are
    never held out (a set that may be trained on but has no turn-level ratings to judge by)."""
    from dialeval.metrics.compose.model import ComposeModel

    pool = [d for d in devs if not with_refs_only or has_refs(d)]
    watched = (watch,) if isinstance(watch, str) else tuple(watch or ())
    preds, weights = {}, {m: [] for m in watched}
    for k, d in enumerate(pool):
        rest = [x for j, x in enumerate(pool) if j != k] + list(extra)
        model = ComposeModel(method="ridge", positive=True, seed=0, negative_share=share, stand_in=stand_in)
        model.fit(rest, members, ["overall"], negatives=negatives if share else None)
        preds[d.name] = model.predict(d.scores, "overall")
        for m in watched:
            weights[m].append(model.weights_for("overall")[m])
    return preds, (weights[watch] if isinstance(watch, str) else weights if watch else [])


QUALITY_ALIAS = {"engagement": "engaging", "fluent": "fluency"}   # one name per quality across sets


def rated_samples(name: str, data_root: str) -> list:
    """A local rated set's samples as every leave-one-set-out benchmark reads them: the systems
    whose response is the reference left out."""
    from bench_compose import EXCLUDE, SETS

    from dialeval.data.datasets import load_dataset

    return [s for s in load_dataset(name, os.path.join(data_root, SETS[name])).samples
            if s.system not in EXCLUDE.get(name, ())]


def dev_set(name: str, samples, columns: dict):
    """The set as a composition's development set, its qualities under their shared names."""
    from dialeval.metrics.compose.model import DevSet

    dev = DevSet.from_samples(name, samples, columns)
    dev.human = {QUALITY_ALIAS.get(q, q): v for q, v in dev.human.items()}
    return dev


def main_quality(dev) -> str:
    """The set's main quality: overall where rated, else its first."""
    return "overall" if "overall" in dev.human else sorted(dev.human)[0]


def held_out_rows(preds: dict[str, dict[str, np.ndarray]], devs, n_boot: int):
    """(table, rows) of held-out predictions: table[label][set] holds the Spearman with the set's
    main quality and its 95% bootstrap CI; rows are the `HeldOut`s that paired differences read."""
    from dialeval.meta.compose_eval import HeldOut
    from dialeval.meta.correlation import correlate

    by_name = {d.name: d for d in devs}
    held: list = []
    table: dict[str, dict] = {}
    for label, by_set in preds.items():
        for name, pred in by_set.items():
            d = by_name[name]
            q = main_quality(d)
            c = correlate(pred, d.human[q], methods=["spearman"], n_boot=n_boot, seed=0)[0]
            table.setdefault(label, {})[name] = {"quality": q, "r": c.r, "lo": c.ci_low, "hi": c.ci_high, "n": c.n}
            held.append(HeldOut(name, q, label, c.r, c.n, False, np.asarray(pred, float), np.asarray(d.human[q], float)))
    return table, held


def held_out_tables(preds: dict[str, dict[str, np.ndarray]], devs, pairs, n_boot: int):
    """(rows, paired differences, markdown lines) of held-out predictions: per label and set the
    Spearman with the set's main quality and its 95% bootstrap CI, the mean over sets, and for
    each (a, b) in `pairs` the paired mean difference a - b (bootstrap over items)."""
    from dialeval.meta.compose_eval import paired_mean_difference

    table, held = held_out_rows(preds, devs, n_boot)
    names = [d.name for d in devs]
    lines = ["| metric | " + " | ".join(names) + " | mean |", "|---|" + "---|" * (len(names) + 1)]
    for label, got in table.items():
        cells = [f"{got[s]['r']:.3f} [{got[s]['lo']:.2f}, {got[s]['hi']:.2f}]" if s in got else "" for s in names]
        vals = [got[s]["r"] for s in names if s in got and math.isfinite(got[s]["r"])]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | **{np.mean(vals):.3f}** ({len(vals)}) |")
    lines += ["", "| paired difference (mean over the sets both score) | sets | mean | 95% CI | wins |",
              "|---|---:|---:|---|---:|"]
    diffs = {}
    for a, b in pairs:
        diff = paired_mean_difference(held, a, b, n_boot=n_boot, seed=0)
        diffs[f"{a} - {b}"] = diff.to_dict()
        lines.append(f"| {a} - {b} | {diff.pairs} | {diff.mean_diff:+.3f} | [{diff.ci_low:+.3f}, {diff.ci_high:+.3f}] | "
                     f"{diff.wins}/{diff.pairs} |")
    return table, diffs, lines


def write_report(out: str, stem: str, lines: list[str], payload: dict) -> None:
    """Print the markdown `lines` and write them to OUT/STEM.md, with `payload` as OUT/STEM.json."""
    text = "\n".join(lines)
    print(text)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{stem}.md"), "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    with open(os.path.join(out, f"{stem}.json"), "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=1, default=float)


def main() -> None:
    from bench_compose import SETS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=os.environ.get("DATA", "../shared/data"))
    ap.add_argument("--before-mme", required=True, help="MME folder without RM hard negatives")
    ap.add_argument("--after-mme", required=True, help="MME folder with RM hard negatives")
    ap.add_argument("--share", type=float, default=0.25, help="negative_share of the 'after' compositions")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "negatives_lodo"))
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()

    devs: dict[str, list] = {"before": [], "after": []}
    negs: dict[str, dict] = {"before": {}, "after": {}}
    for name in SETS:
        log(f"{name}")
        samples = rated_samples(name, args.data_root)
        negatives = negative_rows(samples)
        refs = cached_columns(os.path.join(args.out, "scores", "refs", f"{name}.npz"), samples, REFS, {})
        neg_refs = cached_columns(os.path.join(args.out, "scores", "refs", f"{name}.neg.npz"), negatives, REFS, {})
        for tag, folder in (("before", args.before_mme), ("after", args.after_mme)):
            cols = cached_columns(os.path.join(args.out, "scores", tag, f"{name}.npz"), samples, MME,
                                  {"mme_model": folder})
            dev = dev_set(name, samples, {**cols, **refs})
            devs[tag].append(dev)
            if tag == "after":
                ncols = cached_columns(os.path.join(args.out, "scores", tag, f"{name}.neg.npz"), negatives, MME,
                                       {"mme_model": folder})
                negs[tag][name] = {**ncols, **neg_refs}

    preds: dict[str, dict[str, np.ndarray]] = {}
    for tag in ("before", "after"):
        preds[f"mme_rm ({tag})"] = {d.name: d.scores["mme_rm"] for d in devs[tag]}
        share = args.share if tag == "after" else 0.0
        for label, members in (("compose", MME), ("compose_ref", MME + REFS)):
            preds[f"{label} ({tag})"], _ = lodo_compose(devs[tag], members, with_refs_only=label == "compose_ref",
                                                        share=share, negatives=negs[tag])
    preds["sent_cosine"] = {d.name: d.scores["sent_cosine"] for d in devs["before"] if has_refs(d)}

    pairs = [(a, b) for label in ("mme_rm", "compose", "compose_ref")
             for a, b in ((f"{label} (after)", f"{label} (before)"), (f"{label} (after)", "sent_cosine"),
                          (f"{label} (before)", "sent_cosine"))
             if not (label == "mme_rm" and b == "sent_cosine")]
    table, diffs, lines = held_out_tables(preds, devs["before"], pairs, args.n_boot)
    write_report(args.out, "negatives_lodo", lines, {"rows": table, "differences": diffs, "share": args.share})


if __name__ == "__main__":
    main()
