"""Output rows written directly (engine/rows.py) are the bytes of the JSON encoder's rows."""

import json
import math

from hypothesis import given, settings, strategies as st

from dialeval.data.sample import Sample
from dialeval.engine.rows import plain_row_line, row_line, rows_text, score_keys
from dialeval.scoring import output_row

NAMES = ["bleu1", "rouge_l", "cider_d"]

# plain words, and the characters JSON escapes or that are easy to get wrong
texts = st.one_of(
    st.text(alphabet=st.sampled_from(list("ab c.") + ["é", "日", "\u3000", "\U0001F600"]), max_size=12),
    st.text(max_size=12),   # any code point but lone surrogates
    st.sampled_from(['say "hi"', "back\\slash", "tab\there", "line\nbreak", "\x00", "\x1f", "\x7f",
                     "\u2028", "lone \ud800 surrogate", ""]),
)
scores = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e-300, 5e-324]))
metas = st.one_of(st.just({}), st.builds(lambda n: {"line": n}, st.integers(0, 10 ** 12)),
                  st.sampled_from([{"line": True}, {"line": 1.5}, {"line": 3, "x": 1}, {"other": "v"}]))
samples = st.builds(
    Sample, id=texts, response=texts,
    context=st.lists(texts, max_size=2), references=st.lists(texts, max_size=3),
    system=st.one_of(st.none(), texts), ratings=st.one_of(st.just({}), st.just({"q": [1.0, 2.0]})),
    meta=metas)


def reference_line(sample, values):
    """What `dialeval score` wrote for a row before the direct writer: the encoder's JSON."""
    row = output_row(sample, dict(zip(NAMES, values)))
    try:
        return json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError:
        return json.dumps(json.loads(json.dumps(row)), ensure_ascii=False) + "\n"


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(samples, st.tuples(scores, scores, scores)), min_size=1, max_size=5))
def test_rows_equal_the_encoder(rows):
    batch = [s for s, _ in rows]
    columns = [list(col) for col in zip(*[v for _, v in rows])]
    expected = "".join(reference_line(s, v) for s, v in rows)
    assert rows_text(batch, NAMES, columns) == expected
    assert "".join(row_line(s, dict(zip(NAMES, v))) for s, v in rows) == expected


def test_plain_rows_take_the_direct_path():
    sample = Sample(id="sys:1", response="a b", references=["a c", "b"], system="sys", meta={"line": 1})
    values = (0.5, float("nan"), 1e-9)
    line = plain_row_line(sample, score_keys(NAMES), values)
    assert line is not None and line == reference_line(sample, values)
    assert json.loads(line)["scores"]["rouge_l"] is None
    # anything the direct writer does not cover goes to the encoder
    assert plain_row_line(Sample(id="1", response='say "x"'), score_keys(NAMES), values) is None
    assert plain_row_line(Sample(id="1", response="x", ratings={"q": [1.0]}), score_keys(NAMES), values) is None
    assert score_keys(['we"ird']) is None


def test_stats_rows_and_extras_keep_their_fields():
    sample = Sample(id="1", response="a", references=["a"])
    text = rows_text([sample], NAMES, [[1.0], [0.5], [math.inf]], [{"stats": {"bleu1": [1.0, 2.0]}}])
    row = json.loads(text)
    assert row["stats"] == {"bleu1": [1.0, 2.0]} and row["scores"]["cider_d"] is None
