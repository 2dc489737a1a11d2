"""Progress of a run (issue 21 item 14): total from the input, advancing within a shard, plain
lines without a terminal, model loading announced, and the out-of-vocabulary warning once per
run with the run's counts."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path


from dialeval import progress
from dialeval.cli import main
from dialeval.engine.stream import Source


def write(path: Path, n: int, systems="ab") -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            handle.write(json.dumps({"id": str(i), "system": systems[i % len(systems)],
                                     "response": f"the cat sat {i}", "references": ["the cat sat"]}) + "\n")
        handle.write("\n")   # a blank line is no sample
    return path


def test_total_from_the_input(tmp_path):
    data = write(tmp_path / "in.jsonl", 30)
    assert Source(path=str(data)).estimated_rows() in (30, 31)
    csv = tmp_path / "in.csv"
    csv.write_text("response,reference\na,b\nc,d\n", encoding="utf-8")
    assert Source(path=str(csv)).estimated_rows() == 2
    hyp = tmp_path / "h.txt"
    hyp.write_text("a\nb\nc\n", encoding="utf-8")
    assert Source(hyp=[str(hyp), str(hyp)], ref=[str(hyp)]).estimated_rows() == 6
    array = tmp_path / "arr.json"
    array.write_text(json.dumps([{"response": "a"}]), encoding="utf-8")
    assert Source(path=str(array)).estimated_rows() is None


def test_plain_lines_without_a_terminal_advance_within_a_shard(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "LINES_DELAY", 0.0)
    monkeypatch.setattr(progress, "EVERY", 0.0)
    data = write(tmp_path / "in.jsonl", 40)
    assert main(["score", str(data), "--metrics", "bleu2,rouge_l", "--chunk-size", "20",
                 "-o", str(tmp_path / "out.jsonl")]) == 0
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if re.match(r"dialeval: [\d,]+ of 4[01] samples", l)]
    # two shards x two systems x two metrics: a line per chunk of work, not per shard
    done = [int(re.match(r"dialeval: ([\d,]+)", l).group(1).replace(",", "")) for l in lines]
    assert len(lines) >= 6 and done == sorted(done)
    assert any(0 < d < 20 for d in done)                  # inside the first shard
    assert "elapsed" in lines[0] and any("left" in l for l in lines)


def test_no_progress_lines_for_a_short_run(tmp_path, capsys):
    data = write(tmp_path / "in.jsonl", 10)
    assert main(["score", str(data), "--metrics", "bleu2", "-o", str(tmp_path / "out.jsonl")]) == 0
    assert capsys.readouterr().err == ""


def test_model_loading_is_announced(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress, "SLOW_LOAD", 0.0)
    vectors = tmp_path / "vec.txt"
    vectors.write_text("cat 0 1 1\nsat 1 0 0\nthe 1 1 0\n", encoding="utf-8")
    data = write(tmp_path / "in.jsonl", 4)
    import time

    real = progress.loading

    def slow(what):   # a load that outlasts the (zero) threshold, so the timer fires
        cm = real(what)

        class Wrapped:
            def __enter__(self):
                cm.__enter__()
                time.sleep(0.2)

            def __exit__(self, *exc):
                return cm.__exit__(*exc)
        return Wrapped()
    monkeypatch.setattr(progress, "loading", slow)
    assert main(["score", str(data), "--metrics", "emb_average", "--word-vectors", str(vectors)]) == 0
    assert "dialeval: loading word vectors vec.txt ..." in capsys.readouterr().err.splitlines()


def test_out_of_vocabulary_warning_once_per_run_with_the_run_counts(tmp_path, capsys):
    from dialeval import score
    from dialeval.errors import DialevalWarning

    vectors = tmp_path / "vec.txt"
    vectors.write_text("cat 0 1 1\nsat 1 0 0\nthe 1 1 0\n", encoding="utf-8")
    samples = [{"system": "ab"[i % 2], "response": f"the cat sat x{i}", "references": ["the cat sat"]}
               for i in range(12)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        score(samples, ["emb_average", "emb_greedy"], word_vectors=str(vectors), chunk_size=5, progress=False)
    oov = [str(w.message) for w in caught if "out of vocabulary" in str(w.message)]
    # 12 samples, one unknown token each (x0..x11): one line for the run (3 shards x 2
    # systems), not one per shard and system; a count, which no --chunk-size changes
    assert oov == ["word vectors: 12 tokens out of vocabulary (case lower)"]
    assert all(issubclass(w.category, DialevalWarning) for w in caught if "vocabulary" in str(w.message))
    # samples with no known word: one count for the run too (4 of them, in 3 shards)
    samples = [{"system": "ab"[i % 2], "response": "zz qq" if i % 3 == 0 else "the cat",
                "references": ["the cat"]} for i in range(12)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = score(samples, ["emb_average"], word_vectors=str(vectors), chunk_size=5, progress=False)
    lost = [str(w.message) for w in caught if "left unscored" in str(w.message)]
    assert lost == []   # a response with no known word scores the floor: it is not unscored
    assert (out.sentence["emb_average"][::3] == -1.0).all()
    samples = [{"system": "ab"[i % 2], "response": "the cat", "references": ["zz qq" if i % 3 == 0 else "the cat"]}
               for i in range(12)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        score(samples, ["emb_average"], word_vectors=str(vectors), chunk_size=5, progress=False)
    lost = [str(w.message) for w in caught if "left unscored" in str(w.message)]
    assert lost == ["emb_average: 4 sample(s) left unscored (NaN): every reference has no "
                    "word in the vectors' vocabulary"]


def test_a_log_gets_lines_while_one_long_step_has_no_tick(monkeypatch, capsys):
    """A 5,000-row shard of one slow metric advances nothing until it ends: the plain lines must
    still come every EVERY seconds (a sign of life with the elapsed time), not only on ticks."""
    import time as _time

    import dialeval.progress as progress

    monkeypatch.setattr(progress, "EVERY", 0.3)
    monkeypatch.setattr(progress, "LINES_DELAY", 0.3)
    bar = progress.Progress(100, "lines")
    _time.sleep(1.6)              # no set() or advance() meanwhile
    bar.close()
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("dialeval: 0 of 100")]
    assert len(lines) >= 3, lines
    assert "elapsed" in lines[0]


def test_heartbeat_speaks_at_most_once_per_period(monkeypatch):
    """A long training loop's between-check lines (`progress.Heartbeat`): the first after one
    period, then at most one per period; a report of the loop's own starts the period again."""
    from dialeval import progress

    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    said = []
    beat = progress.Heartbeat(said.append, every=15)
    for t, text in [(5, "a"), (15, "b"), (20, "c"), (31, "d"), (46, "e")]:
        clock[0] = 100.0 + t
        beat(lambda: text)
    assert said == ["b", "d", "e"]
    clock[0] = 150.0
    beat.reset()
    clock[0] = 160.0
    beat(lambda: "f")
    assert said == ["b", "d", "e"]
