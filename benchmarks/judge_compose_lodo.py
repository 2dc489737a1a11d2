"""Does the LLM judge earn a weight in `compose` / `compose_ref`? Leave one rated set out.

For every local rated set: fit the shipped kind of composition (ridge, weights >= 0, `overall`)
on the other sets, once over the usual members and once with `judge` added as a candidate
member, score the held-out set with each, and correlate with the set's main quality. The
ridge decides the judge's weight; the held-out sets decide whether it helps. No training
negatives here (`--negative-share 0`, unlike the shipped recipe): the judge would have to score
every negative row too, about twice the rated rows, which this machine could not afford beside
the rest (the note says so); both arms are fitted the same way, so the comparison is fair.

    python3 benchmarks/judge_compose_lodo.py --data-root $DATA [--judge-model PATH] [--out DIR]
    python3 benchmarks/judge_compose_lodo.py --data-root $DATA --judge-scores 'RUNS/{set}.j15.jsonl'

`--judge-scores` reads the judge's column from `dialeval score SET.jsonl --metrics judge -o ...`
outputs, one per set (`{set}` in the pattern is the set's name), matched to the rows by id and
system: a judge too slow to score here in one go (the 1.5B one, 4 CPU s an item) is scored set
by set with `--resume` across sessions, and this benchmark only reads the result.

Scores are cached per set under OUT/scores/ (one column per metric; the MME and reference
columns are shared with negatives_lodo.py's cache when --mme-cache points at it). Writes
OUT/judge_compose_lodo.md and .json, and prints the judge's CPU seconds per item.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from negatives_lodo import (MME, REFS, cached_columns, dev_set, held_out_tables,  # noqa: E402
                            lodo_compose, log, rated_samples)


def judge_column(path: str, samples) -> dict[str, np.ndarray]:
    """The `judge` column of `samples` from a scores file, each row found by (id, system); a
    row the file lacks (an unfinished run) stops the benchmark with one line."""
    got = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                got[(row["id"], row.get("system"))] = row["scores"]["judge"]
    except (OSError, ValueError, KeyError) as exc:
        sys.exit(f"judge_compose_lodo.py: {path}: cannot read the judge's scores ({type(exc).__name__}: {exc})")
    missing = [s for s in samples if (s.id, s.system) not in got]
    if missing:
        sys.exit(f"judge_compose_lodo.py: {path}: no judge score for {len(missing)} of {len(samples)} rows "
                 f"(first: {missing[0].id}); finish its run with --resume")
    return {"judge": np.array([got[(s.id, s.system)] for s in samples], dtype=float)}


def main() -> None:
    from bench_compose import SETS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=os.environ.get("DATA", "../shared/data"))
    ap.add_argument("--judge-model", default=None, help="a local causal LM (default: the installed SmolLM2)")
    ap.add_argument("--mme-cache", default=os.path.join(HERE, "out", "negatives_lodo", "scores"),
                    help="folder of cached MME ('after') and reference columns, scored here when absent")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "judge_compose_lodo"))
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--judge-scores", metavar="PATTERN",
                    help="read the judge's scores from these `dialeval score` outputs ({set}: the set's name) "
                         "instead of scoring them here")
    args = ap.parse_args()

    judge_opts = {"judge_model": args.judge_model} if args.judge_model else {}
    devs, cpu, items = [], 0.0, 0
    for name in SETS:
        log(name)
        samples = rated_samples(name, args.data_root)
        mme = cached_columns(os.path.join(args.mme_cache, "after", f"{name}.npz"), samples, MME, {})
        refs = cached_columns(os.path.join(args.mme_cache, "refs", f"{name}.npz"), samples, REFS, {})
        if args.judge_scores:
            judge = judge_column(args.judge_scores.format(set=name), samples)
        else:
            path = os.path.join(args.out, "scores", f"{name}.npz")
            fresh = not os.path.exists(path)
            t0 = time.process_time()
            judge = cached_columns(path, samples, ["judge"], judge_opts)
            if fresh:
                cpu, items = cpu + time.process_time() - t0, items + len(samples)
        dev = dev_set(name, samples, {**mme, **refs, **judge})
        devs.append(dev)

    preds: dict[str, dict[str, np.ndarray]] = {"judge": {d.name: d.scores["judge"] for d in devs}}
    weights: dict[str, list[float]] = {}
    for label, members in (("compose", MME), ("compose + judge", MME + ["judge"]),
                           ("compose_ref", MME + REFS), ("compose_ref + judge", MME + REFS + ["judge"])):
        watch = "judge" if "judge" in members else None
        preds[label], ws = lodo_compose(devs, members, with_refs_only=label.startswith("compose_ref"), watch=watch)
        if watch:
            weights[label] = ws

    pairs = [("compose + judge", "compose"), ("compose_ref + judge", "compose_ref"), ("judge", "compose")]
    table, diffs, lines = held_out_tables(preds, devs, pairs, args.n_boot)
    lines += ["", "| composition | judge's weight in the 'overall' fit, per held-out set (min / mean / max) |",
              "|---|---|"]
    for label, ws in weights.items():
        lines.append(f"| {label} | {min(ws):.3f} / {np.mean(ws):.3f} / {max(ws):.3f} |")
    if items:
        lines += ["", f"judge cost: {cpu:.0f} CPU s for {items} items ({cpu / items:.2f} CPU s per item, "
                      "model load included)"]
    text = "\n".join(lines)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "judge_compose_lodo.md"), "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    with open(os.path.join(args.out, "judge_compose_lodo.json"), "w", encoding="utf-8") as handle:
        json.dump({"rows": table, "differences": diffs, "judge_weights": weights}, handle, indent=1, default=float)


if __name__ == "__main__":
    main()
