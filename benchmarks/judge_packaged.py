"""The packaged 1.5B judge (`--judge-model qwen1.5b`) beside `sent_cosine` and `compose`, on fixed
random samples of the rated sets (issue 34).

For each set: the reference systems left out (as `dialeval evaluate` does), a fixed random
sample of `--n` items (numpy default_rng(seed).choice without replacement, kept in data order),
every metric scored on the same items, turn-level Spearman with the set's main quality, its 95%
percentile bootstrap CI, and the paired bootstrap CI of each baseline's difference from the
judge (dialeval.meta's `correlation_rows` / `comparison_rows`, the code behind `evaluate
--compare`). The judge uses the shipped `overall` template and its defaults; only the model and
the precision are set here. The judge's CPU seconds per item are timed around its own scoring
call (the model already loaded); per-item scores and every number go to `--json` after each
set (the judge's before the baselines run), so a run cut short keeps the sets it finished.

    nice -n 10 python3 benchmarks/judge_packaged.py [--sets usr-tc,fed-turn,usr-pc,...]
        [--n 120] [--seed 0] [--judge-model qwen1.5b] [--precision bf16]
        [--baselines sent_cosine,compose] [--json benchmarks/out/judge_packaged.json]
    python3 benchmarks/judge_packaged.py --table benchmarks/out/judge_packaged.json   # the markdown table
    # cost alone, ~20 items, no baselines:
    /usr/bin/time -v python3 benchmarks/judge_packaged.py --sets usr-tc --n 20 --baselines '' \\
        --precision fp32 --json /tmp/cost_fp32.json
    # the runtimes side by side on the same items, each in its own process: load and scoring CPU
    # s, peak RSS, each as a ratio to the first, and how closely the ratings agree with the first's
    python3 benchmarks/judge_packaged.py --cost torch,llama.cpp --sets usr-pc --n 30
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data")
# set -> main quality (the folder under the data root is the data-set registry's)
QUALITY = {"usr-tc": "overall", "fed-turn": "overall", "usr-pc": "overall", "grade-dailydialog": "coherence",
           "grade-empatheticdialogues": "coherence", "grade-convai2": "coherence", "gupta": "overall",
           "holistic-coherence": "coherence", "holistic-fluency": "fluency", "predictive-engagement": "engagement"}


def sample_dataset(name: str, root: str, n: int, seed: int):
    from dialeval.data.datasets import get_spec
    from dialeval.data.datasets.base import Dataset
    from dialeval.meta.evaluate import load_rated

    ds = load_rated(name, os.path.join(root, get_spec(name).folder))
    if ds.reference_systems:
        ds = ds.without_systems(ds.reference_systems)
    total = len(ds.samples)
    keep = sorted(np.random.default_rng(seed).choice(total, size=min(n, total), replace=False).tolist())
    return Dataset(ds.info, [ds.samples[i] for i in keep]), total, keep


def table(path: str, baselines=("sent_cosine", "compose")) -> str:
    """The markdown table of a finished (or cut short) run's JSON: Spearman [95% CI] per metric,
    and the 95% CI of each baseline's difference from the judge (baseline - judge)."""
    with open(path, encoding="utf-8") as handle:
        report = json.load(handle)
    head = ["set (quality, n)", "judge", *baselines, *(f"{b} - judge" for b in baselines), "judge CPU s/item"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, entry in report["sets"].items():
        if "correlations" not in entry:
            continue
        corr = {r["metric"]: r for r in entry["correlations"]}
        cells = [f"{name} ({entry['quality']}, {entry['items']})"]
        for m in ("judge", *baselines):
            r = corr.get(m)
            cells.append(f"{r['r']:.3f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]" if r else "n/a")
        for b in baselines:
            c = next((c for c in entry["comparisons"] if {c["metric_a"], c["metric_b"]} == {b, "judge"}), None)
            if c is None:
                cells.append("")
                continue
            lo, hi = c["diff_ci_low"], c["diff_ci_high"]   # metric_a - metric_b
            if c["metric_a"] == "judge":
                lo, hi = -hi, -lo
            cells.append(f"[{lo:+.2f}, {hi:+.2f}]")
        cells.append(f"{entry['judge_cpu_s_per_item']:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cost(args) -> int:
    """Each backend of `--cost` in a child process running this script on the same items (no
    baselines, fp32: the judge's default), its resources read from the child's own rusage; one
    table, ratios to the first."""
    import subprocess
    import tempfile

    from scipy.stats import pearsonr

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.cost.split(","):
            out = os.path.join(tmp, f"{backend}.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--sets", args.sets, "--n", str(args.n), "--seed",
                   str(args.seed), "--judge-model", args.judge_model, "--precision", "fp32",
                   "--backend", backend, "--baselines", "", "--n-boot", "100", "--json", out]
            child = subprocess.Popen(cmd)
            _, status, usage = os.wait4(child.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                print(f"{backend}: the run failed ({' '.join(cmd)})", file=sys.stderr)
                return 1
            with open(out, encoding="utf-8") as handle:
                report = json.load(handle)
            items = sum(e["items"] for e in report["sets"].values())
            rows.append({"backend": backend, "load": report["load"]["cpu_s"],
                         "per_item": sum(e["judge_cpu_s"] for e in report["sets"].values()) / items,
                         "rss_gb": usage.ru_maxrss / 2 ** 20, "items": items,
                         "scores": [x for e in report["sets"].values() for x in e["scores"]["judge"]]})
    first = rows[0]
    print(f"{args.judge_model}, {first['items']} items of {args.sets}, fp32 where torch, one process each")
    print("| backend | load (+1 item), CPU s | scoring, CPU s / item | peak RSS, GB | ratio to "
          f"{first['backend']} (load, per item, RSS) | Pearson with {first['backend']}'s ratings | largest difference |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for r in rows:
        a, b = np.array(r["scores"]), np.array(first["scores"])
        print(f"| {r['backend']} | {r['load']:.1f} | {r['per_item']:.2f} | {r['rss_gb']:.2f} | "
              f"{r['load'] / first['load']:.2f}x, {r['per_item'] / first['per_item']:.2f}x, "
              f"{r['rss_gb'] / first['rss_gb']:.2f}x | {pearsonr(a, b)[0]:.4f} | {np.abs(a - b).max():.3f} |")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--table"]:
        print(table(sys.argv[2]))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="usr-tc,fed-turn,usr-pc,grade-dailydialog,grade-empatheticdialogues,"
                                      "gupta,holistic-coherence")
    ap.add_argument("--data-root", default=DATA)
    ap.add_argument("--n", type=int, default=120)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--judge-model", default="qwen1.5b")
    ap.add_argument("--precision", default="bf16", choices=("fp32", "bf16"))
    ap.add_argument("--baselines", default="sent_cosine,compose")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--json", default=os.path.join(HERE, "out", "judge_packaged.json"))
    ap.add_argument("--backend", default="torch", choices=("torch", "llama.cpp"))
    ap.add_argument("--cost", default="", help="comma-separated backends to run side by side (see above)")
    args = ap.parse_args()
    if args.cost:
        return cost(args)

    from dialeval.meta.evaluate import columns, comparison_rows, correlation_rows
    from dialeval.scoring import score

    judge_opts = {"judge_model": args.judge_model, "judge_precision": args.precision,
                  "judge_backend": args.backend}
    baselines = [m for m in args.baselines.split(",") if m]
    report = {"args": vars(args), "sets": {}}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)

    # load the judge once (timed apart from scoring): one throwaway item
    first, _, _ = sample_dataset(args.sets.split(",")[0], args.data_root, 1, args.seed)
    c0, w0 = time.process_time(), time.perf_counter()
    score(first.samples, ["judge"], **judge_opts)
    report["load"] = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0}
    print(f"judge loaded (+1 item): {report['load']['cpu_s']:.1f} CPU s, {report['load']['wall_s']:.1f} s wall",
          file=sys.stderr, flush=True)

    for name in args.sets.split(","):
        ds, total, keep = sample_dataset(name, args.data_root, args.n, args.seed)
        quality = QUALITY[name]
        c0, w0 = time.process_time(), time.perf_counter()
        judged = score(ds.samples, ["judge"], **judge_opts)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        values, human, dialogues, systems = columns(list(judged.records()), quality)
        signatures = dict(judged.signatures)
        entry = report["sets"][name] = {
            "quality": quality, "items": len(keep), "of": total, "indices": keep,
            "judge_cpu_s": cpu, "judge_wall_s": wall, "judge_cpu_s_per_item": cpu / len(keep),
            "scores": {m: [float(x) for x in v] for m, v in values.items()},
            "human": [float(x) for x in human]}
        with open(args.json, "w", encoding="utf-8") as handle:   # the judge's scores kept first
            json.dump(report, handle, indent=1, default=float)
        base_cpu = 0.0
        if baselines:
            c1 = time.process_time()
            try:
                based = score(ds.samples, baselines)
            except Exception as exc:          # keep the judge's numbers whatever happens here
                entry["baselines_error"] = f"{type(exc).__name__}: {exc}"
                print(f"{name}: baselines failed: {exc}", file=sys.stderr, flush=True)
            else:
                more, _, _, _ = columns(list(based.records()), quality)
                values.update(more)
                signatures.update(based.signatures)
            base_cpu = time.process_time() - c1
        values = {m: v for m, v in values.items() if np.isfinite(v).any()}   # sent_cosine without references
        corr = correlation_rows(values, human, quality=quality, methods=["spearman"], dialogues=dialogues,
                                systems=systems, n_boot=args.n_boot, seed=args.seed)
        comp = comparison_rows(values, human, quality=quality, method="spearman", dialogues=dialogues,
                               systems=systems, n_boot=args.n_boot, seed=args.seed) if len(values) > 1 else []
        entry.update({"baselines_cpu_s": base_cpu, "correlations": corr, "comparisons": comp,
                      "signatures": signatures, "scores": {m: [float(x) for x in v] for m, v in values.items()}})
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1, default=float)
        cells = "  ".join(f"{r['metric']} {r['r']:.3f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
                          for r in corr if r.get("method", "spearman") == "spearman")
        print(f"{name} ({quality}, n={len(keep)} of {total}): {cells}; judge {cpu / len(keep):.2f} CPU s/item, "
              f"{wall:.0f} s wall", flush=True)
        for r in comp:
            print(f"  {json.dumps({k: r[k] for k in r if k not in ('quality',)}, default=float)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
