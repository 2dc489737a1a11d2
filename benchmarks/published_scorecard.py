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

`--judge-scores PATTERN` adds two opt-in arms, `compose + judge` and `compose_ref + judge`: the
LLM judge as one more member, fitted the shipped way (its training negatives too). The rated
rows' judge scores are read from `dialeval score SET.jsonl --metrics judge ... -o` outputs
({set}: the set's name; a 1.5B judge is scored set by set, with --resume across sessions); the
negatives' are scored here with `--judge-model` / `--judge-backend`, only the rows some fit
draws (`NegativePool`: a quarter of the made rows or fewer), and cached row by row.

`--negatives FAMILIES` adds two arms, `compose` and `compose_ref` fitted with those families as
their training negatives instead of the shipped four (empty, parrot, other_item, loop), each
against the shipped fit: what another family in the fit costs or gains held out.

`--member METRIC` (repeatable) adds two arms, `compose` and `compose_ref` with those metrics as
further members (scored here on the rated rows and the training negatives, cached under
`extra`), each against the shipped fit.

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
from judge_compose_lodo import judge_column  # noqa: E402
from rm_cross_lodo import PUBLISHED  # noqa: E402

from dialeval.metrics.compose.model import DevSet, NegativePool  # noqa: E402

CROSS = "mme_rm_cross"
STAND_IN = "overall=coherence,engaging,fluency"     # what the shipped compose recipe lends (recipes/table.py)
SHARE = 0.25


class JudgePool(NegativePool):
    """A set's training negatives with the judge's column scored on demand: the other members'
    columns come cached whole; the judge scores only the rows a fit draws, each once, cached in
    `path` (NaN: not scored yet), so a stopped run loses at most the rows of one draw."""

    def __init__(self, columns: dict, rows: list, path: str, options: dict):
        super().__init__(len(rows), self._take)
        self.columns, self.rows, self.path, self.options, self.scored = columns, rows, path, options, 0
        self.values = np.load(path)["judge"] if os.path.exists(path) else np.full(len(rows), np.nan)

    def cached(self) -> int:
        return int(np.isfinite(self.values).sum())

    def _take(self, idx) -> dict:
        from dialeval.scoring import score

        todo = [int(i) for i in idx if not np.isfinite(self.values[int(i)])]
        if todo:
            log(f"  {os.path.basename(self.path)}: judging {len(todo)} drawn negatives")
            got = score([self.rows[i] for i in todo], ["judge"], progress=True, **self.options).sentence["judge"]
            self.values[todo] = got
            self.scored += len(todo)
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            np.savez(self.path + ".tmp.npz", judge=self.values)
            os.replace(self.path + ".tmp.npz", self.path)
        return {**{m: np.asarray(v)[idx] for m, v in self.columns.items()}, "judge": self.values[idx]}


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
    ap.add_argument("--judge-scores", metavar="PATTERN",
                    help="the judge's scores of the rated rows ({set}: the set's name): adds the judge arms")
    ap.add_argument("--judge-model", default="qwen1.5b", help="with --judge-scores: the judge of those files")
    ap.add_argument("--member", action="append", default=[], metavar="METRIC",
                    help="a further member of `compose` and `compose_ref` arms (repeatable)")
    ap.add_argument("--negatives", metavar="FAMILIES",
                    help="comma-separated probe families: adds `compose` and `compose_ref` arms fitted with "
                         "them as training negatives")
    ap.add_argument("--judge-backend", default="llama.cpp", help="with --judge-scores: its backend")
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
    other_negs: dict[str, dict] = {}
    negs_more: dict[str, dict] = {}
    judged: dict[str, np.ndarray] = {}
    judge_pools: dict[str, JudgePool] = {}
    judge_tag = f"judge-{args.judge_model}-{args.judge_backend}".replace("/", "_")
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
        if args.member:
            more = cols("extra", samples, args.member, {})
            devs.setdefault("more", []).append(dev_set(name, samples, {**now, **refs, **more}))
            negs_more[name] = {**negs[name], **cols("extra", negatives, args.member, {}, ".neg")}
        if args.negatives:
            made = negative_rows(samples, families=args.negatives)
            suffix = ".neg-" + args.negatives.replace(",", "+")
            other_negs[name] = {**cols(tags["now"], made, MME, {"mme_model": mme}, suffix),
                                **cols(tags["cross"], made, [CROSS], {"mme_cross_model": cross}, suffix),
                                **cols("refs", made, REFS, {}, suffix)}
        if args.judge_scores:
            judged[name] = judge_column(args.judge_scores.format(set=name), samples)["judge"]
            judge_pools[name] = JudgePool(negs[name], negatives, os.path.join(cache, judge_tag, f"{name}.neg.npz"),
                                          {"judge_model": args.judge_model, "judge_backend": args.judge_backend})

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
    arms = [(also, "compose")] if extra else []
    if args.member:
        label = "+ " + ", ".join(args.member)
        preds[f"compose {label}"] = lodo_compose(devs["more"], members + args.member, share=SHARE,
                                                 negatives=negs_more, stand_in=STAND_IN)[0]
        preds[f"compose_ref {label}"] = lodo_compose(devs["more"], members + REFS + args.member, with_refs_only=True,
                                                     share=SHARE, negatives=negs_more)[0]
        arms += [(f"compose {label}", "compose"), (f"compose_ref {label}", "compose_ref")]
    if args.negatives:
        label = f"(negatives: {args.negatives})"
        preds[f"compose {label}"] = lodo_compose(devs["now"], members, share=SHARE, negatives=other_negs,
                                                 stand_in=STAND_IN)[0]
        preds[f"compose_ref {label}"] = lodo_compose(devs["now"], members + REFS, with_refs_only=True, share=SHARE,
                                                     negatives=other_negs)[0]
        arms += [(f"compose {label}", "compose"), (f"compose_ref {label}", "compose_ref")]
    if judged:
        with_judge = [DevSet(d.name, {**d.scores, "judge": judged[d.name]}, d.human, dict(d.meta)) for d in devs["now"]]
        preds["compose + judge"] = lodo_compose(with_judge, members + ["judge"], share=SHARE, negatives=judge_pools,
                                                stand_in=STAND_IN)[0]
        preds["compose_ref + judge"] = lodo_compose(with_judge, members + REFS + ["judge"], with_refs_only=True,
                                                    share=SHARE, negatives=judge_pools)[0]
        arms += [("compose + judge", "compose"), ("compose_ref + judge", "compose_ref")]
        scored = sum(p.scored for p in judge_pools.values())
        log(f"judge on training negatives: {scored} rows scored this run, "
            f"{sum(p.cached() for p in judge_pools.values())} cached in all")
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
    for arm, base in arms:
        lines += ["", f"| set | best published of base size | `{base}` | {arm} | difference | reached? |",
                  "|---|---|---|---|---|---|"]
        for name in order:
            if name in preds[arm]:
                x = diff(arm, base, name)
                who, value = PUBLISHED.get(name, ("", math.nan))
                r = table[arm][name]
                reached = "" if math.isnan(value) else ("yes" if r["r"] >= value else
                                                        "below; inside our CI" if r["hi"] >= value else "no")
                payload["sets"][name][arm] = {"now": r, f"minus_{base}": x}
                lines.append(f"| {name} | {f'{who} {value:.3f}' if who else '(none listed)'} | "
                             f"{fmt_r(table[base][name])} | {fmt_r(r)} | {fmt_d(x)} | {reached} |")
    lines += ["", "| paired difference, mean over the sets both score | sets | mean | 95% CI | wins |",
              "|---|---:|---:|---|---:|"]
    for a, b in (("compose", "compose (filing day)"), ("compose_ref", "compose_ref (filing day)"),
                 ("compose", "sent_cosine"), ("compose_ref", "sent_cosine"),
                 ("compose (filing day)", "sent_cosine"), ("compose_ref (filing day)", "sent_cosine"),
                 *arms):
        x = diff(a, b)
        payload["means"][f"{a} - {b}"] = x
        lines.append(f"| {a} - {b} | {x['pairs']} | {x['mean_diff']:+.3f} | [{x['ci_low']:+.3f}, {x['ci_high']:+.3f}] | "
                     f"{x['wins']}/{x['pairs']} |")
    write_report(args.out, "published_scorecard", lines, payload)


if __name__ == "__main__":
    main()
