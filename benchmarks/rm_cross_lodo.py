"""Does the cross-encoder RM (`mme_rm_cross`) earn a place in `compose` / `compose_ref`? Leave one rated set out.

For every local rated set: fit the shipped kind of composition (ridge, weights >= 0, `overall`,
`negative_share` degenerate rows per rated item) on the other sets, once over today's members and
once with `mme_rm_cross` added, score the held-out set with each, and correlate with the set's
main quality (compose_ref among the sets with references). The MME sub-metrics and the
cross-encoder never train on a rated set, so every row is held out. The ridge decides the new
member's weight; the held-out sets decide whether it helps.

    python3 benchmarks/rm_cross_lodo.py --data-root $DATA [--cross-model DIR] [--candidate DIR] [--out DIR]

`--candidate DIR` adds a retrained cross-encoder as the column `mme_rm_cross_new` beside the
shipped one: its own row, compose / compose_ref with it in place of the shipped member, and the
paired differences new - shipped.

`--extra M1,M2` asks whether further metrics earn a place: each gets its own row, and compose /
compose_ref over the shipped members (the cross-encoder: the candidate where one is given) with
and without them, and the paired differences with - without and with - sent_cosine.

`--stand-in QUALITY=ALT,...` adds the compositions over the shipped members (the cross-encoder:
the candidate where one is given, and then the shipped one too, paired with it) fitted as the
`compose` recipe fits since 2026-11-27: every other rated set takes part, a set that does not rate
overall lending its own rating (`fit compose --stand-in`); rows "compose (stand-ins)" and
"compose_ref (stand-ins)", with their paired differences against the four-set fits and sent_cosine;
with `--extra`, the further members are tried on top of these fits instead.

Writes OUT/rm_cross_lodo.md and .json: Spearman with 95% bootstrap CIs, paired differences
(bootstrap over items, averaged over sets), the new member's weights, and the published
evaluators' rows (the comprehensive assessment, Yeh et al. 2021) beside ours. The MME and
reference columns are shared with negatives_lodo.py's cache.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from negatives_lodo import (MME, REFS, cached_columns, dev_set, has_refs,  # noqa: E402
                            held_out_tables, lodo_compose, log, negative_rows, rated_samples)

# Best base-size published evaluator per set, turn level (Yeh et al. 2021, as issue 32 lists them).
PUBLISHED = {"usr-tc": ("USR", 0.423), "usr-pc": ("USL-H", 0.523), "grade-convai2": ("GRADE", 0.571),
             "grade-dailydialog": ("GRADE", 0.253), "grade-empatheticdialogues": ("GRADE", 0.297),
             "fed-turn": ("USL-H", 0.189)}
CROSS = ["mme_rm_cross"]
NEW = "mme_rm_cross_new"


def main() -> None:
    from bench_compose import SETS

    from dialeval.errors import DialevalError
    from dialeval.metrics.registry import metric_spec

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=os.environ.get("DATA", "../shared/data"))
    ap.add_argument("--cross-model", default=None, help="the cross-encoder RM's folder (default: the shipped one)")
    ap.add_argument("--mme-cache", default=os.path.join(HERE, "out", "negatives_lodo", "scores"),
                    help="cached columns of the shipped MME folder ('after') and of the references")
    ap.add_argument("--candidate", default=None,
                    help="a retrained cross-encoder folder, compared with --cross-model (column mme_rm_cross_new)")
    ap.add_argument("--extra", default="", help="comma-separated metrics tried as further members (by name)")
    ap.add_argument("--share", type=float, default=0.25, help="negative_share of every composition")
    ap.add_argument("--stand-in", default="", help="also fit with ComposeModel's stand_in (e.g. "
                    "overall=coherence,engaging,fluency; the quality names as dev_set shares them)")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "rm_cross_lodo"))
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()

    cross_opts = {"mme_cross_model": args.cross_model} if args.cross_model else {}
    extra = [m.strip() for m in args.extra.split(",") if m.strip()]
    try:
        for m in extra:
            metric_spec(m)       # an unknown name stops here, before any set is read
    except DialevalError as exc:
        ap.error(f"--extra: {exc}")
    devs, negs = [], {}
    for name in SETS:
        log(name)
        samples = rated_samples(name, args.data_root)
        negatives = negative_rows(samples)
        cols = {}
        for suffix, rows in (("", samples), (".neg", negatives)):
            got = cached_columns(os.path.join(args.mme_cache, "after", f"{name}{suffix}.npz"), rows, MME, {})
            got.update(cached_columns(os.path.join(args.mme_cache, "refs", f"{name}{suffix}.npz"), rows, REFS, {}))
            got.update(cached_columns(os.path.join(args.out, "scores", f"{name}{suffix}.npz"), rows, CROSS,
                                      cross_opts))
            if args.candidate:
                new = cached_columns(os.path.join(args.out, "scores_candidate", f"{name}{suffix}.npz"), rows,
                                     CROSS, {"mme_cross_model": args.candidate})
                got[NEW] = new[CROSS[0]]
            if extra:
                got.update(cached_columns(os.path.join(args.out, "scores_extra", f"{name}{suffix}.npz"), rows,
                                          extra, {}))
            cols[suffix] = got
        dev = dev_set(name, samples, cols[""])
        devs.append(dev)
        negs[name] = cols[".neg"]

    preds: dict[str, dict[str, np.ndarray]] = {
        "mme_rm": {d.name: d.scores["mme_rm"] for d in devs},
        "mme_rm_cross": {d.name: d.scores["mme_rm_cross"] for d in devs}}
    if args.candidate:
        preds[NEW] = {d.name: d.scores[NEW] for d in devs}
    weights: dict[str, list[float]] = {}
    arms = (("compose (today)", MME), ("compose + mme_rm_cross", MME + CROSS),
            ("compose_ref (today)", MME + REFS), ("compose_ref + mme_rm_cross", MME + REFS + CROSS))
    if args.candidate:
        arms += (("compose + new cross", MME + [NEW]), ("compose_ref + new cross", MME + REFS + [NEW]))
    for label, members in arms:
        watch = next((c for c in (CROSS[0], NEW) if c in members), None)
        preds[label], ws = lodo_compose(devs, members, with_refs_only=label.startswith("compose_ref"),
                                        share=args.share, negatives=negs, watch=watch)
        if watch:
            weights[label] = ws
    cross = [NEW] if args.candidate else CROSS      # the cross-encoder of the stand-in and extra arms
    # with a candidate, the same fits over the shipped cross-encoder too, each paired with its own
    shipped_arm = {"compose (stand-ins)": ("compose (stand-ins, shipped cross)", MME + CROSS),
                   "compose_ref (stand-ins)": ("compose_ref (stand-ins, shipped cross)", MME + REFS + CROSS)}
    if args.stand_in:
        stand_arms = [("compose (stand-ins)", MME + cross), ("compose_ref (stand-ins)", MME + REFS + cross)]
        if args.candidate:
            stand_arms += list(shipped_arm.values())
        for label, members in stand_arms:
            preds[label], _ = lodo_compose(devs, members, with_refs_only=label.startswith("compose_ref"),
                                           share=args.share, negatives=negs, stand_in=args.stand_in)
    if extra:
        tag = "new cross" if args.candidate else "mme_rm_cross"
        for m in extra:
            preds[m] = {d.name: d.scores[m] for d in devs if np.isfinite(d.scores[m]).any()}
        bases = ((f"compose + {tag}", MME + cross), (f"compose_ref + {tag}", MME + REFS + cross))
        if args.stand_in:       # the extra members are tried on top of the stand-in fits
            bases = (("compose (stand-ins)", MME + cross), ("compose_ref (stand-ins)", MME + REFS + cross))
        for label, members in bases:
            if label not in preds:
                preds[label], _ = lodo_compose(devs, members, with_refs_only=label.startswith("compose_ref"),
                                               share=args.share, negatives=negs, stand_in=args.stand_in)
            plus = f"{label} + {'+'.join(extra)}"
            preds[plus], ws = lodo_compose(devs, members + extra, with_refs_only=label.startswith("compose_ref"),
                                           share=args.share, negatives=negs, watch=tuple(extra),
                                           stand_in=args.stand_in)
            weights.update({f"{plus}: {m}": w for m, w in ws.items()})
    preds["sent_cosine"] = {d.name: d.scores["sent_cosine"] for d in devs if has_refs(d)}

    pairs = [("mme_rm_cross", "mme_rm"),
             ("compose + mme_rm_cross", "compose (today)"), ("compose + mme_rm_cross", "sent_cosine"),
             ("compose (today)", "sent_cosine"),
             ("compose_ref + mme_rm_cross", "compose_ref (today)"), ("compose_ref + mme_rm_cross", "sent_cosine"),
             ("compose_ref (today)", "sent_cosine")]
    if args.candidate:
        pairs += [(NEW, "mme_rm_cross"), ("compose + new cross", "compose + mme_rm_cross"),
                  ("compose + new cross", "sent_cosine"), ("compose_ref + new cross", "compose_ref (today)"),
                  ("compose_ref + new cross", "compose_ref + mme_rm_cross"), ("compose_ref + new cross", "sent_cosine")]
    if extra:
        for label, _ in bases:
            plus = f"{label} + {'+'.join(extra)}"
            pairs += [(plus, label), (plus, "sent_cosine")]
    if args.stand_in:
        pairs += [("compose (stand-ins)", "compose + mme_rm_cross"), ("compose (stand-ins)", "sent_cosine"),
                  ("compose_ref (stand-ins)", "compose_ref + mme_rm_cross"), ("compose_ref (stand-ins)", "sent_cosine")]
        if args.candidate:
            pairs += [(label, shipped) for label, (shipped, _) in shipped_arm.items()]
    table, diffs, lines = held_out_tables(preds, devs, pairs, args.n_boot)
    lines += ["", "| composition (: member) | the new member's weight in the 'overall' fit, per held-out set (min / mean / max) |",
              "|---|---|"]
    for label, ws in weights.items():
        lines.append(f"| {label} | {min(ws):.3f} / {np.mean(ws):.3f} / {max(ws):.3f} |")
    lines += ["", "| set | best published of base size | compose today / + mme_rm_cross | "
                  "compose_ref today / + mme_rm_cross |" + (" compose / compose_ref + new cross |" if args.candidate else "")
              + (" compose / compose_ref (stand-ins) |" if args.stand_in else ""),
              "|---|---|---|---|" + ("---|" if args.candidate else "") + ("---|" if args.stand_in else "")]
    for name, (who, r) in PUBLISHED.items():
        def cell(a: str, b: str) -> str:
            got = [table.get(label, {}).get(name) for label in (a, b)]
            return " / ".join(f"{g['r']:.3f}" if g else "-" for g in got)

        lines.append(f"| {name} | {who} {r:.3f} | {cell('compose (today)', 'compose + mme_rm_cross')} | "
                     f"{cell('compose_ref (today)', 'compose_ref + mme_rm_cross')} |"
                     + (f" {cell('compose + new cross', 'compose_ref + new cross')} |" if args.candidate else "")
                     + (f" {cell('compose (stand-ins)', 'compose_ref (stand-ins)')} |" if args.stand_in else ""))
    text = "\n".join(lines)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "rm_cross_lodo.md"), "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    with open(os.path.join(args.out, "rm_cross_lodo.json"), "w", encoding="utf-8") as handle:
        json.dump({"rows": table, "differences": diffs, "weights": weights, "share": args.share,
                   **({"stand_in": args.stand_in} if args.stand_in else {})},
                  handle, indent=1, default=float)


if __name__ == "__main__":
    main()
