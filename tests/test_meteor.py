"""METEOR 1.5 without Java: normaliser, stemmer, scoring formula, hand-computed alignments on a
small resource set, the paraphrase cache, error messages and a run with Java off the PATH."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialeval.metrics.base import Batch
from dialeval.metrics.overlap.meteor import resources as meteor_resources
from dialeval.metrics.overlap.meteor.metric import Meteor, score_stats
from dialeval.metrics.overlap.meteor.normalize import Normalizer, parse_nonbreaking, wrapper_fields
from dialeval.metrics.overlap.meteor.stemmer import stem

from conftest import GOLDEN, need

NBP = parse_nonbreaking("# comment\nMr\nDr\nNo #NUMERIC_ONLY#\n")


def words(text: str) -> tuple[str, ...]:
    return Normalizer(NBP).words(text)


# -- normaliser ----------------------------------------------------------------------------

def test_normaliser_examples_of_the_golden_readme():
    # golden/README.md §5.2: "Le test est en français." gives 6 words; "テスト" gives 3
    assert len(words("Le test est en français.")) == 6
    assert words("テスト") == ("テ", "ス", "ト")


@pytest.mark.parametrize("text, expected", [
    ("I don't know, do you?", ("i", "don", "'t", "know", ",", "do", "you", "?")),
    ("it costs 1,000 dollars.", ("it", "costs", "1,000", "dollars", ".")),
    ("Mr. Smith saw Dr. Who", ("mr.", "smith", "saw", "dr.", "who")),
    ("see No. 5 and no. more", ("see", "no.", "5", "and", "no.", "more")),
    ("the U.S. army", ("the", "us", "army")),
    ("wait... what", ("wait", "...", "what")),
    ("a well-known “quote”", ("a", "well", "known", '"', "quote", '"')),
    ("<URL> is here", ("<", "url", ">", "is", "here")),
])
def test_normaliser_hand_cases(text, expected):
    assert words(text) == expected


# characters where the fast paths (str.split, str.translate, str.strip, no collapse on ASCII)
# could part from the jar's rules: Java's and Python's different whitespace, controls, unicode
# spaces, the characters the rules act on, letters of both kinds
_EDGE = (" \t\n\r\f\x0b\x1c\x1d\x1e\x1f\x00\x01\x85\xa0\u2000\u2009\u202f\u3000"
         ".,'`-\u2013\u2018\u2019\u201c\u201d\"!?()$%&|abcXYZ019\u00e9\u0416")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_EDGE, max_size=40))
def test_fast_paths_equal_the_regex_rules(text):
    """java_tokens, java_trim and separate_other take C-speed paths where they can; each must
    equal the rule it replaces (written out here), and an ASCII text leaves the normaliser
    with single spaces, so skipping the collapse there changes nothing."""
    import re

    from dialeval.metrics.overlap.meteor import normalize as nz

    assert nz.java_tokens(text) == [t for t in re.split("[ \t\n\r\f]+", text) if t]
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    assert nz.java_trim(text) == text[start:end]
    assert nz.separate_other(text) == nz._SEP_OTHER.sub(r" \1 ", " " + text + " ")
    out = Normalizer(NBP).normalize(text)
    assert out == nz.java_trim(nz._WHITE.sub(" ", out))
    assert out == _every_rule(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_EDGE + "|", max_size=20), st.lists(st.text(alphabet=_EDGE + "|", max_size=12),
                                                            min_size=1, max_size=3))
def test_wrapper_fields_equal_the_wrappers_regexes(hyp, refs):
    """pycocoevalcap's line: whitespace runs (Python's \\s) to one space, split on |||, Java's
    split dropping trailing empty fields, each field trimmed."""
    import re

    from dialeval.metrics.overlap.meteor import normalize as nz

    line = " ||| ".join(["SCORE", " ||| ".join(refs), hyp.replace("|||", "")])
    parts = re.split(r"\|\|\|", re.sub(r"\s+", " ", line))
    while parts and parts[-1] == "":
        parts.pop()
    fields = [nz.java_trim(p) for p in parts[1:]]
    assert wrapper_fields(hyp, refs) == (fields[-1], fields[:-1])


def _every_rule(line: str) -> str:
    """The normaliser with every rule applied unconditionally, by the regexes alone (what the
    skips and fast paths of `Normalizer.normalize` must reproduce)."""
    import re

    from dialeval.metrics.overlap.meteor import normalize as nz

    s = nz._SEP_OTHER.sub(r" \1 ", " " + line + " ")
    s = nz._MULTI_DOT.sub(r" DOTMULTI\1", s)
    while "DOTMULTI." in s:
        s = nz._MULTI_DOT2.sub(r"DOTDOTMULTI \1", s)
        s = s.replace("DOTMULTI.", "DOTDOTMULTI")
    for pattern in nz._COMMA:
        s = pattern.sub(r"\1 , \2", s)
    s = nz._QUOTE2.sub(' " ', nz._QUOTE.sub("'", s))
    s = nz._RM_DASH.sub(r"\1 \2", s.replace("\u2013", "-").replace("--", "-"))
    for pattern, repl in nz._CONT_EN:
        s = pattern.sub(repl, s)
    tokens = [t for t in re.split("[ \t\n\r\f]+", s) if t]
    s = Normalizer(NBP)._split_final_dots(" ".join(tokens))
    while "DOTDOTMULTI" in s:
        s = s.replace("DOTDOTMULTI", "DOTMULTI.")
    s = nz._WHITE.sub(" ", s.replace("DOTMULTI", "."))
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


def test_wrapper_fields_strip_bars_and_collapse_whitespace():
    hyp, refs = wrapper_fields(" a ||| b\t c ", ["x  y", "z"])
    assert hyp == "a b c"
    assert refs == ["x y", "z"]


# -- stemmer (Snowball English, as the jar's) ----------------------------------------------

@pytest.mark.parametrize("word, expected", [
    ("consigned", "consign"), ("consistency", "consist"), ("generously", "generous"),
    ("knightly", "knight"), ("skies", "sky"), ("dying", "die"), ("news", "news"),
    ("cried", "cri"), ("ties", "tie"), ("gaps", "gap"), ("gas", "gas"), ("hopping", "hop"),
    ("hoped", "hope"), ("generation", "generat"), ("communism", "communism"), ("by", "by"),
    ("succeeding", "succeed"), ("conditional", "condit"), ("happily", "happili"),
])
def test_stemmer_porter2_vocabulary(word, expected):
    assert stem(word) == expected


# -- scoring formula -----------------------------------------------------------------------

def _stats(**fields) -> list[float]:
    s = [0.0] * 23
    for k, v in fields.items():
        s[int(k[1:])] = float(v)
    return s


def test_score_formula_by_hand():
    # "cat the" vs "the cat": 2 exact matches (1 content, 1 function each side), 2 chunks
    s = _stats(f0=2, f1=2, f2=1, f3=1, f4=1, f5=1, f6=1, f7=1, f20=2, f21=2, f22=2)
    # P = R = 1, frag = 2 / 2 = 1, penalty = 0.6
    assert score_stats(s) == pytest.approx(0.4, abs=1e-15)
    # the same matches in one chunk: a perfect segment, no penalty
    s[20] = 1
    assert score_stats(s) == 1.0


def test_score_formula_degenerate_cases():
    assert score_stats([0.0] * 23) == 0.0                     # 0/0 -> NaN -> 0
    assert score_stats(_stats(f0=3, f1=2)) == 0.0             # no matches


def test_score_from_golden_stats_lines():
    lines = [json.loads(x) for x in need(GOLDEN / "nlg-eval-fixtures-meteor-stats.jsonl").read_text().splitlines()]
    for line in lines:
        stats = [float(v) for v in line["stats"].split()]
        assert score_stats(stats) == line["score"]


# -- a small resource set, aligned by hand -------------------------------------------------

@pytest.fixture(scope="module")
def small_resources(tmp_path_factory):
    root = tmp_path_factory.mktemp("meteor-small")
    (root / "function").mkdir()
    (root / "function" / "english.words").write_text("the\na\non\n")
    (root / "nonbreaking").mkdir()
    (root / "nonbreaking" / "english.prefixes").write_text("Mr\n")
    (root / "synonym").mkdir()
    (root / "synonym" / "english.exceptions").write_text("be\nis are\n")
    (root / "synonym" / "english.synsets").write_text("big\n1\nlarge\n1 7\nautomobile\n2\ncar\n2\n")
    (root / "data").mkdir()
    table = "0.5\nthe\na\n0.4\nlook for\nsearch\n0.3\nsearch\nlook for\n"
    with gzip.open(root / "data" / "paraphrase-en.gz", "wt", encoding="utf-8") as out:
        out.write(table)
    cache = tmp_path_factory.mktemp("meteor-cache")
    old = os.environ.get("DIALEVAL_CACHE_DIR")
    os.environ["DIALEVAL_CACHE_DIR"] = str(cache)
    yield root, cache
    if old is None:
        os.environ.pop("DIALEVAL_CACHE_DIR", None)
    else:
        os.environ["DIALEVAL_CACHE_DIR"] = old


def _row(resources_dir, hyp, refs):
    metric = Meteor(meteor_resources=str(resources_dir))
    return metric.multi_stats(Batch([hyp], [refs]))[0]


def test_synonym_and_paraphrase_alignment_by_hand(small_resources):
    root, _ = small_resources
    row = _row(root, "a big automobile", ["the large car"])
    # a~the by the paraphrase table (function words), big~large and automobile~car by synsets
    want = _stats(f0=3, f1=3, f2=1, f3=1, f12=2, f13=2, f18=1, f19=1, f20=1, f21=3, f22=3)
    assert row[:23].tolist() == want
    # Lh = Lr = .75*2 + .25*1 = 1.75; Mh = Mr = 2*.8*.75 + 1*.6*.25 = 1.35; perfect -> no penalty
    assert score_stats(row[:23]) == pytest.approx(1.35 / 1.75, abs=1e-15)


def test_multiword_paraphrase_and_fragmentation_by_hand(small_resources):
    root, _ = small_resources
    row = _row(root, "search the car", ["look for the car"])
    # "look for" <- "search" (2 ref words, 1 hyp word), "the", "car" exact; one chunk
    want = _stats(f0=3, f1=4, f2=1, f3=1, f4=1, f5=1, f6=1, f7=1, f16=1, f17=2, f20=1, f21=3, f22=4)
    assert row[:23].tolist() == want
    row = _row(root, "car the", ["the car"])
    assert row[20] == 2 and score_stats(row[:23]) == pytest.approx(0.4, abs=1e-15)


def test_best_reference_first_wins_ties_and_corpus_chunk_rule(small_resources):
    root, _ = small_resources
    metric = Meteor(meteor_resources=str(root))
    stats = metric.multi_stats(Batch(["the car", "car the"], [["a dog", "the car"], ["the car"]]))
    assert stats[0, 1] == 2 and stats[0, 20] == 1 and stats[0, 23] == 0   # perfect: no chunk in corpus
    assert stats[1, 20] == 2 and stats[1, 23] == 2
    total = stats.sum(axis=0)
    # summed: 4 words each side, all matched, 2 corpus chunks over 4 matches -> frag .5
    assert metric.corpus_from_stats(total) == pytest.approx(1 - 0.6 * 0.5 ** 0.2, abs=1e-15)


def test_empty_hypothesis_and_missing_references(small_resources):
    root, _ = small_resources
    metric = Meteor(meteor_resources=str(root))
    stats = metric.multi_stats(Batch(["", "the car"], [["the big car"], []]))
    assert stats[0, :23].tolist() == _stats(f1=3, f3=1)      # only the reference's lengths
    assert metric.sentence_from_stats(stats)[0] == 0.0
    assert np.isnan(stats[1]).all()                           # no reference: not scored


def test_cache_is_built_once_and_reused(small_resources):
    root, cache = small_resources
    sources = meteor_resources.locate(str(root))
    folder = meteor_resources.cache_dir_for(sources)
    meteor_resources.load_resources(str(root))
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["para_max_len"] == 2
    assert all(not name.endswith(".pkl") for name in manifest["files"])
    stamp = (folder / "para_order.npy").stat().st_mtime_ns
    meteor_resources._LOADED.clear()
    meteor_resources.load_resources(str(root))
    assert (folder / "para_order.npy").stat().st_mtime_ns == stamp


# -- errors ----------------------------------------------------------------------------------

def test_missing_resources_name_the_file_and_both_remedies(tmp_path, small_resources):
    with pytest.raises(meteor_resources.MeteorResourceError) as err:
        meteor_resources.locate(tmp_path / "nowhere")
    assert "pip install pycocoevalcap==1.2" in str(err.value) and "--meteor-resources" in str(err.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(meteor_resources.MeteorResourceError) as err:
        meteor_resources.locate(empty)
    assert "meteor-1.5.jar" in str(err.value)
    no_table = tmp_path / "no-table"
    shutil.copytree(small_resources[0], no_table)
    (no_table / "data" / "paraphrase-en.gz").unlink()
    with pytest.raises(meteor_resources.MeteorResourceError) as err:
        meteor_resources.locate(no_table)
    message = str(err.value)
    assert "data/paraphrase-en.gz" in message and "pycocoevalcap" in message and "--meteor-resources" in message


def test_cli_missing_resources_is_one_line(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"response": "a cat", "references": ["the cat"]}) + "\n")
    proc = subprocess.run([sys.executable, "-m", "dialeval.cli", "score", str(data), "--metrics", "meteor",
                           "--meteor-resources", str(tmp_path / "missing")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "METEOR resource missing" in lines[0]
    assert "pycocoevalcap" in lines[0] and "--meteor-resources" in lines[0]


# -- the real METEOR data, with Java hidden ---------------------------------------------------

def _installed_or_skip():
    try:
        meteor_resources.locate(None)
    except meteor_resources.MeteorResourceError as exc:
        pytest.skip(str(exc))


def test_cli_scores_without_java(tmp_path):
    _installed_or_skip()
    fixtures = json.loads(need(GOLDEN / "nlg-eval-fixtures.json").read_text())["sets"]["examples"]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps({"response": h, "references": r}) + "\n"
                            for h, r in zip(fixtures["input"]["hyps"], fixtures["input"]["refs"])))
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not (Path(d) / "java").exists()]
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "DIALEVAL_CACHE_DIR")}
    env["PATH"] = os.pathsep.join(path + [str(Path(sys.executable).parent)])
    assert shutil.which("java", path=env["PATH"]) is None
    script = Path(sys.executable).parent / "dialeval"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "dialeval.cli"]
    proc = subprocess.run(cmd + ["score", str(data), "--metrics", "meteor", "--json"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert abs(out["metrics"]["meteor"]["corpus"] - fixtures["multi"]["meteor"]["corpus"]) <= 1e-12


_STEM_HARNESS = """
import java.io.*;
import java.nio.charset.StandardCharsets;
import org.tartarus.snowball.ext.englishStemmer;
public class StemAll {
  public static void main(String[] a) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
    englishStemmer s = new englishStemmer();
    String line;
    while ((line = in.readLine()) != null) { s.setCurrent(line); s.stem(); out.println(s.getCurrent()); }
  }
}
"""


@pytest.mark.slow
def test_stemmer_equals_the_jars_on_wordnet_vocabulary(tmp_path):
    """Every WordNet word of METEOR's synonym list, stemmed by the jar's own Snowball class."""
    if not (shutil.which("java") and shutil.which("javac")):
        pytest.skip("needs a JDK (java and javac) to run the jar's stemmer")
    _installed_or_skip()
    sources = meteor_resources.locate(None)
    if sources.lexicon.is_dir():
        pytest.skip("needs meteor-1.5.jar itself")
    synsets = sources.read_lexicon("synonym/english.synsets").decode("utf-8").split("\n")
    vocab = sorted({w for w in synsets[0::2] if w and "\r" not in w})
    (tmp_path / "StemAll.java").write_text(_STEM_HARNESS)
    subprocess.run(["javac", "-cp", str(sources.lexicon), "-d", str(tmp_path), str(tmp_path / "StemAll.java")],
                   check=True, capture_output=True, timeout=300)
    proc = subprocess.run(["java", "-cp", f"{sources.lexicon}{os.pathsep}{tmp_path}", "StemAll"],
                          input="\n".join(vocab) + "\n", capture_output=True, text=True, encoding="utf-8",
                          check=True, timeout=300)
    java = proc.stdout.split("\n")[:len(vocab)]
    wrong = [(w, j, stem(w)) for w, j in zip(vocab, java) if stem(w) != j]
    assert len(java) == len(vocab) and not wrong[:20]


def _meteor_in_daemon(queue):
    import dialeval
    from dialeval.metrics.overlap.meteor import metric as meteor_metric

    meteor_metric._MIN_PAIRS_PER_WORKER = 1     # make even this small set ask for 2 processes
    rows = [{"response": f"the cat sat on mat {i}", "references": ["a cat sat on the mat", "the dog sat"]}
            for i in range(6)]
    try:
        result = dialeval.score(rows, ["meteor"], meteor_workers=2)
        queue.put(("ok", [float(v) for v in result.sentence["meteor"]]))
    except BaseException as exc:  # the failure mode: "daemonic processes are not allowed to have children"
        queue.put(("error", f"{type(exc).__name__}: {exc}"))


@pytest.mark.slow
def test_meteor_workers_inside_a_daemonic_process_align_in_process():
    """Dask workers are daemonic processes, which may not fork: METEOR must not try to."""
    import multiprocessing

    import dialeval

    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_meteor_in_daemon, args=(queue,), daemon=True)
    child.start()
    status, value = queue.get(timeout=300)
    child.join(timeout=60)
    assert status == "ok", value
    rows = [{"response": f"the cat sat on mat {i}", "references": ["a cat sat on the mat", "the dog sat"]}
            for i in range(6)]
    expected = dialeval.score(rows, ["meteor"], meteor_workers=1).sentence["meteor"]
    assert value == [float(v) for v in expected]
