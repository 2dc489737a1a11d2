"""Streaming output, kill -9 and --resume: the finished file is byte-identical to an
uninterrupted run's; two plain runs are byte-identical; a resumed run takes the corpus-wide first
pass (CIDEr's document frequencies) from the checkpoint instead of reading the input for it again,
and redoes it when that file is damaged; a checkpoint of another run is refused; --backend dask
gives the local backend's file."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import flip_byte

SRC = Path(__file__).resolve().parents[1] / "src"
METRICS = "bleu1,bleu4,rouge_l,cider_d,cider"


def write_input(path: Path, n: int = 240, seed: int = 4) -> Path:
    rng = random.Random(seed)
    words = "the a cat dog sat ran on mat home i you like it is good fine".split()

    def sent():
        return " ".join(rng.choice(words) for _ in range(rng.randint(2, 9)))

    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            row = {"id": str(i // 2), "system": "AB"[i % 2], "response": sent(),
                   "references": [sent() for _ in range(rng.randint(0, 3))]}
            handle.write(json.dumps(row) + "\n")
    return path


# `dialeval score` in a process whose first pass fails if it runs: a resumed run must not need it
NO_FIRST_PASS = """
import sys
import dialeval.engine.stream as stream

def refuse(*args, **kwargs):
    raise SystemExit("the first pass ran again")

stream.gather_first_pass = refuse
from dialeval.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def cli(*args, env_extra=None, check=True, no_first_pass=False):
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(env_extra or {})
    entry = ["-c", NO_FIRST_PASS] if no_first_pass else ["-m", "dialeval.cli"]
    proc = subprocess.run([sys.executable, *entry, "score", *map(str, args)],
                          env=env, capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_kill_resume_and_plain_runs_are_byte_identical(tmp_path):
    src = write_input(tmp_path / "in.jsonl")
    common = [src, "--metrics", METRICS, "--chunk-size", "25"]
    cli(*common, "-o", tmp_path / "a.jsonl")
    cli(*common, "-o", tmp_path / "b.jsonl")
    a = (tmp_path / "a.jsonl").read_bytes()
    assert a == (tmp_path / "b.jsonl").read_bytes()
    assert len(a.splitlines()) == 240

    out = tmp_path / "c.jsonl"
    killed = cli(*common, "-o", out, env_extra={"DIALEVAL_ENGINE_KILL_AFTER_SHARD": "4"}, check=False)
    assert killed.returncode == -signal.SIGKILL
    assert not out.exists()
    partial = Path(str(out) + ".partial")
    checkpoint = json.loads(Path(str(out) + ".resume.json").read_text())
    assert checkpoint["shards"] == 4                      # shard 4 was written, not checkpointed
    assert partial.stat().st_size > checkpoint["bytes"]   # so the partial file has rows to drop
    first_pass = Path(str(out) + ".firstpass.npz")
    assert first_pass.exists() and checkpoint["first_pass"]["file"] == first_pass.name
    # both systems have their own references here: two document-frequency states
    assert sorted(checkpoint["first_pass"]["systems"]) == ["A", "B"]
    resumed = cli(*common, "-o", out, "--resume", no_first_pass=True)
    assert "100 samples (4 shards) already done" in resumed.stderr
    assert "first pass restored from the checkpoint" in resumed.stderr
    assert out.read_bytes() == a
    assert not partial.exists() and not Path(str(out) + ".resume.json").exists() and not first_pass.exists()
    assert resumed.stdout == cli(*common).stdout          # the same table as a plain run



def test_a_resumed_run_reports_the_whole_run(tmp_path):
    """The end-of-run lines (rows left unscored, per metric) count the shards done before the
    kill as well: they travel in the checkpoint with the merged states."""
    src = write_input(tmp_path / "in.jsonl")
    common = [src, "--metrics", "bleu2,rouge_l", "--chunk-size", "25"]
    plain = cli(*common)
    lines = [line for line in plain.stderr.splitlines() if "rows unscored" in line]
    assert len(lines) == 2 and "no references" in lines[0]
    out = tmp_path / "c.jsonl"
    cli(*common, "-o", out, env_extra={"DIALEVAL_ENGINE_KILL_AFTER_SHARD": "6"}, check=False)
    resumed = cli(*common, "-o", out, "--resume")
    assert [line for line in resumed.stderr.splitlines() if "rows unscored" in line] == lines


def test_an_input_of_one_shard_saves_no_first_pass_and_resumes(tmp_path):
    # one shard: CIDEr takes its document frequencies from the shard itself, so there is no
    # first pass to save; a killed run resumes from the beginning to the same bytes
    src = write_input(tmp_path / "in.jsonl", n=60)
    cli(src, "--metrics", METRICS, "-o", tmp_path / "a.jsonl")
    out = tmp_path / "c.jsonl"
    killed = cli(src, "--metrics", METRICS, "-o", out, env_extra={"DIALEVAL_ENGINE_KILL_AFTER_SHARD": "0"},
                 check=False)
    assert killed.returncode == -signal.SIGKILL
    assert not Path(str(out) + ".firstpass.npz").exists()
    resumed = cli(src, "--metrics", METRICS, "-o", out, "--resume")
    assert "first pass" not in resumed.stderr
    assert out.read_bytes() == (tmp_path / "a.jsonl").read_bytes()

def test_resume_redoes_a_damaged_first_pass_and_shared_references_are_stored_once(tmp_path):
    src = tmp_path / "in.jsonl"
    rows = [json.loads(line) for line in write_input(tmp_path / "base.jsonl", n=60).read_text().splitlines()]
    for i, row in enumerate(rows):        # systems A and B scored against the same references
        row["references"] = rows[i - i % 2]["references"]
    src.write_text("".join(json.dumps(row) + "\n" for row in rows))
    common = [src, "--metrics", "cider_d,cider,bleu2", "--chunk-size", "10"]
    plain = cli(*common, "-o", tmp_path / "plain.jsonl")
    out = tmp_path / "o.jsonl"
    cli(*common, "-o", out, env_extra={"DIALEVAL_ENGINE_KILL_AFTER_SHARD": "3"}, check=False)
    checkpoint = json.loads(Path(str(out) + ".resume.json").read_text())
    systems = checkpoint["first_pass"]["systems"]   # CIDEr and CIDEr-D share one pass; A and B one state
    assert systems["A"] == systems["B"] and list(systems["A"].values()) == [0]
    assert "cider-df" in next(iter(systems["A"]))
    first_pass = Path(str(out) + ".firstpass.npz")
    flip_byte(first_pass, -100, 1)
    assert cli(*common, "-o", out, "--resume", no_first_pass=True, check=False).returncode != 0
    resumed = cli(*common, "-o", out, "--resume")
    assert "no usable first pass; reading the input for it again" in resumed.stderr
    assert out.read_bytes() == (tmp_path / "plain.jsonl").read_bytes()
    assert resumed.stdout == plain.stdout


def test_checkpoint_of_another_run_is_refused(tmp_path):
    src = write_input(tmp_path / "in.jsonl", n=60)
    out = tmp_path / "o.jsonl"
    cli(src, "--metrics", METRICS, "--chunk-size", "10", "-o", out,
        env_extra={"DIALEVAL_ENGINE_KILL_AFTER_SHARD": "2"}, check=False)
    proc = cli(src, "--metrics", "bleu4", "--chunk-size", "10", "-o", out, "--resume", check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "made by a different run" in lines[0]
    proc = cli(src, "--metrics", METRICS, "--chunk-size", "10", "--resume", check=False)
    assert proc.returncode == 2 and "--resume needs -o" in proc.stderr


def test_stdin_and_json_array_inputs_give_the_same_rows(tmp_path):
    src = write_input(tmp_path / "in.jsonl", n=20)
    rows = [json.loads(line) for line in src.read_text().splitlines()]
    (tmp_path / "in.json").write_text(json.dumps(rows, indent=1))
    cli(src, "--metrics", "bleu4,cider_d", "-o", tmp_path / "x.jsonl")
    cli(tmp_path / "in.json", "--metrics", "bleu4,cider_d", "-o", tmp_path / "y.jsonl")
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(src, "rb") as stdin:
        subprocess.run([sys.executable, "-m", "dialeval.cli", "score", "-", "--metrics", "bleu4,cider_d",
                        "-o", str(tmp_path / "z.jsonl")], env=env, stdin=stdin, check=True,
                       capture_output=True)
    x = (tmp_path / "x.jsonl").read_bytes()
    assert x == (tmp_path / "y.jsonl").read_bytes() == (tmp_path / "z.jsonl").read_bytes()
    first = json.loads(x.splitlines()[0])
    assert first["response"] == rows[0]["response"] and first["references"] == rows[0]["references"]
    assert sorted(os.listdir(tmp_path)) == ["in.json", "in.jsonl", "x.jsonl", "y.jsonl", "z.jsonl"]


def test_dask_backend_writes_the_local_file(tmp_path):
    pytest.importorskip("distributed")
    src = write_input(tmp_path / "in.jsonl", n=80)
    common = [src, "--metrics", METRICS, "--chunk-size", "15"]
    cli(*common, "-o", tmp_path / "local.jsonl")
    cli(*common, "-o", tmp_path / "dask.jsonl", "--backend", "dask", "--workers", "2")
    assert (tmp_path / "local.jsonl").read_bytes() == (tmp_path / "dask.jsonl").read_bytes()
