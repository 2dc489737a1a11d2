"""BLEU-1..4, ROUGE-L and CIDEr-D: dialeval beside pycocoevalcap, same input, same process.

Prints per metric: wall seconds of each (median of --repeat runs), the speed ratio, the peak
traced memory of each, and the largest difference between their sentence values.

    python3 benchmarks/bench_overlap.py                      # synthetic 2,000 x 11 set
    python3 benchmarks/bench_overlap.py --dstc6 S_1          # one DSTC6 system
    python3 benchmarks/bench_overlap.py --modes multi max    # max: 22,000 single-reference pairs

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


def measure(fn, repeat):
    """Median wall time of untraced runs, then peak traced memory of one more run.

    Tracing slows pure-Python code far more than numpy code, so it never overlaps timing.
    """
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(times), peak, result


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


def process_row(hyps, refs, mode, repeat):
    """Whole processes: (coco wall, ours wall, coco CPU, ours CPU), medians of `repeat` runs."""
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
        env = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
        got = {"coco": ([], []), "ours": ([], [])}
        for _ in range(repeat):
            for name, cmd in (("coco", coco), ("ours", ours)):
                cpu0 = _children_cpu()
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
                got[name][0].append(time.perf_counter() - t0)
                got[name][1].append(_children_cpu() - cpu0)
        med = statistics.median
        return med(got["coco"][0]), med(got["ours"][0]), med(got["coco"][1]), med(got["ours"][1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dstc6", metavar="SYSTEM", help="a DSTC6 system (e.g. S_1) instead of the synthetic set")
    ap.add_argument("--modes", nargs="+", default=["multi", "max"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-process", action="store_true", help="skip the whole-process row")
    args = ap.parse_args(argv)
    if not SHARED.exists():
        sys.exit(f"{SHARED} not found: the benchmark reads ../shared")
    hyps, refs = load_dstc6(args.dstc6) if args.dstc6 else load_synth()
    name = f"DSTC6 {args.dstc6}" if args.dstc6 else "synth-2000x11"
    print(f"# {name}: {len(hyps)} hypotheses, {sum(map(len, refs))} references; median of {args.repeat} runs")
    header = f"{'mode':6} {'metric':9} {'coco s':>8} {'ours s':>8} {'ratio':>7} {'coco MB':>8} {'ours MB':>8} {'max |diff|':>11}"
    print(header)
    for mode in args.modes:
        tot_c = tot_o = 0.0
        for metric in ["bleu", "rouge_l", "cider_d"]:
            tc, mc, sc = measure(coco_runner(metric, hyps, refs, mode), args.repeat)
            to, mo, so = measure(dialeval_runner(metric, hyps, refs, mode), args.repeat)
            tot_c += tc
            tot_o += to
            diff = float(np.max(np.abs(sc - so)))
            shown = "(df differs)" if (mode == "max" and metric == "cider_d") else f"{diff:.1e}"
            label = "bleu1-4" if metric == "bleu" else metric
            print(f"{mode:6} {label:9} {tc:8.3f} {to:8.3f} {tc / to:6.1f}x {mc / 2**20:8.1f} {mo / 2**20:8.1f} {shown:>11}")
        print(f"{mode:6} {'sum':9} {tot_c:8.3f} {tot_o:8.3f} {tot_c / tot_o:6.1f}x")
        # one dialeval call for all of them shares tokens and n-gram counts, as a user's run does
        tt, mt, _ = measure(dialeval_runner("all", hyps, refs, mode), args.repeat)
        print(f"{mode:6} {'together':9} {tot_c:8.3f} {tt:8.3f} {tot_c / tt:6.1f}x {'':8} {mt / 2**20:8.1f}")
        if not args.no_process:
            row = process_row(hyps, refs, mode, args.repeat)
            if row is None:
                print(f"{mode:6} {'process':9} (skipped: references per item differ or texts hold line breaks)")
            else:
                wc, wo, cc, co = row
                print(f"{mode:6} {'process':9} {wc:8.3f} {wo:8.3f} {wc / wo:6.1f}x   "
                      f"CPU s {cc:.2f} / {co:.2f} = {cc / co:.1f}x   (whole processes, start-up included)",
                      flush=True)


if __name__ == "__main__":
    main()
