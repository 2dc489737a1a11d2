"""Behavioural probes (`dialeval.meta.probes`, `dialeval probe`): the variants keep their
promises, the shares follow the stated rules (ties and NaN variants fail, NaN originals are not
applicable, skipped items are counted), and the command writes what it says.

Cheap metrics only (bleu1, bleu2, rouge_l and toy `Metric` subclasses defined here), so the file
runs in a few seconds.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from conftest import DATA, REPO, need
from dialeval.cli.main import main
from dialeval.data.readers import read_samples
from dialeval.data.sample import Sample
from dialeval.data.variants import word_starts
from dialeval.errors import DialevalError
from dialeval.meta.probes import (FAMILIES, GENERIC, PUNCTUATION, make_variants, outcomes, probe,
                                  select_items, share_ci)
from dialeval.metrics.base import Metric

DEMO = REPO / "examples" / "demo.jsonl"

# the scoring notes (rows without a value) are expected here: the tests make such rows on purpose
pytestmark = pytest.mark.filterwarnings("ignore::dialeval.scoring.DialevalNote")


class LongerIsBetter(Metric):
    """Toy metric: the number of whitespace words of the response; NaN when it contains "xx"
    (so that a test can make an original or a variant have no value)."""

    name = "toy_longer"
    needs_references = False

    def multi_stats(self, batch):
        return np.array([[math.nan if "xx" in h.split() else float(len(h.split()))]
                         for h in batch.hyps])

    def sentence_from_stats(self, stats):
        return stats[:, 0]


class ShorterIsBetter(LongerIsBetter):
    name = "toy_shorter"
    higher_is_better = False


def items() -> list[Sample]:
    """Items that exercise every family, including the cases where one cannot make a variant."""
    rows = [
        (["hi , how are you today ?"], "i am fine , thanks .", ["i am well , thank you ."]),
        (["what do you do for a living ?"], "i work as a nurse in a big hospital downtown",
         ["i am a nurse ."]),
        (["do you like music ?", "yes , a lot ."], "which kind of music do you like ?",
         ["what music do you like ?"]),
        ([], "no context here at all", ["no context"]),                       # parrot: skipped
        (["say something"], "ok", ["ok ."]),                                   # one word
        (["and then ?"], "fine thanks", ["fine"]),                             # two words
        (["repeat after me"], "repeat after me", ["sure"]),                    # parrot == response
        (["loop please"], "i think i think i think i think", ["i think so"]),  # loop == response
        (["café au lait ?"], "Crème brûlée, s'il vous plaît 42!", ["oui"]),
        (["how was it ?"], "That's nice.", ["good"]),                         # a generic reply
    ]
    return [Sample(id=f"i{k}", context=c, response=r, references=refs, system="sys")
            for k, (c, r, refs) in enumerate(rows)]


# --- the variants ------------------------------------------------------------------------------

def test_variants_are_deterministic_and_family_independent():
    samples = items()
    every = make_variants(samples, None, seed=7)
    assert list(every) == list(FAMILIES)
    assert make_variants(samples, None, seed=7) == every
    for family in FAMILIES:                       # alone, or with one other family, the same
        assert make_variants(samples, [family], seed=7)[family] == every[family]
        assert make_variants(samples, ["script", family], seed=7)[family] == every[family]
    other_seed = make_variants(samples, None, seed=8)
    assert any(other_seed[f] != every[f] for f in ("punct", "generic", "shuffle", "other_item"))


def test_each_family_keeps_its_promise():
    samples = items()
    v = make_variants(samples, None, seed=0)
    others = {s.response: s for s in samples}
    for i, s in enumerate(samples):
        words = s.response.split()
        assert v["empty"][i] == ""
        assert v["punct"][i] in PUNCTUATION
        assert v["generic"][i] in GENERIC
        if v["parrot"][i] is not None:
            assert v["parrot"][i] == s.context[-1]
        if v["shuffle"][i] is not None:
            assert sorted(v["shuffle"][i].split()) == sorted(words)
            assert v["shuffle"][i].split() != words
        if v["other_item"][i] is not None:
            donor = others[v["other_item"][i]]
            assert donor is not s and donor.context != s.context
        if v["loop"][i] is not None:
            got = v["loop"][i].split()
            assert len(got) == max(len(words), 8)
            assert got == [words[:2][k % len(words[:2])] for k in range(len(got))]
        if v["truncate"][i] is not None:      # the first two words of three or more, no mark after
            kept = v["truncate"][i].split()
            assert kept == words[:len(kept)] and any(ch.isalnum() for ch in kept[-1])
            assert len(word_starts(kept)) == 2 and len(word_starts(words)) > 2
        if v["script"][i] is not None:
            assert len(v["script"][i]) == len(s.response)
            assert not re.search("[A-Za-z]", v["script"][i])
            assert re.sub("[^0-9 ,.!?']", "", v["script"][i]) == re.sub("[^0-9 ,.!?']", "", s.response)
        if v["gibberish"][i] is not None:         # one made-up word per word, letters only
            made = v["gibberish"][i].split()
            assert len(made) == min(len(words), 16)
            assert all(re.fullmatch("[a-z]{2,7}", w) for w in made)
            assert v["gibberish"][i] == " ".join(made)
        if v["marks"][i] is not None:             # the response's own marks, no letter or digit
            assert not any(ch.isalnum() for ch in v["marks"][i])
            assert sorted(v["marks"][i].replace(" ", "")) == sorted(ch for ch in s.response
                                                                    if not ch.isalnum() and not ch.isspace())
    assert v["loop"][0] == "i am i am i am i am"
    assert v["truncate"][1] == "i work"
    assert v["script"][0] == "и ам фине , тханкс ."
    # skipped: no context, <= 2 words, one word, a variant that equals the original
    assert v["parrot"][3] is None and v["parrot"][6] is None
    assert v["truncate"][4] is None and v["truncate"][5] is None
    assert v["shuffle"][4] is None and v["shuffle"][7] is not None
    assert v["loop"][7] is None
    assert sum(x is None for x in v["script"]) == 0
    assert sum(x is None for x in v["gibberish"]) == 0
    long = make_variants([Sample(id="l", response=" ".join(["word"] * 40))], ["gibberish"], seed=0)["gibberish"][0]
    assert len(long.split()) == 16
    assert make_variants([Sample(id="b", response="  ")], ["gibberish"], seed=0)["gibberish"] == [None]
    marks = make_variants([Sample(id="m", response="yes , i can't wait !"), Sample(id="n", response="no marks here")],
                          ["marks"], seed=0)["marks"]
    assert marks == [", ' !", None]
    # punct and generic never offer the response's own text
    assert all(make_variants(samples, ["generic"], seed=k)["generic"][9] != "that's nice."
               for k in range(30))


def test_other_item_skips_when_every_item_shares_the_context():
    same = [Sample(id=str(k), context=["hello"], response=f"reply number {k}") for k in range(4)]
    assert make_variants(same, ["other_item"])["other_item"] == [None] * 4
    mixed = same + [Sample(id="x", context=["bye"], response="see you")]
    got = make_variants(mixed, ["other_item"])["other_item"]
    assert got[4] in {s.response for s in same}         # the odd one out gets one of theirs
    assert sum(g == "see you" for g in got) <= 1         # a permutation: a response given once


def test_unknown_family_and_bad_seed_are_refused():
    with pytest.raises(DialevalError, match="unknown probe family 'shufle'; did you mean 'shuffle'.*valid: empty"):
        make_variants(items(), ["shufle"])
    with pytest.raises(DialevalError, match="non-negative"):
        make_variants(items(), None, seed=-1)


# --- outcomes and shares --------------------------------------------------------------------------

def test_ties_and_nan_variants_fail_nan_originals_do_not_count():
    original = np.array([2.0, 2.0, 2.0, 2.0, math.nan, 5.0])
    variant = np.array([1.0, 2.0, 3.0, math.nan, 1.0, 0.0])
    skipped = np.array([False, False, False, False, False, True])
    assert list(outcomes(original, variant, skipped)) == ["win", "tie", "loss", "variant_nan", "n/a", "skipped"]
    assert list(outcomes(original, variant, skipped, higher_is_better=False)) == \
        ["loss", "tie", "win", "variant_nan", "n/a", "skipped"]
    share, low, high = share_ci(1, 4, 0, np.random.default_rng(0))
    assert share == 0.25 and math.isnan(low) and math.isnan(high)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


TINY = [
    {"id": "1", "context": ["how are you today my friend ?"], "response": "fine thanks"},
    {"id": "2", "context": ["hi"], "response": "hello there how are you"},
    {"id": "3", "context": ["what is up with you"], "response": "not much and you ?"},
    {"id": "4", "context": [], "response": "i like tea a lot"},
    {"id": "5", "context": ["xx"], "response": "a b c d"},
    {"id": "6", "context": ["some long question for you"], "response": "xx marks the spot"},
]


def test_hand_computed_shares_on_a_tiny_file(tmp_path):
    samples = read_samples(write_jsonl(tmp_path / "tiny.jsonl", TINY))
    r = probe(samples, [LongerIsBetter(), ShorterIsBetter()], families=["parrot", "truncate"],
              n_boot=0)
    # toy_longer = number of words (NaN with the word "xx"); original vs parrot (last context turn):
    #   1: 2 vs 7 -> loss   2: 5 vs 1 -> win   3: 5 vs 5 -> tie (a failure)
    #   4: no context -> skipped   5: 4 vs NaN ("xx") -> variant NaN (a failure)
    #   6: original NaN -> not applicable
    #   n = win + tie + loss + variant NaN = 1 + 1 + 1 + 1 = 4; share = 1 / 4 = 0.25
    assert r.results["toy_longer"]["parrot"] == {
        "wins": 1, "ties": 1, "losses": 1, "variant_nan": 1, "nan": 1, "skipped": 1, "n": 4,
        "share": 0.25, "ci_low": pytest.approx(math.nan, nan_ok=True),
        "ci_high": pytest.approx(math.nan, nan_ok=True)}
    # truncate (first two words): 1 has two words -> skipped; 6 not applicable;
    #   2: 5 vs 2, 3: 5 vs 2, 4: 5 vs 2, 5: 4 vs 2 -> four wins; share = 4 / 4 = 1
    t = r.results["toy_longer"]["truncate"]
    assert (t["wins"], t["n"], t["skipped"], t["nan"], t["share"]) == (4, 4, 1, 1, 1.0)
    # lower is better: "above" means lower, so parrot's 1 (2 < 7) wins and 2 (5 > 1) loses:
    #   share = 1 / 4 again, truncate = 0 / 4
    s = r.results["toy_shorter"]
    assert (s["parrot"]["wins"], s["parrot"]["losses"], s["parrot"]["share"]) == (1, 1, 0.25)
    assert (s["truncate"]["losses"], s["truncate"]["share"]) == (4, 0.0)
    assert r.higher_is_better == {"toy_longer": True, "toy_shorter": False}


def test_failures_list_each_item_the_original_did_not_win(tmp_path, capsys):
    samples = read_samples(write_jsonl(tmp_path / "tiny.jsonl", TINY))
    r = probe(samples, [LongerIsBetter()], families=["parrot"], n_boot=0)
    # the hand count above: item 1 loses (2 words vs 7), 3 ties (5 vs 5), 5's parrot is NaN;
    # 2 wins, 4 is skipped and 6 is not applicable, so neither is listed
    got = [(f["id"], f["outcome"], f["score"], f["variant_score"]) for f in r.failures()]
    assert got[:2] == [("1", "loss", 2.0, 7.0), ("3", "tie", 5.0, 5.0)]
    assert got[2][:3] == ("5", "variant_nan", 4.0) and math.isnan(got[2][3])
    first = next(r.failures())
    assert (first["last_turn"], first["response"], first["variant"]) == \
        ("how are you today my friend ?", "fine thanks", "how are you today my friend ?")
    # the command writes them as JSON lines, NaN as null
    path = tmp_path / "fails.jsonl"
    assert main(["probe", str(tmp_path / "tiny.jsonl"), "--metrics", "bleu2", "--families", "empty,shuffle",
                 "--n-boot", "0", "--failures", str(path)]) == 0
    capsys.readouterr()
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    # BLEU-2 without references is not applicable to any item: nothing failed
    assert lines == []
    assert main(["probe", str(DEMO), "--metrics", "bleu1", "--families", "shuffle", "--n-boot", "0",
                 "--failures", str(path)]) == 0
    capsys.readouterr()
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    # BLEU-1 ties every shuffle (the test below): each probed item with a shuffle is listed
    assert lines and all(f["outcome"] == "tie" and f["score"] == f["variant_score"] for f in lines)
    assert all(sorted(f["variant"].split()) == sorted(f["response"].split()) for f in lines)


def test_a_length_loving_metric_fails_loop_and_passes_truncate():
    rows = [Sample(id=str(k), context=[f"question {k}"], response=" ".join(f"w{k}_{j}" for j in range(3 + k % 4)))
            for k in range(12)]      # 3 to 6 words: loop makes 8, truncate 2
    r = probe(rows, [LongerIsBetter()], families=["loop", "truncate"], n_boot=200)
    assert r.results["toy_longer"]["loop"]["share"] == 0.0
    assert r.results["toy_longer"]["loop"]["losses"] == 12
    assert r.results["toy_longer"]["truncate"]["share"] == 1.0
    assert r.results["toy_longer"]["truncate"]["ci_low"] == 1.0


def test_bleu1_cannot_tell_a_shuffle_from_the_original():
    """BLEU-1 counts clipped unigrams and the brevity penalty: a permutation of the response's
    tokens changes neither, so every applicable item is a tie and the share is 0."""
    rng = np.random.default_rng(5)
    vocab = [f"w{k}" for k in range(12)] + [",", ".", "?"]
    rows = []
    for k in range(40):
        response = " ".join(rng.choice(vocab, size=int(rng.integers(2, 12))))
        refs = [" ".join(rng.choice(vocab, size=int(rng.integers(1, 12)))) for _ in range(int(rng.integers(1, 4)))]
        rows.append(Sample(id=str(k), context=[f"c{k}"], response=response, references=refs))
    r = probe(rows, ["bleu1"], families=["shuffle"], seed=3, n_boot=100)
    got = r.results["bleu1"]["shuffle"]
    assert got["n"] > 30 and got["ties"] == got["n"] and got["share"] == 0.0
    assert got["ci_low"] == got["ci_high"] == 0.0


def test_probe_scores_once_with_a_system_per_family_and_is_reproducible():
    samples = read_samples(DEMO)
    r = probe(samples, "bleu2,rouge_l", families=["empty", "parrot"], seed=1, n_boot=300)
    systems = [s.system for s in r.scores.samples]
    assert systems[:8] == ["probe:original"] * 8 and set(systems) == {"probe:original", "probe:empty", "probe:parrot"}
    assert [s.id for s in r.scores.samples[:8]] == [s.id for s in samples]
    assert r.results["bleu2"]["empty"]["share"] == 1.0
    again = probe(samples, "bleu2,rouge_l", families=["parrot", "empty"], seed=1, n_boot=300)
    assert json.dumps(again.to_dict(), sort_keys=True) == json.dumps(r.to_dict(), sort_keys=True)
    for row in r.table():
        assert row["ci_low"] <= row["share"] <= row["ci_high"]


def test_reference_metrics_are_not_applicable_without_references():
    rows = [Sample(id=str(k), context=["hi there"], response=f"hello friend number {k}") for k in range(3)]
    rows.append(Sample(id="r", context=["hi there"], response="hello my friend", references=["hello friend"]))
    got = probe(rows, ["bleu2"], families=["truncate"], n_boot=0).results["bleu2"]["truncate"]
    assert (got["nan"], got["n"]) == (3, 1)


# --- which items are probed ------------------------------------------------------------------------

def test_top_limit_and_reference_copies():
    rows = [Sample(id=str(k), response=f"answer {k} here", references=[f"ref {k}"],
                   ratings={"overall": [float(v)]})
            for k, v in enumerate([1, 2, 3, 3, 4, 5, 5, 2, 1, 3])]
    rows.append(Sample(id="copy", response="the reference", references=["the  reference"],
                       ratings={"overall": [5.0]}))
    # a tokenised copy of a reference reads as it: "i 'm fine ." is "I'm fine."
    rows.append(Sample(id="tokenised", response="i 'm fine .", references=["x", "I'm fine."],
                       ratings={"overall": [5.0]}))
    kept, counts = select_items(rows, top="overall:0.3")
    # the copies are dropped first; then 10 rated items, top 30% = 3 items: 5, 5, 4 (threshold 4)
    assert [s.id for s in kept] == ["4", "5", "6"]
    assert counts == {"input": 12, "reference_copies_dropped": 2, "not_in_top": 7,
                      "left_out_by_limit": 0, "probed": 3}
    kept, _ = select_items(rows, top=("overall", 0.4))     # 4 items: 5, 5, 4, then 3 tied x3
    assert [s.id for s in kept] == ["2", "3", "4", "5", "6", "9"]
    kept, counts = select_items(rows, keep_reference_copies=True, limit=4, seed=2)
    assert len(kept) == 4 and counts["left_out_by_limit"] == 8 and counts["reference_copies_dropped"] == 0
    assert [s.id for s in kept] == [s.id for s in select_items(rows, keep_reference_copies=True, limit=4, seed=2)[0]]
    with pytest.raises(DialevalError, match="no item has 'fluency' ratings"):
        select_items(rows, top="fluency:0.5")
    with pytest.raises(DialevalError, match=r"\(0, 1\]"):
        select_items(rows, top="overall:1.5")


# --- the command ---------------------------------------------------------------------------------

def test_cli_writes_json_and_html_and_is_byte_identical(tmp_path, capsys):
    args = ["probe", str(DEMO), "--metrics", "bleu2,rouge_l", "--families", "empty,shuffle,other_item",
            "--n-boot", "200", "--seed", "4"]
    assert main(args + ["-o", str(tmp_path / "a.json"), "--report", str(tmp_path / "a.html")]) == 0
    out = capsys.readouterr().out
    assert "shuffle" in out and "probes|families:empty,shuffle,other_item|seed:4" in out
    assert main(args + ["-o", str(tmp_path / "b.json"), "--table-format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("metric,family,share,ci_low,ci_high,wins,ties,losses")
    first = (tmp_path / "a.json").read_bytes()
    assert first == (tmp_path / "b.json").read_bytes()
    data = json.loads(first)
    assert data["kind"] == "dialeval-probes" and data["families"] == ["empty", "shuffle", "other_item"]
    cell = data["results"]["bleu2"]["empty"]
    assert set(cell) == {"wins", "ties", "losses", "variant_nan", "nan", "skipped", "n", "share",
                         "ci_low", "ci_high"}
    assert data["items"]["probed"] == 8 and data["settings"]["seed"] == 4
    assert data["signatures"]["bleu2"].startswith("bleu2|")
    page = (tmp_path / "a.html").read_text(encoding="utf-8")
    assert "Behavioural probes" in page and "default-src 'none'" in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)


def test_cli_unknown_family_is_one_line_with_status_2(tmp_path, capsys):
    assert main(["probe", str(DEMO), "--families", "empty,bogus", "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown probe family 'bogus'" in err[0] and "script" in err[0]
    assert not (tmp_path / "x.json").exists()
    assert main(["probe", "--metrics", "bleu2"]) == 2
    assert "no input" in capsys.readouterr().err


def test_cli_probes_a_plugin_metric_by_name(tmp_path, capsys, monkeypatch):
    from dialeval.metrics.registry import REGISTRY, MetricSpec

    spec = MetricSpec("toy_longer", f"{__name__}:LongerIsBetter", "plugin", "toy: words of the response")
    monkeypatch.setitem(REGISTRY._specs, "toy_longer", spec)
    tiny = write_jsonl(tmp_path / "tiny.jsonl", TINY)
    assert main(["probe", str(tiny), "--metrics", "toy_longer", "--families", "parrot,loop",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["results"]["toy_longer"]["parrot"]["share"] == 0.25   # as computed by hand above
    assert data["results"]["toy_longer"]["loop"]["share"] == 0.0


def test_report_gets_a_probes_section(tmp_path, capsys):
    scores, probes, page = tmp_path / "s.jsonl", tmp_path / "p.json", tmp_path / "r.html"
    assert main(["score", str(DEMO), "--metrics", "bleu2,rouge_l", "--with-stats", "-o", str(scores)]) == 0
    assert main(["probe", str(DEMO), "--metrics", "bleu2", "--families", "empty,loop", "-o", str(probes)]) == 0
    assert main(["report", str(scores), "--probes", str(probes), "-o", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert html.count('<section id="probes">') == 1 and '<a href="#probes">' in html
    assert html.index('<section id="probes">') < html.rindex("<script>")
    capsys.readouterr()
    assert main(["report", str(scores), "--probes", str(scores), "-o", str(tmp_path / "bad.html")]) == 2
    assert "cannot read probe results" in capsys.readouterr().err


def test_cli_on_a_public_data_set(tmp_path, capsys):
    usr = need(DATA / "usr")
    assert main(["probe", "--dataset", "usr-tc", "--data-root", str(usr), "--metrics", "bleu2",
                 "--families", "parrot,truncate", "--top", "overall:0.5", "--limit", "30",
                 "--n-boot", "100", "-o", str(tmp_path / "usr.json")]) == 0
    data = json.loads((tmp_path / "usr.json").read_text())
    assert data["items"]["probed"] == 30 and data["items"]["not_in_top"] > 0
    assert "Original Ground Truth" in capsys.readouterr().err       # left out, as evaluate does
    # the folder holding every set's folder works too
    assert main(["probe", "--dataset", "usr-tc", "--data-root", str(DATA), "--metrics", "bleu2",
                 "--families", "truncate", "--limit", "5", "--json"]) == 0


# --- training negatives (data/variants.py) ---------------------------------------------------
def test_bland_replies_are_frequent_short_replies_never_the_probes_own():
    from dialeval.data.variants import GENERIC, bland_replies

    corpus = (["Thanks ."] * 5 + ["I see ."] * 3 + ["ok ."] * 9 + ["What do you mean ?"] * 7
              + ["Here you are ."] * 3 + ["a much longer reply with many words in it ."] * 20)
    got = bland_replies(corpus, top=3)
    # "ok ." and "What do you mean ?" read as the probes' "ok." and "what do you mean?": left out;
    # the long reply is not short; ties ("I see ." and "Here you are .", 3 each) in first-seen order
    assert got == ["Thanks .", "I see .", "Here you are ."]
    assert not {g.replace(" ", "") for g in got} & {g.replace(" ", "") for g in GENERIC}


def test_training_variant_families_by_hand():
    from dialeval.data.variants import training_variant

    ctx, resp = ["do you like jazz ?"], "yes , i play the saxophone every day"
    assert training_variant("parrot", ctx, resp, 0, 0) == "do you like jazz ?"
    # the response's first two tokens repeated to its length (8 whitespace tokens)
    assert training_variant("loop", ctx, resp, 0, 0) == "yes , yes , yes , yes ,"
    # up to the second word: "," holds no letter or digit, so the cut is after "i"
    assert training_variant("truncate", ctx, resp, 0, 0) == "yes , i"
    assert training_variant("empty", ctx, resp, 0, 0) == ""
    # gibberish is the probe's own variant: the same seeded stream per (seed, family, item)
    made = training_variant("gibberish", ctx, resp, 0, 5)
    assert made == make_variants([Sample(id="x", response=resp, context=ctx)] * 6, ["gibberish"], seed=0)["gibberish"][5]
    assert len(made.split()) == 8 and made != training_variant("gibberish", ctx, resp, 0, 6)
    # generic comes from the given pool, seeded; never the response itself
    pool = ["Thanks .", "yes , i play the saxophone every day"]
    assert training_variant("generic", ctx, resp, 0, 3, bland=pool) == "Thanks ."
    # a parrot of a response that is its context's last turn is no negative
    assert training_variant("parrot", ["same words"], "same words", 0, 0) is None
    with pytest.raises(DialevalError, match="not a training-negative family"):
        training_variant("other_item", ctx, resp, 0, 0)
    with pytest.raises(DialevalError, match="bland replies"):
        training_variant("generic", ctx, resp, 0, 0)


def test_a_variant_that_reads_as_the_original_is_not_probed():
    # a tokenised corpus's "i 'm not sure ." reads as the bland list's "i'm not sure.", and
    # "thank you ." has two words, so cutting it to its first two words leaves the reply itself
    rows = [Sample(id=str(k), context=["are you coming ?"], response="i 'm not sure .") for k in range(40)]
    rows.append(Sample(id="t", context=["here you are ."], response="thank you ."))
    v = make_variants(rows, ["generic", "truncate"], seed=0)
    assert all(g is not None and g != "i'm not sure." for g in v["generic"][:40])
    assert {g for g in v["generic"][:40]} <= set(GENERIC) - {"i'm not sure."}
    # "'m" is a clitic split off "i": the first two words are "i 'm" and "not"
    assert v["truncate"][40] is None and v["truncate"][0] == "i 'm not"
    assert make_variants([Sample(id="d", context=["x"], response="do n't worry , it 's fine")],
                         ["truncate"])["truncate"] == ["do n't worry"]
    # a parrot that differs from the response by a space before the mark reads the same: skipped
    echo = Sample(id="e", context=["ok."], response="ok .")
    assert make_variants([echo], ["parrot"])["parrot"] == [None]


def test_training_negatives_keep_the_draws_the_shipped_folders_were_trained_on():
    # negative_samples compares by whitespace alone (as_trained), so the shipped compositions
    # rebuild from the same rows: "ok." is still a parrot of "ok ." there
    from dialeval.meta.probes import negative_samples

    echo = Sample(id="e", context=["ok."], response="ok .", ratings={"overall": [1.0]})
    assert make_variants([echo], ["parrot"], as_trained=True)["parrot"] == ["ok."]
    assert [r.response for r in negative_samples([echo], ["parrot"], keep_out_top=None)] == ["ok."]
