"""AM-FM: hand-computed AM/FM values, the ARPA back-off query, the model artifact (round trip
and refusal of changed/missing files), the metrics through `dialeval.score` and the CLI, and
the honesty of cross-fitting and cross-validation."""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess

import numpy as np
import pytest

from conftest import DATA, need
from dialeval.errors import DialevalError
from dialeval.metrics.amfm.lsi import LSI, am_scores, cosine_prefix, log_grid
from dialeval.metrics.amfm.metric import fm_ratio, fm_scores
from dialeval.metrics.amfm.ngram import ArpaLM, find_lmplz
from dialeval.metrics.amfm.text import tokens
from dialeval.metrics.amfm.tuning import cross_validate, score_grid, system_folds, turn_keys

pytestmark = pytest.mark.slow   # trains real (tiny) models

needs_lmplz = pytest.mark.skipif(find_lmplz() is None, reason="KenLM lmplz not built (run install.sh)")

# -- a synthetic training corpus: two topics, so LSI has structure to find ------------------------
_FOOD = "pizza pasta bread cheese soup salad dinner lunch cook eat".split()
_TRAVEL = "train flight hotel ticket airport bus trip city map travel".split()
_GLUE = "i you we the a like want to and would really".split()


def _corpus(n: int = 600, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        topic = _FOOD if i % 2 else _TRAVEL
        words = [rng.choice(topic if rng.random() < 0.6 else _GLUE) for _ in range(rng.randint(4, 10))]
        out.append(" ".join(words))
    return out


# -- AM ----------------------------------------------------------------------------------------
def _toy_lsi() -> LSI:
    # vocabulary a, b, c; two orthonormal "singular vectors": (a+b)/sqrt2 and c
    comps = np.array([[1 / math.sqrt(2), 1 / math.sqrt(2), 0.0], [0.0, 0.0, 1.0]])
    return LSI(vocab=["a", "b", "c"], components=comps, singular_values=np.array([2.0, 1.0]),
               idf=np.ones(3))


def test_am_hand_computed():
    lsi = _toy_lsi()
    # "a" -> (1/sqrt2, 0); "a c" -> (1/sqrt2, 1); cos = (1/2) / (1/sqrt2 * sqrt(3/2)) = 1/sqrt3
    am = am_scores(lsi, ["a", "a", "b"], [["a c"], ["a c", "b"], ["c"]], [1, 2], "max")
    assert am[0, 0] == pytest.approx(1.0)            # L = 1: both lie on the first axis
    assert am[1, 0] == pytest.approx(1 / math.sqrt(3))
    assert am[1, 1] == pytest.approx(1.0)            # "a" and "b" coincide in this space
    assert am[1, 2] == pytest.approx(0.0)            # orthogonal
    assert am[0, 2] == pytest.approx(0.0)            # "c" projects to 0 at L = 1: cosine 0
    mean = am_scores(lsi, ["a"], [["a c", "b"]], [2], "mean")
    assert mean[0, 0] == pytest.approx((1 / math.sqrt(3) + 1.0) / 2)
    # centroid of unit vectors (1/sqrt3, sqrt(2/3)) and (1, 0); cosine with (1, 0)
    u = np.array([1 / math.sqrt(3), math.sqrt(2 / 3)]) + np.array([1.0, 0.0])
    cent = am_scores(lsi, ["a"], [["a c", "b"]], [2], "centroid")
    assert cent[0, 0] == pytest.approx(u[0] / np.linalg.norm(u))


def test_am_negative_cosine_truncated_and_no_references_nan():
    cos = cosine_prefix(np.array([[1.0, 0.0]]), np.array([[-1.0, 0.0]]), [2])
    assert cos[0, 0] == 0.0
    am = am_scores(_toy_lsi(), ["a", "b"], [[], ["b"]], [2], "max")
    assert math.isnan(am[0, 0]) and am[0, 1] == pytest.approx(1.0)


def test_log_grid_spans_the_papers_range():
    grid = log_grid(5, 2500)
    assert grid[0] == 5 and grid[-1] == 2500 and 10 <= len(grid) <= 14
    assert all(b > a for a, b in zip(grid, grid[1:]))


def test_tokens_split_punctuation_like_pretokenised_text():
    assert tokens("Are you a fan?") == tokens("are you a fan ?") == ["are", "you", "a", "fan", "?"]
    assert "<s>" not in tokens("<s> hi </s>")


# -- FM ----------------------------------------------------------------------------------------
ARPA = """\\data\\
ngram 1=5
ngram 2=3

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t-0.5
-0.6\t</s>\t0
-0.7\tx\t-0.2
-0.8\ty\t-0.3

\\2-grams:
-0.1\t<s> x
-0.4\tx y
-0.2\ty </s>

\\end\\
"""


def test_arpa_backoff_query_by_hand(tmp_path):
    path = tmp_path / "toy.arpa"
    path.write_text(ARPA)
    lm = ArpaLM(path)
    # "x y": p(x|<s>) = -0.1; p(y|x) = -0.4; p(</s>|y) = -0.2
    assert lm.token_log10(["x", "y"]) == pytest.approx([-0.1, -0.4, -0.2])
    # "y x": p(y|<s>) backs off: bo(<s>) + p(y) = -0.5 - 0.8; p(x|y) = bo(y) + p(x) = -0.3 - 0.7;
    # p(</s>|x) = bo(x) + p(</s>) = -0.2 - 0.6
    assert lm.token_log10(["y", "x"]) == pytest.approx([-1.3, -1.0, -0.8])
    # unknown word: bo(<s>) + p(<unk>); then p(</s>|zz) = p(</s>) (no back-off for <unk>... 0)
    assert lm.token_log10(["zz"]) == pytest.approx([-1.5, -0.6])
    # eq. 2 as log10: mean over the 3 predictions
    assert lm.mean_log10(["x y"])[0] == pytest.approx((-0.1 - 0.4 - 0.2) / 3)


def test_fm_ratio_and_reference_rules(tmp_path):
    path = tmp_path / "toy.arpa"
    path.write_text(ARPA)
    lm = ArpaLM(path)
    assert fm_ratio(np.array([-1.0]), np.array([-1.5]))[0] == pytest.approx(10 ** -0.5)
    hx, hy = lm.mean_log10(["x y"])[0], lm.mean_log10(["y x"])[0]
    # identical sentences: ratio 1; different: min/max of the two eq.-2 probabilities
    got = fm_scores(lm, ["x y", "x y"], [["x y"], ["y x", "x y"]], "max")
    assert got == pytest.approx([1.0, 1.0])
    ratio = min(10 ** hx, 10 ** hy) / max(10 ** hx, 10 ** hy)
    assert fm_scores(lm, ["x y"], [["y x", "x y"]], "mean")[0] == pytest.approx((ratio + 1) / 2)
    assert math.isnan(fm_scores(lm, ["x y"], [[]], "max")[0])


@needs_lmplz
def test_arpa_query_equals_kenlm_query(tmp_path):
    """Our back-off query gives KenLM's own `query` totals (log10, 1e-5) on a trained 3-gram."""
    query = os.path.join(os.path.dirname(find_lmplz()), "query")
    if not os.access(query, os.X_OK):
        pytest.skip("KenLM query binary not built")
    from dialeval.metrics.amfm.ngram import train_arpa

    arpa = train_arpa(_corpus(400), 3, tmp_path / "lm.arpa")
    tests = ["i like pizza and pasta", "the flight to the city", "zebra quantum pizza", "travel"]
    done = subprocess.run([query, "-v", "sentence", str(arpa)], input="\n".join(" ".join(tokens(t)) for t in tests) + "\n",
                          capture_output=True, text=True, check=True)
    totals = [float(line.split("Total:")[1].split()[0]) for line in done.stdout.splitlines() if "Total:" in line]
    lm = ArpaLM(arpa)
    assert len(totals) == len(tests)
    for text, total in zip(tests, totals):
        assert lm.sentence_log10(text) == pytest.approx(total, abs=1e-5)


# -- the model artifact ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    if find_lmplz() is None:
        pytest.skip("KenLM lmplz not built (run install.sh)")
    from dialeval.metrics.amfm.model import AMFMModel

    path = tmp_path_factory.mktemp("amfm") / "model"
    AMFMModel(dims=8, order=2, seed=1).fit(_corpus()).save(path)
    return path


def test_model_round_trip_and_lsi_structure(model_dir):
    from dialeval.metrics.amfm.model import AMFMModel

    files = set(os.listdir(model_dir))
    assert {"config.json", "arrays.npz", "lm.arpa", "manifest.json"} <= files
    manifest = json.loads((model_dir / "manifest.json").read_text())
    assert set(manifest["files"]) == files - {"manifest.json"}
    model = AMFMModel.load(model_dir)
    assert model.lsi_.dims == 8 and model.lm_.order == 2
    # same topic scores higher than the other topic
    same = am_scores(model.lsi_, ["pizza and cheese"], [["pasta with bread cheese"]], [8])[0, 0]
    other = am_scores(model.lsi_, ["pizza and cheese"], [["flight to the airport hotel"]], [8])[0, 0]
    assert same > other
    again = AMFMModel.load(model_dir)
    assert np.array_equal(again.lsi_.components, model.lsi_.components)


@pytest.mark.parametrize("damage", ["change", "remove"])
@pytest.mark.parametrize("victim", ["lm.arpa", "arrays.npz", "config.json"])
def test_model_refused_when_a_file_is_changed_or_missing(model_dir, tmp_path, damage, victim):
    from dialeval.metrics.amfm.model import AMFMModel

    copy = tmp_path / "m"
    shutil.copytree(model_dir, copy)
    if damage == "change":
        with open(copy / victim, "ab") as handle:
            handle.write(b"\n")
    else:
        os.remove(copy / victim)
    with pytest.raises(DialevalError, match="changed since|missing from the artifact"):
        AMFMModel.load(copy)


def test_metrics_through_score(model_dir):
    import dialeval

    records = [{"response": "i like pizza", "references": ["we like pasta", "i want a pizza"], "system": "A"},
               {"response": "the train to the city", "references": ["a bus trip"], "system": "A"},
               {"response": "pizza", "references": ["pizza"], "system": "B"}]
    out = dialeval.score(records, ["am", "fm", "amfm", "fm_abs"], amfm_model=str(model_dir), amfm_lambda=0.3)
    am, fm, amfm = out.sentence["am"], out.sentence["fm"], out.sentence["amfm"]
    assert np.allclose(amfm, 0.3 * am + 0.7 * fm)
    assert am[2] == pytest.approx(1.0) and fm[2] == pytest.approx(1.0)
    assert np.all((am >= 0) & (am <= 1)) and np.all((fm > 0) & (fm <= 1))
    assert np.all(out.sentence["fm_abs"] > 0) and np.all(out.sentence["fm_abs"] < 1)
    assert "lambda:0.3" in out.signatures["amfm"]
    assert out.systems["A"]["amfm"] == pytest.approx(float(np.mean(amfm[:2])))


def test_metric_needs_a_model():
    import dialeval

    with pytest.raises(DialevalError, match="--amfm-model"):
        dialeval.score([{"response": "a", "references": ["b"]}], ["amfm"])


def test_cli_train_score_and_refusal(tmp_path):
    if find_lmplz() is None:
        pytest.skip("KenLM lmplz not built (run install.sh)")
    from dialeval.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(_corpus(300)) + "\n")
    model = tmp_path / "model"
    assert main(["train", "amfm", "--corpus", str(corpus), "--dims", "5", "--order", "3", "-o", str(model)]) == 0
    assert json.loads((model / "config.json").read_text())["lm_order"] == 3
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"response": "i like pizza", "references": ["pizza please"]}) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["score", str(data), "--metrics", "am,fm,amfm", "--amfm-model", str(model), "-o", str(out)]) == 0
    assert set(json.loads(out.read_text())["scores"]) == {"am", "fm", "amfm"}
    (model / "lm.arpa").unlink()
    out.unlink()
    assert main(["score", str(data), "--metrics", "amfm", "--amfm-model", str(model), "-o", str(out)]) == 2
    assert not out.exists()


@pytest.mark.parametrize("flag, value, message", [("--dims", "0", "--dims 0: the LSI dimension must be 1 or more"),
                                                  ("--lsi-sentences", "-5", "--lsi-sentences -5: give 0")])
def test_cli_train_refuses_impossible_sizes_in_one_line(tmp_path, capsys, flag, value, message):
    """A size scikit-learn or random.sample would reject with a traceback stops with one line,
    before anything is trained or written."""
    from dialeval.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c\nd e f\n")
    assert main(["train", "amfm", "--corpus", str(corpus), flag, value, "-o", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "m").exists()


# -- cross-fitting and cross-validation ---------------------------------------------------------
def test_crossfit_trains_only_on_other_folds(monkeypatch):
    from dialeval.metrics.amfm import tuning

    seen = []

    def fake(train, hyps, refs, dims, orders, **_):
        seen.append((set(train), {r for rs in refs for r in rs}))
        return np.zeros((len(dims), len(hyps))), np.zeros((len(orders), len(hyps))), {}

    monkeypatch.setattr(tuning, "_score_part", fake)
    refs = [[f"ref {t} a", f"ref {t} b"] for t in range(10)] * 3      # 10 turns x 3 systems
    hyps = [f"hyp {i}" for i in range(30)]
    grid = score_grid(hyps, refs, [5], [2], folds=5)
    assert len(seen) == 5
    for train, scored in seen:
        assert train and scored and not (train & scored)
    assert set().union(*(s for _, s in seen)) == {r for rs in refs for r in rs}
    assert grid.am.shape == (1, 30)
    assert list(turn_keys([["a"], ["b"], ["a"]])) == [0, 1, 0]


def test_cross_validation_never_sees_the_held_out_human():
    rng = np.random.default_rng(0)
    human = rng.normal(size=12)
    good = human + 0.01 * rng.normal(size=12)
    candidates = {"good": good, "noise": rng.normal(size=12)}
    res = cross_validate(candidates, human, scheme="loso")
    assert res.chosen == ["good"] * 12
    assert res.pearson == pytest.approx(np.corrcoef(good, human)[0, 1])
    # change only system 0's human score wildly: the fold holding it out chooses the same way
    moved = human.copy()
    moved[0] = 100.0
    assert cross_validate(candidates, moved, scheme="loso").chosen[0] == res.chosen[0]
    folds = system_folds(12, "kfold", k=4)
    assert sorted(np.concatenate(folds).tolist()) == list(range(12))


@needs_lmplz
def test_dstc6_crossfit_ranks_s20_last():
    """Paper Table 1: S_20 has the lowest human mean and the lowest AM-FM (0.6512) of the 20
    systems. Cross-fitted on the first 400 turns' references, our AM-FM agrees."""
    from dialeval.data.datasets import load_dataset
    from dialeval.metrics.amfm.tuning import combine, system_means

    ds = load_dataset("dstc6", need(DATA / "dstc6-eval"))
    keep = [s for s in ds.samples if int(s.id.rsplit("-", 1)[1]) < 400]
    order = [f"S_{k}" for k in range(1, 21)]
    grid = score_grid([s.response for s in keep], [s.references for s in keep], [10], [2], folds=2)
    systems = [s.system for s in keep]
    amfm = combine(system_means(grid.am, systems, order)[0], system_means(grid.fm, systems, order)[0], 0.8)
    assert order[int(np.argmin(amfm))] == "S_20"


def test_sweep_curves_and_outputs(tmp_path):
    """Hand-made grid: AM at L=5 equals the human scores, so L=5 is the best L, lambda=1 the
    best lambda, and the CSV/JSON/PNG files are all written."""
    from dialeval.metrics.amfm.sweep import analyse, read_outputs, write_outputs
    from dialeval.metrics.amfm.tuning import Grid

    rng = np.random.default_rng(1)
    order = [f"S{i}" for i in range(8)]
    human = rng.normal(size=8)
    systems = [s for s in order for _ in range(3)]
    am = np.stack([np.repeat(human, 3), rng.normal(size=24)])          # L = 5 perfect, L = 50 noise
    fm = np.stack([rng.normal(size=24), rng.normal(size=24)])
    grid = Grid([5, 50], [1, 2], am, fm)
    rows, summary = analyse(grid, "toy", systems, order, human, dims=5, lm_order=2, lam=0.8)
    assert summary["am"] == pytest.approx(1.0)
    assert summary["best_in_sample"]["dims"] == 5 and summary["best_in_sample"]["lambda"] == 1.0
    assert summary["amfm_cv_lambda"]["chosen"] == [1.0]
    assert len([r for r in rows if r["sweep"] == "lambda"]) == 11
    paths = write_outputs(str(tmp_path), rows, [summary])
    assert {os.path.basename(p) for p in paths} == {"amfm_sweep.csv", "amfm_summary.json", "amfm_dims.png",
                                                    "amfm_order.png", "amfm_lambda.png"}
    back, summaries = read_outputs(str(tmp_path))
    assert len(back) == len(rows) and summaries[0]["training"] == "toy"
