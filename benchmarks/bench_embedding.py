"""Embedding metrics: speed, vector-file load time against gensim, and DSTC6 system-level Pearson.

    python3 benchmarks/bench_embedding.py speed [--system S_1] [--word-vectors FILE] [--glove-rows 400000]
    python3 benchmarks/bench_embedding.py correlate [--metrics ...] [--word-vectors FILE|glove-6b-50d|minilm]
        [--vector-case keep] [--vector-symbols unknown] [--refs-mode max]
    python3 benchmarks/bench_embedding.py unreadable [--data-root DIR] [--word-vectors ...]

`speed` scores one DSTC6 system (2,000 responses x 11 references) with each metric in a fresh
process-level state and prints samples per second; nlg-eval's own run on the same input took
21-25 s per system for its three word-embedding metrics together (golden/README.md section 10),
which is the baseline the ratio is printed against. It then writes a synthetic GloVe text
file (`--glove-rows` x 300) and times our parse (cold, then the memory-mapped cache) against
gensim's `KeyedVectors.load_word2vec_format(no_header=True)` on the same file.

`correlate` scores the 20 DSTC6 systems and prints each metric's Pearson r with the system
human means, beside the AM-FM paper's values and those of the organisers' nlg-eval table.

`unreadable` counts, on DSTC6 and on every rated set found under the data folder, the rows that
the rules for a reply the vectors cannot read touch (docs/robustness.md, unreadable replies):
blank replies (the floor under every rule), replies with no known word when symbols are unknown
words (the floor before symbols were read by name), those still without one when symbols are
read by name (the floor now), and replies or references whose value changes because a symbol in
them is read by name; each count also among rows with a reference (the only rows the word-vector
metrics score), and the mean human rating of the rows, with their mean percentile in the set.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("DIALEVAL_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
DSTC6 = os.path.join(SHARED, "data", "dstc6-eval")
NLGEVAL_SECONDS_PER_SYSTEM = 24.9   # golden/README.md section 10: three metrics, S_1, one corpus call

PAPER = {"emb_average": 0.7768, "emb_extrema": 0.2345, "emb_greedy": 0.4028, "sent_cosine": -0.4563}
ORGANISERS_COLUMN = {"emb_average": "EmbeddingAverageCosineSimilairty",
                     "emb_extrema": "VectorExtremaCosineSimilarity", "emb_greedy": "GreedyMatchingScore",
                     "sent_cosine": "SkipThoughtsCosineSimilairty"}


def dstc6_systems(names: list[str]):
    from dialeval.data.datasets import load_dataset

    dataset = load_dataset("dstc6", DSTC6)
    samples = [s for s in dataset.samples if s.system in names] if names else dataset.samples
    return samples, dataset


def options(args) -> dict:
    return {k: v for k, v in {"word_vectors": args.word_vectors, "vector_case": args.vector_case,
                              "vector_symbols": getattr(args, "vector_symbols", None),
                              "embedding_rules": args.embedding_rules,
                              "sentence_model": args.sentence_model}.items() if v is not None}


def cmd_speed(args) -> None:
    from dialeval.metrics.base import Batch
    from dialeval.metrics.registry import build_metric

    samples, _ = dstc6_systems([args.system])
    batch_args = ([s.response for s in samples], [s.references for s in samples])
    print(f"DSTC6 {args.system}: {len(samples)} responses x {len(samples[0].references)} references")
    from dialeval.backbones import load_backbone
    from dialeval.metrics.embedding import sentence, tokens

    for name in args.metrics.split(","):
        tokens._TOKEN_CACHE.clear()            # cold: tokenise / encode from scratch
        getattr(sentence._shared_encoder, "cache_clear", lambda: None)()   # (no cache of its own now)
        metric = build_metric(name, **options(args))
        if name == "sent_cosine":
            load_backbone(metric.model_dir, kind="sentence-transformers")   # model load is not scoring
        else:
            _ = metric.table                       # vector load is timed separately below
        start = time.perf_counter()
        out = metric.compute(Batch(*batch_args))
        seconds = time.perf_counter() - start
        print(f"  {name:12s} {seconds:7.2f} s  {len(samples) / seconds:9.0f} samples/s  corpus {out.corpus:.6f}"
              "  (alone, tokenising / encoding from scratch)")
    word = [n for n in args.metrics.split(",") if n.startswith("emb_")]
    if word:
        # As nlg-eval's eval_emb_metrics runs them: one call, the input tokenised once for all three.
        tokens._TOKEN_CACHE.clear()
        metrics = [build_metric(n, **options(args)) for n in word]
        batch = Batch(*batch_args)
        start = time.perf_counter()
        for metric in metrics:
            metric.compute(batch)
        together = time.perf_counter() - start
        print(f"  {'+'.join(word)} on one batch (tokenised once): {together:.2f} s, "
              f"{len(samples) / together:.0f} samples/s; nlg-eval {NLGEVAL_SECONDS_PER_SYSTEM} s "
              f"-> {NLGEVAL_SECONDS_PER_SYSTEM / together:.1f}x")
    if args.glove_rows:
        bench_load(args.glove_rows, args.glove_dim)


def bench_load(rows: int, dim: int) -> None:
    from dialeval.metrics.embedding.vectors import load_vectors

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "glove.txt")
        rng = np.random.default_rng(0)
        with open(path, "w", encoding="utf-8") as handle:   # GloVe-like: 6 decimals, no header
            for start in range(0, rows, 20000):
                block = rng.normal(0, 0.4, size=(min(20000, rows - start), dim)).astype(np.float32)
                lines = [f"w{start + i} " + " ".join(f"{x:.6f}" for x in row) for i, row in enumerate(block)]
                handle.write("\n".join(lines) + "\n")
        size = os.path.getsize(path) / 2**20
        print(f"vector file: {rows} x {dim} GloVe text, {size:.0f} MiB")
        cache = os.path.join(tmp, "cache")
        start = time.perf_counter()
        ours = load_vectors(path, cache_dir=cache)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        warm_vectors = load_vectors(path, cache_dir=cache)
        _ = float(np.asarray(warm_vectors.matrix[-1]).sum())
        warm = time.perf_counter() - start
        print(f"  dialeval first load (parse + write cache): {cold:6.2f} s")
        print(f"  dialeval cached load (memory-mapped):      {warm:6.3f} s")
        try:
            from gensim.models import KeyedVectors
        except ImportError:
            print("  gensim not installed: no baseline")
            return
        start = time.perf_counter()
        kv = KeyedVectors.load_word2vec_format(path, binary=False, no_header=True)
        theirs = time.perf_counter() - start
        same = np.array_equal(kv.vectors, np.asarray(ours.matrix)) and kv.index_to_key == ours.words
        print(f"  gensim load_word2vec_format(no_header=True): {theirs:6.2f} s  "
              f"-> first load {theirs / cold:.1f}x faster, cached {theirs / warm:.0f}x; identical: {same}")


def cmd_correlate(args) -> None:
    from scipy.stats import pearsonr

    from dialeval.scoring import score

    samples, dataset = dstc6_systems([])
    metrics = args.metrics.split(",")
    start = time.perf_counter()
    result = score(samples, metrics, progress=False, refs_mode=args.refs_mode, **options(args))
    seconds = time.perf_counter() - start
    systems = [f"S_{k}" for k in range(1, 21)]
    human = np.array([dataset.system_ratings[s]["overall"] for s in systems])
    organisers = read_organisers_table()
    print(f"DSTC6 system-level Pearson, 20 systems ({seconds:.0f} s to score)")
    print("| metric | dialeval | paper (AM-FM Table 1) | organisers' nlg-eval table | signature |")
    print("|---|---|---|---|---|")
    for name in metrics:
        ours = np.array([result.systems[s][name] for s in systems])
        r = pearsonr(ours, human)[0]
        org = np.array([organisers[s][ORGANISERS_COLUMN[name]] for s in systems]) if name in ORGANISERS_COLUMN else None
        r_org = pearsonr(org, human)[0] if org is not None else float("nan")
        print(f"| {name} | {r:.4f} | {PAPER.get(name, float('nan')):.4f} | {r_org:.4f} | `{result.signatures[name]}` |")
    if args.dump:
        import json

        with open(args.dump, "w") as handle:
            json.dump({n: {s: result.systems[s][n] for s in systems} for n in metrics}, handle, indent=1)


def reading(samples, **opts) -> dict[str, np.ndarray]:
    """Per row, under the metric's own encoding: blank reply, reply with no known word, reply
    with a symbol read by name, a reference with one (the last two only under names)."""
    from dialeval.metrics.base import Batch
    from dialeval.metrics.embedding.nlgeval import EmbeddingAverage

    metric = EmbeddingAverage(**opts)
    batch = Batch([s.response for s in samples], [s.references for s in samples])
    hyp, ref, owner = metric._encode(batch)
    table = metric.table
    symbol = np.zeros(len(hyp.ids), dtype=bool)
    symbol[hyp.ids > table.unk_row] = True
    hyp_owner = np.repeat(np.arange(len(samples)), hyp.lengths)
    ref_symbol = np.zeros(len(samples), dtype=bool)
    ref_symbol[owner[np.bincount(np.repeat(np.arange(len(ref.lengths)), ref.lengths)[ref.ids > table.unk_row],
                                 minlength=len(ref.lengths)) > 0]] = True
    blank = np.array([not s.response.strip() for s in samples])
    return {"blank": blank, "deaf": (hyp.known == 0) & ~blank,
            "symbol": np.bincount(hyp_owner[symbol], minlength=len(samples)) > 0, "ref_symbol": ref_symbol,
            "has_refs": np.array([any(r.strip() for r in s.references) for s in samples])}


def cmd_unreadable(args) -> None:
    import warnings

    from dialeval.data.datasets import list_datasets

    warnings.simplefilter("ignore")   # out-of-vocabulary lines: the counts below say more
    root = args.data_root or os.path.join(SHARED, "data")
    base = {k: v for k, v in options(args).items() if k != "vector_symbols"}
    print("rows each rule for an unreadable reply touches (with a reference / all rows); human: mean rating of "
          "those rows (mean percentile in the set)")
    print("| set | rows | blank: floor (every rule) | no known word, symbols unknown: floor before | "
          "no known word, symbols by name: floor now | read by name, whole reply (floor before, scored now) | "
          "reply with a symbol read by name (value changes) | a reference with one (value may change) |")
    print("|---|---|---|---|---|---|---|---|")
    changed = []
    for spec in list_datasets():
        folder = os.path.join(root, spec.folder)
        if not os.path.isdir(folder):
            print(f"| {spec.name} | folder {spec.folder} not present |  |  |  |  |  |  |")
            continue
        samples = spec.load(folder).samples
        before = reading(samples, **base, vector_symbols="unknown")
        now = reading(samples, **base, vector_symbols="names")
        human = _human(samples)
        cells = [_cell(rows, now["has_refs"], human) for rows in (
            now["blank"], before["deaf"], now["deaf"], before["deaf"] & ~now["deaf"],
            now["symbol"] & ~before["deaf"], now["ref_symbol"])]
        print(f"| {spec.name} | {len(samples):,} | " + " | ".join(cells) + " |")
        touched = (before["deaf"] | now["symbol"] | now["ref_symbol"]) & now["has_refs"]
        if touched.any():
            changed.append((spec.name, [samples[i] for i in np.flatnonzero(touched)],
                            (before["deaf"] & ~now["deaf"])[touched], len(samples)))
    for name, rows, whole, total in changed:
        print(f"\n{name}: the {len(rows):,} rows with a reference that a symbol read by name could change, "
              "scored with symbols unknown (the floor before) and read by name (now)")
        print("| metric | rows changed (> 1e-6) | mean change | emoji-only replies: mean before | mean now |")
        print("|---|---|---|---|---|")
        for metric in ("emb_average", "emb_extrema", "emb_greedy"):
            old, new = (_scores(rows, metric, {**base, "vector_symbols": rule}) for rule in ("unknown", "names"))
            diff = np.abs(new - old) > 1e-6
            print(f"| {metric} | {int(diff.sum()):,} of {total:,} | {np.nanmean((new - old)[diff]) if diff.any() else 0:+.4f} "
                  f"| {np.nanmean(old[whole]) if whole.any() else float('nan'):.4f} "
                  f"| {np.nanmean(new[whole]) if whole.any() else float('nan'):.4f} |")


def _scores(samples, metric: str, opts: dict) -> np.ndarray:
    from dialeval.metrics.base import Batch
    from dialeval.metrics.registry import build_metric

    batch = Batch([s.response for s in samples], [s.references for s in samples])
    return build_metric(metric, refs_mode="max", **opts).compute(batch).sentence


def _human(samples) -> np.ndarray:
    """Each row's mean rating of the set's first quality (`overall` when it has one)."""
    qualities = sorted({q for s in samples for q in s.ratings})
    quality = "overall" if "overall" in qualities else (qualities[0] if qualities else None)
    return np.array([s.human(quality) if quality else np.nan for s in samples])


def _cell(rows: np.ndarray, has_refs: np.ndarray, human: np.ndarray) -> str:
    text = f"{int((rows & has_refs).sum()):,} / {int(rows.sum()):,}"
    rated = rows & ~np.isnan(human)
    if rated.any():
        pool = human[~np.isnan(human)]
        pct = [np.mean(pool < x) + 0.5 * np.mean(pool == x) for x in human[rated]]
        text += f"; human {human[rated].mean():.2f} ({np.mean(pct):.2f})"
    return text


def read_organisers_table() -> dict[str, dict[str, float]]:
    with open(os.path.join(DSTC6, "objective_evaluation_results.txt"), encoding="utf-8") as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle if line.strip()]
    header = rows[0]
    return {row[0]: {h: float(v) for h, v in zip(header[1:], row[1:])} for row in rows[1:]}


def main(argv=None) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    for mode in ("speed", "correlate", "unreadable"):
        p = sub.add_parser(mode)
        p.add_argument("--metrics", default="emb_average,emb_extrema,emb_greedy,sent_cosine")
        p.add_argument("--word-vectors")
        p.add_argument("--vector-case", choices=["auto", "keep", "lower"])
        p.add_argument("--vector-symbols", choices=["auto", "names", "unknown"])
        p.add_argument("--embedding-rules", choices=["dialeval", "nlgeval"])
        p.add_argument("--sentence-model")
        if mode == "speed":
            p.add_argument("--system", default="S_1")
            p.add_argument("--glove-rows", type=int, default=400000)
            p.add_argument("--glove-dim", type=int, default=300)
        elif mode == "unreadable":
            p.add_argument("--data-root", help="the folder holding every data set's folder (default: shared/data)")
        else:
            p.add_argument("--dump", help="write the per-system values as JSON")
            p.add_argument("--refs-mode", default="multi", help="multi (default), max or mean")
    args = parser.parse_args(argv)
    if not os.path.isdir(DSTC6):
        print(f"{DSTC6} not present", file=sys.stderr)
        return 1
    {"speed": cmd_speed, "correlate": cmd_correlate, "unreadable": cmd_unreadable}[args.mode](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
