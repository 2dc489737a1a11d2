"""The shipped compositions against the published evaluators, the issue's filing-day defaults and
sent_cosine, one rated set held out at a time: the scorecard of issue 32 in one run.

Three recipes are fitted leave-one-set-out, exactly as they are built:

- `compose` and `compose_ref` as shipped: ridge >= 0 over the shipped MME sub-metrics and the
  cross-encoder RM (compose_ref also sent_cosine and BERTScore), 0.25 degenerate rows per rated
  item, `compose` with every other set lending a stand-in for overall;
- the same two as they were when the issue was filed: ridge >= 0 over the five sub-metrics of the
  MME folder of that day, no degenerate rows, only the sets that rate overall.

Every column is scored by the models themselves (none ever trained on a rated set) and cached per
folder hash, so a later run with other folders never reads stale columns. The filing-day folder
is the models package as of the issue's filing, taken from the repository's history:

    git archive 6cf0c24^ packages/dialeval-models/src/dialeval_models | tar -x -C /tmp/filing
    python3 benchmarks/published_scorecard.py --data-root $DATA \
        --filing-models /tmp/filing/packages/dialeval-models/src/dialeval_models

`--fit-also NAME:FOLDER` adds a rated set to every fit of one more arm, `compose` with it, and
never holds it out (ConvAI2 wild-eval, whose one rating per dialogue is lent to the dialogue's
last reply): whether its ratings help the held-out sets is the paired difference against
`compose`.

Writes OUT/published_scorecard.md and .json: per set, each row's turn-level Spearman with its 95%
bootstrap CI, the best published evaluator of base size (Yeh et al. 2021, as the issue lists
them), and the paired differences (bootstrap over items) against sent_cosine and against the
filing-day recipe; then the means over sets with their paired CIs. "reached?" compares the
points: "yes" where ours is at or above the published value, "below; inside our CI" where it is
below but the published value lies inside our 95% CI, "no" where it lies above the CI. About 6 minutes on two cores
from an empty cache (5:53 measured), under a minute once cached.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from negatives_lodo import (MME, REFS, cached_columns, dev_set, has_refs, held_out_rows,  # noqa: E402
                            lodo_compose, log, negative_rows, rated_samples, write_report)
from rm_cross_lodo import PUBLISHED  # noqa: E402

CROSS = "mme_rm_cross"
STAND_IN = "overall=coherence,engaging,fluency"     # what the shipped compose recipe lends (recipes/table.py)
SHARE = 0.25


def folder_tag(folder: str) -> str:
    """A cache key for a model folder: the first 12 hex of its manifest's hash."""
    from dialeval.models.defaults import model_digest

    return model_digest(folder)[:12]


def shipped(name: str) -> str:
    """The installed default folder `name`, or a one-line stop."""
    from dialeval.models.defaults import default_model_dir

    folder = default_model_dir(name)
    if folder is None:
        raise SystemExit(f"published_scorecard: the default model {name!r} is not installed (bash install.sh)")
    return folder


def main() -> None:
    from bench_compose import SETS

    from dialeval.errors import DialevalError
    from dialeval.meta.compose_eval import paired_mean_difference

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=os.environ.get("DATA", "../shared/data"))
    ap.add_argument("--filing-models", required=True,
                    help="the models package folder as of the issue's filing (see the module doc)")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "published_scorecard"))
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--fit-also", action="append", default=[], metavar="NAME:FOLDER",
                    help="a rated set in every fit of an extra `compose` arm, never held out (repeatable)")
    args = ap.parse_args()

    filing_mme = os.path.join(args.filing_models, "mme")
    if not os.path.isfile(os.path.join(filing_mme, "manifest.json")):
        raise SystemExit(f"published_scorecard: {filing_mme}: no MME folder (manifest.json) there")
    mme, cross = shipped("mme"), shipped("mme_cross")
    tags = {"now": f"mme-{folder_tag(mme)}", "cross": f"cross-{folder_tag(cross)}",
            "filing": f"mme-{folder_tag(filing_mme)}"}
    cache = os.path.join(args.out, "scores")

    devs = {"now": [], "filing": []}
    negs: dict[str, dict] = {}
    for name in SETS:
        log(name)
        try:
            samples = rated_samples(name, args.data_root)
        except DialevalError as exc:
            raise SystemExit(f"published_scorecard: {exc}")
        negatives = negative_rows(samples)

        def cols(tag: str, rows, metrics, options, suffix=""):
            return cached_columns(os.path.join(cache, tag, f"{name}{suffix}.npz"), rows, metrics, options)

        refs = cols("refs", samples, REFS, {})
        now = {**cols(tags["now"], samples, MME, {"mme_model": mme}),
               **cols(tags["cross"], samples, [CROSS], {"mme_cross_model": cross})}
        devs["now"].append(dev_set(name, samples, {**now, **refs}))
        devs["filing"].append(dev_set(name, samples, {**cols(tags["filing"], samples, MME, {"mme_model": filing_mme}),
                                                      **refs}))
        negs[name] = {**cols(tags["now"], negatives, MME, {"mme_model": mme}, ".neg"),
                      **cols(tags["cross"], negatives, [CROSS], {"mme_cross_model": cross}, ".neg"),
                      **cols("refs", negatives, REFS, {}, ".neg")}

    extra = []
    for spec in args.fit_also:
        name, _, folder = spec.partition(":")
        log(f"{name} (in every fit of the extra arm)")
        from dialeval.data.datasets import load_dataset

        try:
            samples = load_dataset(name, os.path.join(args.data_root, folder)).samples
        except DialevalError as exc:
            raise SystemExit(f"published_scorecard: {exc}")
        negatives = negative_rows(samples)

        def cols(tag: str, rows, metrics, options, suffix=""):
            return cached_columns(os.path.join(cache, tag, f"{name}{suffix}.npz"), rows, metrics, options)

        extra.append(dev_set(name, samples, {**cols(tags["now"], samples, MME, {"mme_model": mme}),
                                             **cols(tags["cross"], samples, [CROSS], {"mme_cross_model": cross})}))
        negs[name] = {**cols(tags["now"], negatives, MME, {"mme_model": mme}, ".neg"),
                      **cols(tags["cross"], negatives, [CROSS], {"mme_cross_model": cross}, ".neg")}

    members = MME + [CROSS]
    preds = {
        "compose (filing day)": lodo_compose(devs["filing"], MME)[0],
        "compose": lodo_compose(devs["now"], members, share=SHARE, negatives=negs, stand_in=STAND_IN)[0],
        "compose_ref (filing day)": lodo_compose(devs["filing"], MME + REFS, with_refs_only=True)[0],
        "compose_ref": lodo_compose(devs["now"], members + REFS, with_refs_only=True, share=SHARE, negatives=negs)[0],
        "sent_cosine": {d.name: d.scores["sent_cosine"] for d in devs["now"] if has_refs(d)},
    }
    also = "compose + " + ", ".join(d.name for d in extra) + " in the fit" if extra else ""
    if extra:
        preds[also] = lodo_compose(devs["now"], members, share=SHARE, negatives=negs, stand_in=STAND_IN,
                                   extra=extra)[0]
    table, held = held_out_rows(preds, devs["now"], args.n_boot)

    def diff(a: str, b: str, name: str | None = None) -> dict:
        keep = (lambda row: row.set == name) if name else None
        return paired_mean_difference(held, a, b, n_boot=args.n_boot, seed=0, keep=keep).to_dict()

    def fmt_r(x: dict) -> str:
        return f"{x['r']:.3f} [{x['lo']:.2f}, {x['hi']:.2f}]"

    def fmt_d(x: dict) -> str:
        if not x["pairs"] or not math.isfinite(x["mean_diff"]):
            return "-"
        return f"{x['mean_diff']:+.3f} [{x['ci_low']:+.3f}, {x['ci_high']:+.3f}]"

    payload: dict = {"sets": {}, "means": {}, "folders": tags}
    lines = ["| set | best published of base size | composition | filing day | now [95% CI] | now - filing day | "
             "now - sent_cosine | reached? |", "|---|---|---|---:|---|---|---|---|"]
    order = list(PUBLISHED) + [s for s in SETS if s not in PUBLISHED]
    for name in order:
        who, value = PUBLISHED.get(name, ("", math.nan))
        for label in ("compose", "compose_ref"):
            if name not in preds[label]:
                continue
            now, then = table[label][name], table[f"{label} (filing day)"][name]
            vs_then = diff(label, f"{label} (filing day)", name)
            vs_cos = diff(label, "sent_cosine", name) if name in preds["sent_cosine"] else {"pairs": 0, "mean_diff": math.nan}
            reached = "" if math.isnan(value) else ("yes" if now["r"] >= value else
                                                    "below; inside our CI" if now["hi"] >= value else "no")
            published = f"{who} {value:.3f}" if who else "(none listed)"
            lines.append(f"| {name} | {published} | `{label}` | {then['r']:.3f} | {fmt_r(now)} | {fmt_d(vs_then)} | "
                         f"{fmt_d(vs_cos)} | {reached} |")
            payload["sets"].setdefault(name, {})[label] = {"now": now, "filing_day": then, "published": [who, value],
                                                           "minus_filing_day": vs_then, "minus_sent_cosine": vs_cos}
    if extra:
        lines += ["", f"| set | `compose` | {also} | difference |", "|---|---|---|---|"]
        for name in order:
            if name in preds[also]:
                x = diff(also, "compose", name)
                payload["sets"][name][also] = {"now": table[also][name], "minus_compose": x}
                lines.append(f"| {name} | {fmt_r(table['compose'][name])} | {fmt_r(table[also][name])} | {fmt_d(x)} |")
    lines += ["", "| paired difference, mean over the sets both score | sets | mean | 95% CI | wins |",
              "|---|---:|---:|---|---:|"]
    for a, b in (("compose", "compose (filing day)"), ("compose_ref", "compose_ref (filing day)"),
                 ("compose", "sent_cosine"), ("compose_ref", "sent_cosine"),
                 ("compose (filing day)", "sent_cosine"), ("compose_ref (filing day)", "sent_cosine"),
                 *([(also, "compose")] if extra else [])):
        x = diff(a, b)
        payload["means"][f"{a} - {b}"] = x
        lines.append(f"| {a} - {b} | {x['pairs']} | {x['mean_diff']:+.3f} | [{x['ci_low']:+.3f}, {x['ci_high']:+.3f}] | "
                     f"{x['wins']}/{x['pairs']} |")
    write_report(args.out, "published_scorecard", lines, payload)


if __name__ == "__main__":
    main()
