"""Pairwise verdicts (`compare --pairwise`, meta/pairwise.py, metrics/judge/pairwise.py): the
verdict rules, Bradley-Terry, the bootstrap CIs, agreement with human preferences, the judge's
probability against a hand computation from the model's logits, and the command with its
report section."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dialeval.cli import main
from dialeval.errors import DialevalError
from dialeval.meta.pairwise import (Plan, bradley_terry, plan_comparisons, preference_credit, summarise,
                                    verdicts)
from dialeval.meta.resampling import resample_counts


# -- rules: no model needed ------------------------------------------------------------------------

def test_verdict_needs_both_orders():
    # a first: P(first) ; b first: P(first)
    p_ab = np.array([0.9, 0.2, 0.8, 0.3, 0.5, np.nan])
    p_ba = np.array([0.1, 0.7, 0.9, 0.2, 0.4, 0.5])
    v = verdicts(p_ab, p_ba)
    # a twice; b twice; first position twice (tie, biased); second twice (tie, biased);
    # no choice in one order (tie, not biased); unread
    assert v["score"][:5].tolist() == [1.0, 0.0, 0.5, 0.5, 0.5] and math.isnan(v["score"][5])
    assert v["biased"].tolist() == [False, False, True, True, False, False]
    assert v["soft"][:5] == pytest.approx([0.9, 0.25, 0.45, 0.55, 0.55])
    assert v["first"][:5].tolist() == [1.0, 1.0, 2.0, 0.0, 0.0]


def test_bradley_terry_against_hand_solutions():
    # two systems, 3 wins to 1: s1/s2 = 3 without the prior, (3 + 1/2)/(1 + 1/2) with it
    w = np.array([[0.0, 3.0], [1.0, 0.0]])
    assert np.diff(bradley_terry(w, prior=0.0))[0] == pytest.approx(-math.log(3.0), abs=1e-8)
    assert np.diff(bradley_terry(w))[0] == pytest.approx(-math.log(3.5 / 1.5), abs=1e-8)
    # three systems: the maximum-likelihood equations hold, sum_j n_ij s_i / (s_i + s_j) = W_i
    w = np.array([[0.0, 7.0, 4.5], [3.0, 0.0, 6.0], [5.5, 2.0, 0.0]])
    theta = bradley_terry(w, prior=0.0)
    s = np.exp(theta)
    n = w + w.T
    expected = (n * s[:, None] / (s[:, None] + s[None, :])).sum(axis=1)     # n_ii = 0
    assert expected == pytest.approx(w.sum(axis=1), abs=1e-7)
    assert theta.mean() == pytest.approx(0.0, abs=1e-12)
    # batched: each matrix fitted on its own
    both = bradley_terry(np.stack([w, w.T]), prior=0.0)
    assert both[0] == pytest.approx(theta, abs=1e-9) and both[1] == pytest.approx(-theta, abs=1e-7)


def _plan(n_items: int) -> Plan:
    items = [{"x": 3 * t, "y": 3 * t + 1, "z": 3 * t + 2} for t in range(n_items)]
    comparisons = [(t, a, b) for t in range(n_items) for a, b in (("x", "y"), ("x", "z"), ("y", "z"))]
    return Plan("item", ["x", "y", "z"], items, comparisons, n_items)


def test_counts_win_rates_and_their_bootstrap():
    plan = _plan(4)
    # per item: x beats y, x ties z (orders disagree), z beats y
    p_ab = np.tile([0.8, 0.9, 0.3], 4)
    p_ba = np.tile([0.3, 0.9, 0.8], 4)
    p_ab[0], p_ba[0] = 0.2, 0.7          # item 0: y beats x instead
    r = summarise(plan, p_ab, p_ba, n_resamples=200, seed=7)
    pairs = {(p["a"], p["b"]): p for p in r.pairs}
    xy = pairs[("x", "y")]
    assert (xy["wins"], xy["ties"], xy["losses"], xy["n"]) == (3, 0, 1, 4)
    assert xy["win_rate"] == pytest.approx(0.75) and xy["position_bias"] == 0.0
    xz = pairs[("x", "z")]
    assert (xz["wins"], xz["ties"], xz["losses"]) == (0, 4, 0) and xz["position_bias"] == 1.0
    yz = pairs[("y", "z")]
    assert (yz["wins"], yz["losses"]) == (0, 4) and yz["win_rate"] == 0.0
    # the x-y CI by hand from the same item resamples (sacreBLEU's order statistics)
    counts = resample_counts(4, 200, 7)
    boot = np.sort(counts @ np.array([0.0, 1, 1, 1]) / counts.sum(axis=1))
    assert (xy["ci_low"], xy["ci_high"]) == (boot[200 // 40], boot[200 - 200 // 40 - 1])
    # standings: x wins 3 + 4 ties of 8 ... z: 4 ties + 4 wins; y: 1 win
    st = {s["system"]: s for s in r.standings}
    assert st["x"]["win_rate"] == pytest.approx((3 + 2) / 8)
    assert st["z"]["win_rate"] == pytest.approx((2 + 4) / 8)
    assert st["y"]["win_rate"] == pytest.approx(1 / 8)
    assert [s["system"] for s in r.standings] == ["z", "x", "y"] and r.standings[0]["rank"] == 1
    assert r.position_bias["n"] == 12 and r.position_bias["rate"] == pytest.approx(4 / 12)
    for s in r.standings:
        assert s["bt_ci_low"] <= s["bt"] + 1e-9 and s["bt"] - 1e-9 <= s["bt_ci_high"]


def test_agreement_with_human_preferences():
    rows = []
    # two items, three systems; people rank z > x > y on item 0 and x = y > z on item 1
    ratings = {0: {"x": 3.0, "y": 2.0, "z": 5.0}, 1: {"x": 4.0, "y": 4.0, "z": 1.0}}
    metric = {0: {"x": 0.5, "y": 0.1, "z": 0.2}, 1: {"x": 0.9, "y": 0.2, "z": 0.9}}
    for t in range(2):
        for s in "xyz":
            rows.append({"item": t, "system": s, "context": ["c"], "response": s, "scores": {"m": metric[t][s]},
                         "ratings": {"overall": [ratings[t][s]]}})
    plan = plan_comparisons(rows)
    assert plan.pair_by == "item" and len(plan.comparisons) == 6
    # the judge: a always wins both orders (x over y, x over z, y over z)
    p_ab, p_ba = np.full(6, 0.9), np.full(6, 0.1)
    r = summarise(plan, p_ab, p_ba, rows=rows, human="overall", metrics=["m"], n_resamples=100)
    by = {a["measure"]: a for a in r.agreement}
    # decided pairs: item 0: x>y, z>x, z>y; item 1: x>z, y>z (x=y undecided) -> 5
    assert by["m"]["n"] == 5
    # judge: x>y yes, x>z (people z) no, y>z (people z) no, x>z yes, y>z yes -> 3/5
    assert by["judge (both orders)"]["agreement"] == pytest.approx(3 / 5)
    # metric m: item 0: x>y yes, x>z (people z) no, z>y yes; item 1: x=z a tie, z>y (people y) no -> 2.5/5
    assert by["m"]["agreement"] == pytest.approx(2.5 / 5) and by["m"]["ties"] == 1
    assert preference_credit(np.array([np.nan, 1.0, -1.0]), np.array([1.0, 1.0, 1.0])).tolist() == [0.5, 1.0, 0.0]


def test_plan_samples_items_and_refuses_what_it_cannot_compare():
    rows = [{"item": t, "system": s, "response": f"{s}{t}"} for t in range(10) for s in "ab"]
    rows.append({"item": 99, "system": "a", "response": "alone"})
    plan = plan_comparisons(rows, max_items=4, seed=3)
    assert plan.n_items_all == 10 and len(plan.items) == 4
    assert plan.items == plan_comparisons(rows, max_items=4, seed=3).items
    with pytest.raises(DialevalError, match="two systems or more"):
        plan_comparisons([r for r in rows if r["system"] == "a"])
    with pytest.raises(DialevalError, match="not a system"):
        plan_comparisons(rows, systems=["a", "nope"])


def test_judge_is_asked_in_chunks_with_progress_lines_and_the_same_answers(monkeypatch, capsys):
    """A slow judge says how far it is (a line per chunk when the interval is 0); the chunking
    changes nothing in what the judge is asked or in the order of its answers."""
    from dialeval import progress
    from dialeval.meta import pairwise

    monkeypatch.setattr(progress, "LINES_DELAY", 0.0)
    monkeypatch.setattr(progress, "EVERY", 0.0)
    rows = [{"item": t, "system": s, "context": [f"c{t}"], "response": f"{s}{t}"} for t in range(12) for s in "abc"]
    plan = plan_comparisons(rows)

    class Judge:
        calls: list[int] = []

        def prefer_first(self, contexts, firsts, seconds, refs):
            self.calls.append(len(firsts))
            return np.array([(hash(a) % 97) / 97 - (hash(b) % 89) / 890 for a, b in zip(firsts, seconds)])

    judge = Judge()
    p_ab, p_ba = pairwise.ask_judge(judge, rows, plan, progress=True)
    n = 2 * len(plan.comparisons)
    assert judge.calls == [pairwise.ASK_CHUNK] * (n // pairwise.ASK_CHUNK) + ([n % pairwise.ASK_CHUNK] if n % pairwise.ASK_CHUNK else [])
    monkeypatch.setattr(pairwise, "ASK_CHUNK", 10 ** 6)
    q_ab, q_ba = pairwise.ask_judge(Judge(), rows, plan, progress=False)
    np.testing.assert_array_equal(p_ab, q_ab)
    np.testing.assert_array_equal(p_ba, q_ba)
    err = capsys.readouterr().err
    assert f"of {n} prompts" in err


# -- the judge with the installed SmolLM2 -------------------------------------------------------------

@pytest.fixture(scope="module")
def local_judge():
    from dialeval.metrics.judge.pairwise import PairwiseJudge

    try:
        return PairwiseJudge()
    except DialevalError as exc:
        pytest.skip(f"the installed SmolLM2-135M-Instruct is not there: {exc}")


def test_local_preference_is_the_softmax_over_the_two_answer_logits(local_judge):
    """P(first) from the batched, prefix-cached path equals the hand computation: the chat-framed
    prompt run alone through the model, the logits of the tokens "1" and "2" at its last
    position, a softmax over those two."""
    import torch

    from dialeval.metrics.judge.metric import _cached_judge

    contexts = [["Do you like to cook?"], ["Where are you from?", "Spain. And you?"]]
    firsts = ["Yes, I make pasta every Sunday.", "I am from Chile."]
    seconds = ["The stock market fell.", "ok"]
    p = local_judge.prefer_first(contexts, firsts, seconds)
    judge = _cached_judge(local_judge.model_path, "fp32", "cpu")
    for i in range(2):
        text = local_judge.template.fill_pair(contexts[i][-2:], firsts[i], seconds[i])
        prompt = judge.tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                     add_generation_prompt=True)
        ids = [judge.tokenizer.encode(d, add_special_tokens=False)[0] for d in "12"]
        with torch.inference_mode():
            logits = judge.model(input_ids=torch.tensor([judge.encode(prompt)])).logits[0, -1, ids].double()
        assert p[i] == pytest.approx(float(torch.softmax(logits, 0)[0]), abs=1e-5)


def test_compare_pairwise_command_and_report(local_judge, tmp_path, capsys):
    rows = []
    for t, (ctx, answers) in enumerate([
            ("Do you like to cook?", ["Yes, pasta mostly.", "cook cook cook", "The sky is blue."]),
            ("What did you do today?", ["I went for a run by the river.", "today today", "No."])]):
        for s, answer in zip(("good", "loop", "off"), answers):
            rows.append({"id": f"{s}-{t}", "item": t, "system": s, "context": [ctx], "response": answer,
                         "references": [], "scores": {"len": float(len(answer))},
                         "ratings": {"overall": [5.0 if s == "good" else 2.0 if s == "off" else 1.0]}})
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out, html = tmp_path / "pw.json", tmp_path / "r.html"
    assert main(["compare", str(path), "--human", "overall", "--pairwise", "--pairwise-out", str(out),
                 "--report", str(html), "--n-resamples", "50"]) == 0
    text = capsys.readouterr().out
    assert "pairwise verdicts: a against b" in text and "pairwise standings" in text
    assert "agreement with human preferences (overall)" in text and "position bias:" in text
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["n_comparisons"] == 6 and len(data["comparisons"]) == 6
    assert {s["system"] for s in data["standings"]} == {"good", "loop", "off"}
    assert [a["measure"] for a in data["agreement"]] == ["judge (both orders)", "judge (order-free)", "len"]
    # every pair's counts add up, and the win rates of a system's opponents mirror it
    for p in data["pairs"]:
        assert p["wins"] + p["ties"] + p["losses"] == p["n"] == 2
    assert data["signature"].startswith("pairwise|model:smollm2-135m-instruct") and "orders:both" in data["signature"]
    page = html.read_text(encoding="utf-8")
    assert 'id="table-pairwise-standings"' in page and 'href="#pairwise"' in page
    # the same section from the saved JSON
    html2 = tmp_path / "r2.html"
    assert main(["report", str(path), "--pairwise", str(out), "-o", str(html2)]) == 0
    assert 'id="table-pairwise-agreement"' in html2.read_text(encoding="utf-8")
    other = tmp_path / "other.json"
    other.write_text('{"kind": "dialeval-probes"}', encoding="utf-8")
    assert main(["report", str(path), "--pairwise", str(other), "-o", str(html2)]) == 2
    assert "not pairwise verdicts" in capsys.readouterr().err


# -- the judge behind a real server (transformers serve, started by test_judge_served's fixture) --

from test_judge_served import SAMPLING, server  # noqa: E402,F401  (the fixture: a real server)


def test_served_preference_is_the_share_of_sampled_answers(server, tmp_path):
    """Through `transformers serve`: each order's preference is the share of its sampled
    answers that name reply 1 among those naming 1 or 2, as the journal's answers say."""
    import re

    from dialeval.metrics.judge.pairwise import PairwiseJudge

    journal = tmp_path / "journal.jsonl"
    judge = PairwiseJudge(judge_endpoint=server["url"], judge_model=server["model"], judge_api="completions",
                          judge_samples=3, judge_concurrency=1, judge_journal=str(journal),
                          judge_extra_body=SAMPLING)
    p = judge.prefer_first([["Do you like to cook?"], ["Do you like to cook?"]],
                           ["Yes, pasta mostly.", "The sky is blue."], ["The sky is blue.", "Yes, pasta mostly."])
    texts = [json.loads(line)["reply"].get("text") for line in journal.read_text(encoding="utf-8").splitlines()]
    texts = [t for t in texts if t is not None]
    assert len(texts) == 6
    for i in range(2):
        picks = []
        for text in texts[3 * i:3 * i + 3]:
            m = re.search(r"(?<![0-9A-Za-z])(?<![0-9]-)(?<![0-9] to )([12])(?![0-9A-Za-z]|-[0-9]| to [0-9])", text)
            if m:
                picks.append(m.group(1))
        if picks:
            assert p[i] == pytest.approx(picks.count("1") / len(picks))
        else:
            assert math.isnan(p[i])
    sig = judge.signature()
    assert sig.startswith(f"pairwise|model:served:{server['model']}|api:completions|scoring:sample:n3:t1:seed0")
