"""Scoring cost of each learned default, today's models folder beside an older one, side by side.

Each (folder, metric, run) is a fresh `dialeval score FILE --metrics M` process on the first N
rows of usr-tc, one thread, model loading included, as a user meets it; the folders alternate
within each round so both see the same machine load. Prints user+system CPU seconds and peak
RSS per run, the best of the runs, and today / older. A metric the older folder cannot score
(it did not exist then, or its folder no longer loads) is printed as such, not timed.

    git archive 6cf0c24^ packages/dialeval-models/src/dialeval_models | tar -x -C /tmp/filing
    python3 benchmarks/bench_defaults_speed.py --data-root $DATA \
        --baseline-models /tmp/filing/packages/dialeval-models/src/dialeval_models
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

LEARNED = "adem,c_adem,r_adem,mme_fm,mme_rm,mme_tcm,mme_rm_cross,compose,compose_ref,lm_coherence"


def run_once(path: str, metric: str, models: str | None) -> tuple[float, float, str]:
    """(CPU s, peak RSS MB, error line or '') of one fresh scoring process (its own rusage)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if models:
        env["DIALEVAL_MODELS_DIR"] = models
    else:
        env.pop("DIALEVAL_MODELS_DIR", None)
    with tempfile.TemporaryDirectory() as tmp, open(os.path.join(tmp, "stderr"), "w+") as err:
        child = subprocess.Popen([sys.executable, "-m", "dialeval.cli", "score", path, "--metrics", metric,
                                  "-o", os.path.join(tmp, "scores.jsonl")],
                                 env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        lines = err.read().strip().splitlines()
    error = "" if child.returncode == 0 else (lines or ["failed"])[-1]
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, error


def main() -> None:
    from dialeval.data.datasets import load_dataset
    from dialeval.data.writers import write_jsonl
    from dialeval.errors import DialevalError

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=os.environ.get("DATA", "../shared/data"))
    ap.add_argument("--baseline-models", required=True, help="an older models folder (see the module doc)")
    ap.add_argument("--metrics", default=LEARNED)
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    if not os.path.isdir(args.baseline_models):
        raise SystemExit(f"bench_defaults_speed: {args.baseline_models}: not a folder (an older models folder)")
    try:
        samples = load_dataset("usr-tc", os.path.join(args.data_root, "usr")).samples[:args.rows]
    except DialevalError as exc:
        raise SystemExit(f"bench_defaults_speed: {exc}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rows.jsonl")
        write_jsonl(path, (s.to_dict() for s in samples))
        print(f"{len(samples)} usr-tc rows, one thread, a fresh process per run (loading included), "
              f"{args.runs} runs, folders alternating", flush=True)
        print("| metric | older folder: CPU s per run (peak MB) | today: CPU s per run (peak MB) | today / older, best of runs |")
        print("|---|---|---|---:|")
        for metric in args.metrics.split(","):
            got: dict[str, list] = {"older": [], "today": []}
            for _ in range(args.runs):
                got["older"].append(run_once(path, metric, args.baseline_models))
                got["today"].append(run_once(path, metric, None))
            cells, best = [], {}
            for tag in ("older", "today"):
                errors = [e for _, _, e in got[tag] if e]
                if errors:
                    cells.append(f"not scored: {errors[0][:90]}")
                    continue
                best[tag] = min(c for c, _, _ in got[tag])
                cells.append(", ".join(f"{c:.1f}" for c, _, _ in got[tag]) + f" ({max(m for _, m, _ in got[tag]):,.0f})")
            ratio = f"{best['today'] / best['older']:.2f}x" if len(best) == 2 else "-"
            print(f"| `{metric}` | {cells[0]} | {cells[1]} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
