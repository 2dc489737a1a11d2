"""BLEU-1..4, ROUGE-L and CIDEr-D: dialeval beside pycocoevalcap, same input, same process.

Prints per metric: wall and CPU seconds of each (medians of --repeat runs), the speed ratios,
the peak traced memory of each, and the largest difference between their sentence values.
CPU seconds (time.process_time, getrusage for child processes) are what the ratios should be
read from on a shared machine: other load inflates wall time far more than CPU time.

    python3 benchmarks/bench_overlap.py --baseline ../main/src   # an older tree, side by side

`--baseline SRC` times another source tree of dialeval (e.g. a checkout of main) in the same
run: its in-process rows in a child process whose PYTHONPATH is SRC (one process cannot import
two versions), its whole-process row interleaved with the others. Before timing whole processes
the benchmark compiles the sources' bytecode (`compileall`), as `pip install` does: without it a
tree run from source under PYTHONDONTWRITEBYTECODE recompiles every module at each start.

    python3 benchmarks/bench_overlap.py                      # synthetic 2,000 x 11 set
    python3 benchmarks/bench_overlap.py --dstc6 S_1          # one DSTC6 system
    python3 benchmarks/bench_overlap.py --modes multi max    # max: 22,000 single-reference pairs
    python3 benchmarks/bench_overlap.py --floor              # + what start-up alone costs

The `process` row times whole processes side by side: `python3 -m dialeval.cli score` (start-up,
imports, reading the files, BLEU-1..4 + ROUGE-L + CIDEr-D, writing the scores) against a fresh
`python3` that imports pycocoevalcap, reads the same files and runs its three scorers (median
wall of --repeat runs, and CPU seconds of the child processes, which other load on the machine
disturbs less).

In `max` mode pycocoevalcap is run on the flattened (hypothesis, one reference) pairs, as a user
of it would; its CIDEr-D then takes document frequencies from single references, so only the
time is compared for CIDEr-D there (dialeval's value follows the golden definition).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if "--_child" not in sys.argv:  # this tree's dialeval (a --baseline child gets its tree from PYTHONPATH)
    sys.path.insert(0, str(REPO / "src"))
SHARED = Path(os.environ.get("DIALEVAL_SHARED", REPO.parent / "shared"))


def load_synth():
    rows = [json.loads(line) for line in (SHARED / "golden" / "synth-2000x11.jsonl").read_text().splitlines()]
    return [r["hyp"] for r in rows], [r["refs"] for r in rows]


def load_dstc6(system: str):
    from dialeval.data.readers import read_parallel

    root = SHARED / "data" / "dstc6-eval"
    refs = [root / "references" / "original_refs.txt"] + [root / "references" / f"refgen_result{i}.txt" for i in range(1, 11)]
    samples = read_parallel([root / "hypotheses" / f"{system}.txt"], refs)
    return [s.response for s in samples], [s.references for s in samples]


def measure(fn, repeat, trace=True):
    """Median wall and CPU time of untraced runs, then peak traced memory of one more run.

    Tracing slows pure-Python code far more than numpy code, so it never overlaps timing.
    """
    times, cpus, result = [], [], None
    for _ in range(repeat):
        c0 = time.process_time()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    peak = 0
    if trace:
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return (statistics.median(times), statistics.median(cpus)), peak, result


def coco_runner(metric, hyps, refs, mode):
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    scorer = {"bleu": lambda: Bleu(4), "rouge_l": Rouge, "cider_d": Cider}[metric]()
    if mode == "multi":
        gts = {i: r for i, r in enumerate(refs)}
        res = {i: [h] for i, h in enumerate(hyps)}
    else:
        pairs = [(i, h, r) for i, (h, rs) in enumerate(zip(hyps, refs)) for r in rs]
        gts = {j: [r] for j, (_, _, r) in enumerate(pairs)}
        res = {j: [h] for j, (_, h, _) in enumerate(pairs)}
        item = np.array([i for i, _, _ in pairs])

    def run():
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):  # pycocoevalcap's BLEU prints
            _, sent = scorer.compute_score(gts, res)
        sent = np.asarray(sent[3] if metric == "bleu" else sent, dtype=np.float64)
        if mode == "max":
            best = np.full(len(hyps), -np.inf)
            np.maximum.at(best, item, sent)
            sent = best
        return sent
    return run


def dialeval_runner(metric, hyps, refs, mode):
    from dialeval.data.sample import Sample
    from dialeval.scoring import score

    samples = [Sample(id=str(i), response=h, references=r) for i, (h, r) in enumerate(zip(hyps, refs))]
    names = {"bleu": ["bleu1", "bleu2", "bleu3", "bleu4"],
             "all": ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d"]}.get(metric, [metric])

    def run():
        result = score(samples, names, refs_mode=mode, progress=False)
        return result.sentence[names[-1]]
    return run


_COCO_PROCESS = r"""
import contextlib, io, json, sys
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.rouge.rouge import Rouge
hyp_file, mode, out, *ref_files = sys.argv[1:]
hyps = open(hyp_file, encoding="utf-8").read().split("\n")[:-1]
refs = list(zip(*[open(f, encoding="utf-8").read().split("\n")[:-1] for f in ref_files]))
if mode == "multi":
    gts = {i: list(r) for i, r in enumerate(refs)}
    res = {i: [h] for i, h in enumerate(hyps)}
else:
    pairs = [(h, r) for h, rs in zip(hyps, refs) for r in rs]
    gts = {j: [r] for j, (_, r) in enumerate(pairs)}
    res = {j: [h] for j, (h, _) in enumerate(pairs)}
scores = {}
with contextlib.redirect_stdout(io.StringIO()):
    for name, scorer in (("bleu", Bleu(4)), ("rouge_l", Rouge()), ("cider_d", Cider())):
        corpus, sent = scorer.compute_score(gts, res)
        scores[name] = [list(map(float, s)) for s in sent] if name == "bleu" else list(map(float, sent))
with open(out, "w") as handle:
    json.dump(scores, handle)
"""


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_row(hyps, refs, mode, repeat, baseline=None):
    """Whole processes: {name: (median wall, median CPU)} for coco, ours (and before: `baseline`,
    another source tree), run interleaved `repeat` times."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-overlap-") as tmp:
        tmp = Path(tmp)
        n_refs = max(len(r) for r in refs)
        if any(len(r) != n_refs for r in refs) or any("\n" in t for t in hyps + [x for r in refs for x in r]):
            return None
        (tmp / "hyp.txt").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
        ref_files = []
        for k in range(n_refs):
            f = tmp / f"ref{k}.txt"
            f.write_text("".join(r[k] + "\n" for r in refs), encoding="utf-8")
            ref_files.append(str(f))
        coco = [sys.executable, "-c", _COCO_PROCESS, str(tmp / "hyp.txt"), mode, str(tmp / "coco.json"), *ref_files]
        ours = [sys.executable, "-m", "dialeval.cli", "score", "--hyp", str(tmp / "hyp.txt"),
                *[x for f in ref_files for x in ("--ref", f)], "--refs-mode", mode,
                "--metrics", "bleu1,bleu2,bleu3,bleu4,rouge_l,cider_d", "-o", str(tmp / "ours.jsonl")]
        def env(src):
            return dict(os.environ, PYTHONPATH=str(src) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        runs = [("coco", coco, env(REPO / "src")), ("ours", ours, env(REPO / "src"))]
        if baseline is not None:
            runs.append(("before", ours, env(baseline)))
        got = {name: ([], []) for name, _, _ in runs}
        for _ in range(repeat):
            for name, cmd, environ in runs:
                cpu0 = _children_cpu()
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, env=environ, stdout=subprocess.DEVNULL)
                got[name][0].append(time.perf_counter() - t0)
                got[name][1].append(_children_cpu() - cpu0)
        med = statistics.median
        return {name: (med(w), med(c)) for name, (w, c) in got.items()}


# the modules `dialeval score` imports for the word-overlap metrics (what the floor row times)
_SCORE_IMPORTS = ("import dialeval.cli.main, dialeval.engine.stream, dialeval.scoring, dialeval.report.tables, "
                  "dialeval.metrics.overlap.bleu, dialeval.metrics.overlap.rouge, dialeval.metrics.overlap.cider")


def floor_rows(repeat):
    """Whole processes that do no scoring, {name: (median wall, median CPU)}: the part of the
    `process` row that start-up alone costs (interpreter and site, numpy, dialeval's modules)."""
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = [("python -c pass", "pass"), ("import numpy", "import numpy"), ("+ dialeval", _SCORE_IMPORTS)]
    got = {name: ([], []) for name, _ in runs}
    for _ in range(repeat):
        for name, code in runs:
            cpu0 = _children_cpu()
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, env=env)
            got[name][0].append(time.perf_counter() - t0)
            got[name][1].append(_children_cpu() - cpu0)
    med = statistics.median
    return {name: (med(w), med(c)) for name, (w, c) in got.items()}


def compile_bytecode(src) -> None:
    """Write the .pyc files of a source tree, as pip does at install time."""
    import compileall

    compileall.compile_dir(str(src), quiet=2)


def baseline_rows(src, args):
    """In-process (wall, CPU) medians of dialeval from another source tree, in a child process."""
    import subprocess

    cmd = [sys.executable, __file__, "--_child", "--repeat", str(args.repeat), "--modes", *args.modes]
    if args.dstc6:
        cmd += ["--dstc6", args.dstc6]
    env = dict(os.environ, PYTHONPATH=str(src), DIALEVAL_SHARED=str(SHARED))
    out = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def child_main(args, hyps, refs):
    rows = {}
    for mode in args.modes:
        for metric in ["bleu", "rouge_l", "cider_d", "all"]:
            (wall, cpu), _, _ = measure(dialeval_runner(metric, hyps, refs, mode), args.repeat, trace=False)
            rows[f"{mode}/{metric}"] = [wall, cpu]
    print(json.dumps(rows))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dstc6", metavar="SYSTEM", help="a DSTC6 system (e.g. S_1) instead of the synthetic set")
    ap.add_argument("--modes", nargs="+", default=["multi", "max"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-process", action="store_true", help="skip the whole-process row")
    ap.add_argument("--floor", action="store_true",
                    help="also time processes that only start: python, + numpy, + dialeval's imports")
    ap.add_argument("--baseline", metavar="SRC", help="also time dialeval from this source tree (e.g. main's src/)")
    ap.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not SHARED.exists():
        sys.exit(f"{SHARED} not found: the benchmark reads ../shared")
    hyps, refs = load_dstc6(args.dstc6) if args.dstc6 else load_synth()
    if args._child:
        return child_main(args, hyps, refs)
    base = None
    if args.baseline:
        compile_bytecode(args.baseline)
        base = baseline_rows(args.baseline, args)
    name = f"DSTC6 {args.dstc6}" if args.dstc6 else "synth-2000x11"
    print(f"# {name}: {len(hyps)} hypotheses, {sum(map(len, refs))} references; median of {args.repeat} runs")
    print("# wall s / CPU s; ratios are pycocoevalcap's time over dialeval's" +
          (f"; before = {args.baseline}" if base else ""))
    header = (f"{'mode':6} {'metric':9} {'coco wall':>9} {'ours wall':>9} {'ratio':>6} {'coco CPU':>9} {'ours CPU':>9} "
              f"{'ratio':>6}" + (f" {'before CPU':>10} {'ratio':>6}" if base else "") +
              f" {'coco MB':>8} {'ours MB':>8} {'max |diff|':>11}")
    print(header)

    def line(mode, label, coco, ours, before, mem="", diff=""):
        (wc, cc), (wo, co) = coco, ours
        text = f"{mode:6} {label:9} {wc:9.3f} {wo:9.3f} {wc / wo:5.1f}x {cc:9.3f} {co:9.3f} {cc / co:5.1f}x"
        if base:
            text += f" {before[1]:10.3f} {cc / before[1]:5.1f}x" if before else f" {'':10} {'':6}"
        print(text + mem + diff, flush=True)

    if not args.no_process or args.floor:
        compile_bytecode(REPO / "src")
    for mode in args.modes:
        tot_c = [0.0, 0.0]
        for metric in ["bleu", "rouge_l", "cider_d"]:
            tc, mc, sc = measure(coco_runner(metric, hyps, refs, mode), args.repeat)
            to, mo, so = measure(dialeval_runner(metric, hyps, refs, mode), args.repeat)
            tot_c = [tot_c[0] + tc[0], tot_c[1] + tc[1]]
            diff = float(np.max(np.abs(sc - so)))
            shown = "(df differs)" if (mode == "max" and metric == "cider_d") else f"{diff:.1e}"
            label = "bleu1-4" if metric == "bleu" else metric
            line(mode, label, tc, to, base and base[f"{mode}/{metric}"],
                 f" {mc / 2**20:8.1f} {mo / 2**20:8.1f}", f" {shown:>11}")
        # one dialeval call for all of them shares tokens and n-gram counts, as a user's run does
        tt, mt, _ = measure(dialeval_runner("all", hyps, refs, mode), args.repeat)
        line(mode, "together", tuple(tot_c), tt, base and base[f"{mode}/all"], f" {'':8} {mt / 2**20:8.1f}")
        if not args.no_process:
            row = process_row(hyps, refs, mode, args.repeat, baseline=args.baseline)
            if row is None:
                print(f"{mode:6} {'process':9} (skipped: references per item differ or texts hold line breaks)")
            else:
                line(mode, "process", row["coco"], row["ours"], row.get("before"), "   (whole processes)")
    if args.floor:
        print("# start-up alone (whole processes, no scoring): wall s / CPU s")
        for name, (wall, cpu) in floor_rows(args.repeat).items():
            print(f"{'floor':6} {name:15} {wall:9.3f} {cpu:9.3f}")


if __name__ == "__main__":
    main()
