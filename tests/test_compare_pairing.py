"""Issue 21, item 1: items pair per comparison by an explicit key, the number of paired items
stands beside each p, pairing that loses items is said loudly, and no significance mark where
the paired set is too small for any test to reach it."""

from __future__ import annotations

import json

import numpy as np
import pytest

import threebots
from dialeval.errors import DialevalError
from dialeval.meta import systems as C


@pytest.fixture(scope="module")
def bots():
    from dialeval.scoring import score

    out = {}
    for keys in (False, True):
        result = score(threebots.records(keys=keys), ["bleu4", "rouge_l"])
        out[keys] = (result, C.score_rows(result))
    return out


def by(cmp):
    return {(r["measure"], r["system"]): r for r in cmp.rows}


def test_three_bots_paired_by_context_per_comparison(bots):
    """The issue's file (no item keys): bot_b vs bot_a pairs all 15 items and its delta is the
    full-15 one (the score table's difference); bot_c's contexts differ on 13 items, so bot_c vs
    bot_a pairs 2, says so, and carries no mark however small its bootstrap p."""
    result, rows = bots[False]
    cmp = C.compare_systems(rows, baseline="bot_a", seed=12345)
    assert cmp.pair_by == "context"
    got = by(cmp)
    for m in ("bleu4", "rouge_l"):
        b = got[(m, "bot_b")]
        assert b["n_paired"] == 15
        assert b["delta"] == pytest.approx(result.systems["bot_b"][m] - result.systems["bot_a"][m],
                                           abs=1e-12)
        assert b["mark"] == "**" and b["p"] < 0.01          # a real, large difference
        c = got[(m, "bot_c")]
        assert c["n_paired"] == 2
        assert c["p_min"] == 0.5                             # 2^(1-2): both items differ
        assert c["mark"] == ""
    assert got[("bleu4", "bot_c")]["p"] < 0.05              # what the old output marked `**`
    assert any("PAIRING LOST ITEMS: bot_c vs bot_a: only 2 items" in n for n in cmp.warnings)
    assert not any("bot_b vs bot_a" in n for n in cmp.warnings)
    # all pairs: bot_b and bot_a still pair on all 15, the two pairs with bot_c on 2
    pairs = {(p["a"], p["b"], p["measure"]): p for p in C.compare_systems(rows, seed=1).pairs}
    assert pairs[("bot_a", "bot_b", "bleu4")]["n_paired"] == 15
    assert pairs[("bot_a", "bot_c", "bleu4")]["n_paired"] == 2
    assert pairs[("bot_b", "bot_c", "bleu4")]["n_paired"] == 2


def test_explicit_keys_pair_every_item(bots):
    result, rows = bots[True]
    auto = C.compare_systems(rows, baseline="bot_a")
    assert auto.pair_by == "dialogue" and not auto.warnings
    assert {r["n_paired"] for r in auto.rows if "n_paired" in r} == {15}
    position = C.compare_systems(rows, baseline="bot_a", pair_by="position")
    assert [r.get("p") for r in position.rows] == [r.get("p") for r in auto.rows]
    c = by(auto)[("bleu4", "bot_c")]
    assert c["delta"] == pytest.approx(result.systems["bot_c"]["bleu4"] - result.systems["bot_a"]["bleu4"])
    with pytest.raises(DialevalError, match="--pair-by item: row 1 has no `item` field"):
        C.compare_systems(rows, baseline="bot_a", pair_by="item")
    twice = [dict(r, meta=dict(r["meta"], turn=0)) for r in rows]
    with pytest.raises(DialevalError, match="system 'bot_a' has .* twice"):
        C.compare_systems(twice, pair_by="dialogue")


def test_auto_takes_ids_only_when_they_name_items():
    rows = [{"id": f"{s}{i}", "system": s} for s in "AB" for i in range(3)]
    assert C.resolve_pair_by(rows)[0] == "context"          # ids name rows, not items
    rows = [{"id": str(i), "system": s} for s in "AB" for i in range(3)]
    used, keys = C.resolve_pair_by(rows)
    assert used == "id" and keys[0] == keys[3]
    rows = [{"id": str(i), "system": s, "meta": {"item": 10 - i}} for s in "AB" for i in range(3)]
    assert C.resolve_pair_by(rows)[0] == "item"


def test_smallest_attainable_p_by_hand():
    assert C.min_attainable_p(2, 1000) == 0.5               # 2 / 2^2
    assert C.min_attainable_p(7, 1000) == 2 / 2 ** 7        # 0.015625: `*` reachable, `**` not
    assert C.min_attainable_p(15, 1000) == 1 / 1001         # the resamples bound it now
    assert C.min_attainable_p(0, 1000) == 1.0               # nothing differs: nothing to test
    assert C.significance_mark(0.001, 0.015625) == "*"
    assert C.significance_mark(0.001, 0.5) == ""
    assert C.significance_mark(0.001, 1 / 1001) == "**"


@pytest.mark.parametrize("test", ["bs", "ar"])
def test_pairs_built_to_differ(test):
    """40 items: system B beats A by 0.5 on every item (significant, `**`); C equals A on every
    item (p = 1, no mark); D is A shifted on 5 items only, too few for `**` (2^(1-5) = 1/16
    is not even below 0.05: no mark)."""
    rng = np.random.default_rng(3)
    base = rng.uniform(0, 1, 40)
    values = {"A": base, "B": base + 0.5, "C": base.copy(),
              "D": np.where(np.arange(40) < 5, base + 0.5, base)}
    rows = [{"id": str(i), "system": s, "scores": {"m": float(v[i])}}
            for s, v in values.items() for i in range(40)]
    cmp = C.compare_systems(rows, baseline="A", test=test, seed=0)
    got = by(cmp)
    assert got[("m", "B")]["mark"] == "**" and got[("m", "B")]["p"] < 0.01
    assert got[("m", "B")]["n_paired"] == 40 and cmp.pair_by == "id"
    assert got[("m", "C")]["p"] == 1.0 and got[("m", "C")]["mark"] == ""
    assert got[("m", "D")]["p_min"] == 1 / 16 and got[("m", "D")]["mark"] == ""


def test_compare_cli_on_the_three_bot_file(tmp_path, capsys):
    from dialeval.cli.main import main

    data = threebots.write(tmp_path / "bots.jsonl", keys=False)
    scores = tmp_path / "scores.jsonl"
    assert main(["score", str(data), "--metrics", "bleu4", "--with-stats", "-o", str(scores)]) == 0
    capsys.readouterr()
    assert main(["compare", str(scores), "--baseline", "bot_a"]) == 0
    captured = capsys.readouterr()
    assert "dialeval: warning: PAIRING LOST ITEMS: bot_c vs bot_a: only 2 items" in captured.err
    lines = {line.split()[0]: line for line in captured.out.splitlines() if line.startswith("bot_")}
    assert lines["bot_b"].split()[-1] == "15" and lines["bot_b"].split()[-2].endswith("**")
    assert lines["bot_c"].split()[-1] == "2" and not lines["bot_c"].split()[-2].endswith("*")
    assert "items paired by context" in captured.out
    assert main(["compare", str(scores), "--baseline", "bot_a", "--pair-by", "position",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pair_by"] == "position"
    assert {r["n_paired"] for r in out["scores"] if "n_paired" in r} == {15}
