"""Every count printed at the end of a run is a property of the data, not of --chunk-size (issue
55: the out-of-vocabulary line said 5.1% of 39 tokens at 5000 and 10.0% of 20 at 1 and 2)."""

from __future__ import annotations

import json

import pytest

from dialeval.cli import main

CHUNKS = (1, 7, 5000)


@pytest.fixture
def run(tmp_path):
    vectors = tmp_path / "vec.txt"
    vectors.write_text("the 1 0 0\ncat 0 1 0\nsat 1 1 0\ndog 0 0 1\non 1 0 1\nmat 0 1 1\n", encoding="utf-8")
    rows = []
    for i in range(23):
        system = "ab"[i % 2]
        if i % 5 == 0:       # one unknown response token (zq<i>)
            row = {"response": f"the cat zq{i}", "references": ["the cat sat"]}
        elif i % 7 == 3:     # every reference without a known word: emb_* leave it unscored
            row = {"response": "the dog", "references": ["qq rr", "ss"]}
        elif i % 11 == 4:    # another script: the English-only embedding metrics cannot read it
            row = {"response": "кошка сидит на коврике", "references": ["the cat sat on the mat"]}
        elif i % 9 == 8:     # no references: the reference-based metrics leave it unscored
            row = {"response": "the cat sat"}
        else:
            row = {"response": "the cat sat on the mat", "references": ["the dog sat on the mat"]}
        rows.append({"id": str(i), "system": system, **row})
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")

    def at(chunk: int, capsys) -> list[str]:
        assert main(["score", str(data), "--metrics", "bleu2,emb_average,emb_greedy", "--word-vectors",
                     str(vectors), "--chunk-size", str(chunk), "--json"]) == 0
        return [line for line in capsys.readouterr().err.splitlines() if line.startswith("dialeval: ")]
    return at


def test_every_tally_is_the_same_at_any_chunk_size(run, capsys):
    said = {chunk: run(chunk, capsys) for chunk in CHUNKS}
    assert said[1] == said[7] == said[5000]
    lines = said[1]
    # rows 0, 5, 10, 15, 20: five unknown response tokens; the all-unknown references (qq rr,
    # ss) of rows 3 and 17 count too, 3 tokens each; the Cyrillic row 4 has 4 unknown tokens
    assert "dialeval: warning: word vectors: 15 tokens out of vocabulary (case lower)" in lines
    assert any(line.startswith("dialeval: warning: 1 response(s) written mostly in CYRILLIC script")
               for line in lines)
    # rows 3 and 17: references with no known word, for each of the two metrics
    for metric in ("emb_average", "emb_greedy"):
        assert f"dialeval: warning: {metric}: 2 sample(s) left unscored (NaN): every reference has " \
               "no word in the vectors' vocabulary" in lines
    # row 8 has no references; the notes list systems in input order whatever the shards
    # (they followed the shard where a system's first unscored row fell)
    notes = [line for line in lines if line.startswith("dialeval: note: bleu2:")]
    assert notes == ["dialeval: note: bleu2: 1 of 23 rows unscored, left out of its means; "
                     "a: 1 of 12, no references (8)"]
    emb = next(line for line in lines if line.startswith("dialeval: note: emb_average:"))
    assert emb.endswith("; a: 1 of 12, no references (8); b: 2 of 11, no value (3, 17)")


def test_the_count_does_not_depend_on_which_shards_hold_an_unknown_word(run, capsys):
    """The old line divided by the tokens of the shards with an unknown word only."""
    lines = run(1, capsys)
    assert not any("%" in line for line in lines if "out of vocabulary" in line)
