"""Fuzz every reader, every data set loader (on mutated copies of its files) and every cheap
metric with many random examples; count crashes (anything but a correct result or a one-line
DialevalError) and distinct errors, and time it.

    nice -n 10 python3 benchmarks/fuzz.py [--examples 100000] [--targets jsonl,bleu4,...]
        [--shared ../shared] [--seed 0] [--json out.json]

Targets and invariants are in tests/fuzz_targets.py (the same ones tests/test_fuzz.py runs
under hypothesis with a bounded number of examples). Metric examples are scored in batches of
`--batch` samples (each sample counts as an example; a crashing batch is re-run sample by
sample so that every crashing sample is counted); reader and loader examples are one file
each. Exit status 1 when anything crashed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "src"))

import fuzz_targets as ft  # noqa: E402


def targets(shared: Path) -> dict:
    from dialeval.data.datasets import list_datasets

    out = dict(ft.READER_TARGETS)
    for spec in list_datasets():
        folder = shared / "data" / spec.folder
        if folder.is_dir():
            out[f"load:{spec.name}"] = ft.loader_target(spec.name, folder)
    for metric in ft.CHEAP_METRICS:
        out[metric] = ft.metric_target(metric)
    for metric in ft.WILD_METRICS:
        out[f"wild:{metric}"] = ft.wild_metric_target(metric)
    return out


def run_target(name: str, target, examples: int, seed: int, batch: int, tmp: Path,
               deadline: float | None) -> dict:
    counts = collections.Counter()
    errors: collections.Counter = collections.Counter()
    crashes: collections.Counter = collections.Counter()
    started = time.time()
    wild = name.startswith("wild:")
    metric = name[len("wild:"):] if wild else name
    is_metric = metric in ft.CHEAP_METRICS or wild
    done = 0
    k = 0
    while done < examples:
        if deadline is not None and time.time() > deadline:
            break
        rng = random.Random(f"{seed}:{name}:{k}")
        k += 1
        if is_metric:
            n = min(batch, examples - done)
            samples = ft.wild_samples(rng, n, tmp) if wild else ft.random_samples(rng, n)
            outcome, detail = ft.run_example(lambda r, t: ft.check_metric(metric, samples, t.parent, r), rng, tmp)
            if outcome == "crash" and n > 1:        # find the samples that crash alone
                alone = 0
                for i, sample in enumerate(samples):
                    sub = random.Random(f"{seed}:{name}:{k}:{i}")
                    o, d = ft.run_example(lambda r, t: ft.check_metric(metric, [sample], t.parent, r), sub, tmp)
                    counts[o] += 1
                    if o == "crash":
                        alone += 1
                        crashes[d] += 1
                    elif o == "error":
                        errors[d] += 1
                if not alone:                        # a crash only in combination: count the batch once
                    counts["crash"] += 1
                    crashes["batch: " + detail] += 1
            else:
                counts[outcome] += n
                if outcome == "error":
                    errors[detail] += n
                elif outcome == "crash":
                    crashes[detail] += n
            if not wild and rng.random() < 0.05:
                outcome, detail = ft.run_example(lambda r, t: ft.check_identity(name, t.parent, r), rng, tmp)
                if outcome == "crash":
                    counts["crash"] += 1
                    crashes["identity: " + detail] += 1
            done += n
        else:
            outcome, detail = ft.run_example(target, rng, tmp)
            counts[outcome] += 1
            if outcome == "error":
                errors[detail] += 1
            elif outcome == "crash":
                crashes[detail] += 1
            done += 1
    return {"target": name, "examples": done, "ok": counts["ok"], "errors": counts["error"],
            "distinct_errors": len(errors), "crashes": counts["crash"],
            "crash_kinds": dict(crashes.most_common(10)), "top_errors": dict(errors.most_common(5)),
            "seconds": round(time.time() - started, 1)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100_000, help="examples per target")
    parser.add_argument("--targets", help="comma-separated subset (default: all)")
    parser.add_argument("--shared", default=os.environ.get("DIALEVAL_SHARED", str(HERE.parent.parent / "shared")))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=200, help="samples per metric call")
    parser.add_argument("--minutes-per-target", type=float, help="stop a target early after this long")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if "DIALEVAL_CACHE_DIR" not in os.environ:
        # A scratch cache (the targets' vector files land there), with METEOR's resource cache
        # linked in from the real one when it was built (rebuilding it takes minutes).
        from dialeval.models.cache import cache_dir

        meteor = cache_dir() / "meteor"
        scratch_cache = Path(tempfile.mkdtemp(prefix="dialeval-fuzz-cache-"))
        if meteor.is_dir():
            (scratch_cache / "meteor").symlink_to(meteor, target_is_directory=True)
        os.environ["DIALEVAL_CACHE_DIR"] = str(scratch_cache)
    all_targets = targets(Path(args.shared))
    names = args.targets.split(",") if args.targets else list(all_targets)
    results = []
    began = time.time()
    with tempfile.TemporaryDirectory(prefix="dialeval-fuzz-") as scratch:
        for name in names:
            tmp = Path(scratch) / name.replace(":", "_") / "work"
            tmp.mkdir(parents=True)
            deadline = time.time() + args.minutes_per_target * 60 if args.minutes_per_target else None
            r = run_target(name, all_targets[name], args.examples, args.seed, args.batch, tmp, deadline)
            results.append(r)
            print(f"{name:28s} {r['examples']:>7} examples  {r['crashes']:>5} crashes  "
                  f"{r['distinct_errors']:>3} distinct errors ({r['errors']} errors)  {r['seconds']:>7.1f} s",
                  flush=True)
            for kind, count in r["crash_kinds"].items():
                print(f"    crash x{count}: {kind}", flush=True)
    total = {"examples": sum(r["examples"] for r in results), "crashes": sum(r["crashes"] for r in results),
             "seconds": round(time.time() - began, 1)}
    print(f"total: {total['examples']} examples, {total['crashes']} crashes, {total['seconds']} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"total": total, "targets": results}, indent=1, ensure_ascii=False))
    return 1 if total["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
