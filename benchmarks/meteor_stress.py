"""METEOR stress comparison: dialeval against the METEOR 1.5 jar on generated pairs.

Generates (hypothesis, reference) pairs meant to stress every stage of the jar's aligner, scores
each pair with one reference through pycocoevalcap's jar wrapper and with dialeval (default
`meteor_compare="hash"`), and prints how many pairs were compared and how many differ by more
than --tol. Families (deterministic, --seed):

- collide: words replaced by others with the same Java String.hashCode() (exact stage), and
  inflected forms whose stems collide with another word (stem stage: "doing" ~ "f1");
- real: sentences of the synthetic golden set and DSTC6 S_1, with shuffled, dropped and
  repeated words;
- lengths: 1 to 80 words, including empty-ish and single-token lines;
- repeat: the same few words many times (a wide beam, many equal-rank branches);
- punct: punctuation, contractions, dots, dashes, quotes, numbers with commas;
- para: phrases and their paraphrases taken from METEOR's own paraphrase table, mixed with
  synonyms and inflections (paraphrase and synonym stages);
- long: hypotheses of 520-1,500 words (the compiled search's range), some repetitive.

Run from the repository root: `python3 benchmarks/meteor_stress.py [--per-family 2000]`.
Differences are written to --out (JSON lines) for inspection.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DIALEVAL_SHARED", REPO.parent / "shared"))
sys.path.insert(0, str(REPO / "src"))

from dialeval.metrics.overlap.meteor.javahash import java_hash  # noqa: E402


def corpus_sentences() -> list[str]:
    out = []
    synth = SHARED / "golden" / "synth-2000x11.jsonl"
    if synth.is_file():
        for line in synth.read_text().splitlines():
            row = json.loads(line)
            out.append(row["hyp"])
            out.extend(row["refs"][:3])
    s1 = SHARED / "data" / "dstc6-eval" / "hypotheses" / "S_1.txt"
    if s1.is_file():
        out.extend(x.strip() for x in s1.read_text(encoding="utf-8").splitlines() if x.strip())
    ref = SHARED / "data" / "dstc6-eval" / "references" / "original_refs.txt"
    if ref.is_file():
        out.extend(x.strip() for x in ref.read_text(encoding="utf-8").splitlines() if x.strip())
    return out or ["the cat sat on the mat", "do you want to go now ?"]


def colliding_groups() -> list[list[str]]:
    """Groups of lower-case alphanumeric words (2-3 characters) sharing one hash code."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    groups: dict[int, list[str]] = {}
    for n in (2, 3):
        for chars in itertools.product(alphabet, repeat=n):
            w = "".join(chars)
            groups.setdefault(java_hash(w), []).append(w)
    return [g for g in groups.values() if len(g) > 1]


def collider_of(word: str, rng: random.Random) -> str | None:
    """Another word with the same hash: change the last two characters (c1, c2) into
    (c1 + k, c2 - 31k) for a k that keeps them lower-case letters or digits."""
    if len(word) < 2:
        return None
    ok = set("abcdefghijklmnopqrstuvwxyz0123456789")
    c1, c2 = ord(word[-2]), ord(word[-1])
    options = []
    for k in (-3, -2, -1, 1, 2, 3):
        a, b = c1 + k, c2 - 31 * k
        if 0 < a < 0x10000 and 0 < b < 0x10000 and chr(a) in ok and chr(b) in ok:
            options.append(word[:-2] + chr(a) + chr(b))
    return rng.choice(options) if options else None


def fam_collide(rng, sents, groups, n):
    from dialeval.metrics.overlap.meteor.stemmer import stem

    pairs = []
    inflect = ["ing", "s", "ed", "es", "ly"]
    for _ in range(n):
        ref = rng.choice(sents).split()
        hyp = list(ref)
        rng.shuffle(hyp) if rng.random() < 0.3 else None
        for k in range(len(hyp)):
            r = rng.random()
            if r < 0.35:
                c = collider_of(hyp[k].lower(), rng)
                if c:
                    hyp[k] = c
            elif r < 0.45:
                g = rng.choice(groups)
                a, b = rng.sample(g, 2)
                hyp[k] = a
                ref.insert(rng.randrange(len(ref) + 1), b)
            elif r < 0.55:
                # stem collisions: an inflected word in one, a word colliding with its stem in the other
                w = hyp[k].lower()
                form = w + rng.choice(inflect)
                c = collider_of(stem(form), rng)
                if c:
                    hyp[k] = form
                    ref.insert(rng.randrange(len(ref) + 1), c)
        pairs.append((" ".join(hyp), " ".join(ref)))
    return pairs


def fam_real(rng, sents, n):
    pairs = []
    for _ in range(n):
        ref = rng.choice(sents).split()
        if rng.random() < 0.5:
            hyp = rng.choice(sents).split()
        else:
            hyp = [w for w in ref if rng.random() > 0.3]
            if rng.random() < 0.5:
                rng.shuffle(hyp)
            for _ in range(rng.randrange(3)):
                if hyp:
                    hyp.insert(rng.randrange(len(hyp) + 1), rng.choice(hyp))
        pairs.append((" ".join(hyp), " ".join(ref)))
    return pairs


def fam_lengths(rng, sents, n):
    words = [w for s in sents[:3000] for w in s.split()]
    pairs = []
    for _ in range(n):
        a, b = rng.choice([1, 1, 2, 3, 5, 10, 20, 40, 60, 80]), rng.choice([1, 2, 3, 5, 10, 20, 40, 80])
        hyp = [rng.choice(words) for _ in range(a)]
        ref = [rng.choice(words) for _ in range(b)]
        if rng.random() < 0.5:
            ref[:min(a, b) // 2] = hyp[:min(a, b) // 2]
        pairs.append((" ".join(hyp), " ".join(ref)))
    return pairs


def fam_repeat(rng, sents, n):
    base = ["the", "a", "word", "is", "it", "do", "f1", "going", "go", "went", "of", ".", ","]
    pairs = []
    for _ in range(n):
        pool = rng.sample(base, rng.randrange(1, 5))
        hyp = [rng.choice(pool) for _ in range(rng.randrange(1, 30))]
        ref = [rng.choice(pool) for _ in range(rng.randrange(1, 30))]
        pairs.append((" ".join(hyp), " ".join(ref)))
    return pairs


PUNCT = ["...", "..", ".", ",", "'", "''", "`", "\"", "-", "--", "?!", "(", ")", ":", ";", "'s", "n't",
         "1,000", "3.14", "U.S.", "Mr.", "e.g.", "don't", "it's", "o'clock", "well-known", "--x", "#", "$5",
         "a.m.", "No. 5", "&", "<url>", "'em", "rock'n'roll"]


def fam_punct(rng, sents, n):
    pairs = []
    for _ in range(n):
        s = rng.choice(sents).split()
        hyp, ref = list(s), list(s)
        for seq in (hyp, ref):
            for _ in range(rng.randrange(1, 6)):
                seq.insert(rng.randrange(len(seq) + 1), rng.choice(PUNCT))
        glue = "" if rng.random() < 0.3 else " "
        pairs.append((glue.join(hyp) if rng.random() < 0.2 else " ".join(hyp), " ".join(ref)))
    return pairs


def fam_para(rng, sents, n):
    import numpy as np

    from dialeval.metrics.overlap.meteor.resources import load_resources

    res = load_resources(None)
    folder = res.cache
    vocab = (folder / "para_vocab.txt").read_text(encoding="utf-8").split("\n")
    a_off, a_ids = np.load(folder / "para_a_off.npy", mmap_mode="r"), np.load(folder / "para_a_ids.npy", mmap_mode="r")
    b_off, b_ids = np.load(folder / "para_b_off.npy", mmap_mode="r"), np.load(folder / "para_b_ids.npy", mmap_mode="r")
    total = len(a_off) - 1

    def phrase(off, ids, e):
        return [vocab[i] for i in ids[off[e]:off[e + 1]]]

    syn_words = list(res.synonyms.row)
    pairs = []
    for _ in range(n):
        hyp, ref = [], []
        for _ in range(rng.randrange(1, 5)):
            e = rng.randrange(total)
            a, b = phrase(a_off, a_ids, e), phrase(b_off, b_ids, e)
            if rng.random() < 0.5:
                a, b = b, a
            hyp += a
            ref += b
            filler = rng.choice(sents).split()[:rng.randrange(0, 4)]
            hyp += filler
            ref += filler[::-1]
        if rng.random() < 0.5:
            w = rng.choice(syn_words)
            hyp.append(w)
            ref.append(rng.choice([w + "s", w + "ing", w + "ed", w]))
        pairs.append((" ".join(hyp), " ".join(ref)))
    return pairs


def fam_long(rng, sents, n):
    """Segments longer than 512 words (they take the compiled beam search), some repetitive."""
    pairs = []
    for _ in range(n):
        hyp, ref = [], []
        while len(hyp) < 520:
            hyp += rng.choice(sents).split()
        while len(ref) < rng.choice([10, 60, 520]):
            ref += rng.choice(sents).split()
        if rng.random() < 0.3:
            hyp = [rng.choice(["word", "the", "a", "do", "f1"]) for _ in range(rng.randrange(520, 1500))]
        if rng.random() < 0.5:
            ref += hyp[:40]
        pairs.append((" ".join(hyp), " ".join(ref)))
    return pairs


def jar_scores(pairs):
    from pycocoevalcap.meteor.meteor import Meteor

    scorer = Meteor()
    gts = {i: [r] for i, (_, r) in enumerate(pairs)}
    res = {i: [h] for i, (h, _) in enumerate(pairs)}
    _, scores = scorer.compute_score(gts, res)
    del scorer
    return [float(s) for s in scores]


def dialeval_scores(pairs, compare="hash"):
    from dialeval.metrics.base import Batch
    from dialeval.metrics.overlap.meteor.metric import Meteor

    metric = Meteor(meteor_compare=compare)
    stats = metric.multi_stats(Batch([h for h, _ in pairs], [[r] for _, r in pairs]))
    return metric.sentence_from_stats(stats).tolist()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-family", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--tol", type=float, default=1e-9)
    ap.add_argument("--out", default="meteor_stress_diffs.jsonl",
                    help="where the differing pairs are written (default: the current folder)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sents = corpus_sentences()
    groups = colliding_groups()
    n = args.per_family
    families = {
        "collide": fam_collide(rng, sents, groups, n),
        "real": fam_real(rng, sents, n),
        "lengths": fam_lengths(rng, sents, n),
        "repeat": fam_repeat(rng, sents, n),
        "punct": fam_punct(rng, sents, n),
        "para": fam_para(rng, sents, n),
        "long": fam_long(rng, sents, max(1, n // 10)),
    }
    # the jar wrapper sends one line per segment: no line breaks, no empty fields
    pairs, fam_of = [], []
    for name, got in families.items():
        for h, r in got:
            h, r = h.replace("\n", " "), r.replace("\n", " ")
            if h.strip() and r.strip():
                pairs.append((h, r))
                fam_of.append(name)
    t0 = time.perf_counter()
    jar = jar_scores(pairs)
    t1 = time.perf_counter()
    ours = dialeval_scores(pairs)
    t2 = time.perf_counter()
    strings = dialeval_scores(pairs, "strings")
    diffs = {name: 0 for name in families}
    counts = {name: 0 for name in families}
    differs_strings = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for (h, r), fam, a, b, c in zip(pairs, fam_of, jar, ours, strings):
            counts[fam] += 1
            if abs(a - c) > args.tol:
                differs_strings += 1
            if abs(a - b) > args.tol:
                diffs[fam] += 1
                out.write(json.dumps({"family": fam, "hyp": h, "ref": r, "jar": a, "dialeval": b}) + "\n")
    print(f"{'family':10} {'pairs':>7} {'differ':>7}")
    for name in families:
        print(f"{name:10} {counts[name]:7d} {diffs[name]:7d}")
    print(f"{'total':10} {len(pairs):7d} {sum(diffs.values()):7d}   (|jar - dialeval| > {args.tol:g})")
    print(f"pairs where meteor_compare=strings differs from the jar: {differs_strings}")
    print(f"jar {t1 - t0:.1f} s, dialeval {t2 - t1:.1f} s; differences written to {args.out}")


if __name__ == "__main__":
    main()
