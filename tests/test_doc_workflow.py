"""The documented workflow runs: every `dialeval ...` command of the README's fenced bash blocks
and of docs/usage.md, in order, with the real command line, in a fresh folder where `examples/`
is reachable, exits 0 (issue 30: the README's last line used to stop with exit 2).

test_doc_commands.py checks that every command in the docs parses; this runs the ones a reader
runs first. The README's first block starts with `bash install.sh && . ./.dialeval-env`: install.sh
is left to CI (which runs it before the tests), its `dialeval` commands run here. The README
workflow loads the shipped default models (ADEM) and MiniLM, a few seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest

from conftest import REPO
from dialeval.cli.main import main
from test_doc_commands import as_typed, doc_commands
from test_readme import _first_blocks

# docs/usage.md commands left out, each with its reason. Empty: every command there runs on the
# bundled example (its parallel-file example reads files this test writes from examples/).
EXCLUDED: dict[str, str] = {}


def readme_main_job() -> list[list[str]]:
    """The `dialeval` steps of the README's first command line (install.sh and sourcing the
    environment file it writes are the steps before them)."""
    main_job, _ = _first_blocks()
    steps = [s.strip() for s in main_job.split("&&")]
    assert steps[:2] == ["bash install.sh", ". ./.dialeval-env"], steps
    assert all(s.startswith("dialeval ") for s in steps[2:]), steps
    return [as_typed(s[len("dialeval "):]) for s in steps[2:]]


def workflow() -> list[tuple[str, list[str]]]:
    """(where, argv) for every command to run, in order: the README's, then docs/usage.md's."""
    commands = [("README.md", argv) for argv in readme_main_job()]
    listed = list(doc_commands())
    commands += [(where, as_typed(c)) for where, c in listed if where == "README.md"]
    usage = [(where, c) for where, c in listed if where == "docs/usage.md"]
    assert usage, "docs/usage.md holds no dialeval command"
    commands += [(where, as_typed(c)) for where, c in usage if c not in EXCLUDED]
    return commands


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def metrics_named(commands) -> list[str]:
    names = []
    for _, argv in commands:
        if "--metrics" in argv:
            names += argv[argv.index("--metrics") + 1].split(",")
    return list(dict.fromkeys(names))


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A fresh working folder: examples/ reachable, the parallel files of docs/usage.md's
    example written from the bundled example (system seq2seq -> S_1.txt, retrieval -> S_2.txt,
    their references -> refs1.txt, refs2.txt), the shipped default models visible."""
    (tmp_path / "examples").symlink_to(REPO / "examples", target_is_directory=True)
    rows = [json.loads(line) for line in (REPO / "examples" / "demo.jsonl").read_text().splitlines()]
    by_system = {}
    for r in rows:
        by_system.setdefault(r["system"], []).append(r)
    first, second = by_system["seq2seq"], by_system["retrieval"]
    assert [r["id"] for r in first] == [r["id"] for r in second]      # line-aligned
    for name, lines in (("S_1.txt", [r["response"] for r in first]),
                        ("S_2.txt", [r["response"] for r in second]),
                        ("refs1.txt", [r["references"][0] for r in first]),
                        ("refs2.txt", [r["references"][1] for r in first])):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DIALEVAL_MODELS_DIR", raising=False)   # conftest hides the defaults
    return tmp_path


def test_the_documented_commands_run(folder):
    from dialeval.errors import DialevalError
    from dialeval.metrics.registry import metric_spec
    from dialeval.models.defaults import default_model_dir

    commands = workflow()
    for name in metrics_named(commands):
        spec = metric_spec(name)
        try:
            spec.metric_class()
        except DialevalError as exc:   # an extra install.sh installs is missing here
            pytest.skip(f"{name}: {exc} (install.sh installs every extra)")
        if spec.default_model and default_model_dir(spec.default_model) is None:
            pytest.skip(f"{name}: the shipped default models are not installed (install.sh installs them)")
    ran = []
    for where, argv in commands:
        code, out, err = run(argv)
        ran.append(" ".join(argv))
        assert code == 0, f"{where}: `dialeval {' '.join(argv)}` exited {code}:\n{err}"
    # the commands ran in order: the README's score wrote what its correlate, compare and
    # report read; the report and the per-sample output exist
    assert (folder / "demo-scores.jsonl").exists() and (folder / "scores.jsonl").exists()
    assert (folder / "report.html").stat().st_size > 0
    # the README's last workflow line, which the issue found failing, is among them
    assert "correlate scores.jsonl --human overall --level all" in ran


def test_level_all_skips_what_the_data_cannot_support_and_an_explicit_level_is_an_error(folder):
    """`correlate --level all` on the bundled example (no meta['dialogue_id']): the turn and
    system levels, one note on stderr for the dialogue level, as `report` skips it; asking for
    the dialogue level by name stays the error it was."""
    assert run(["score", "examples/demo.jsonl", "--metrics", "bleu2,rouge_l", "-o", "s.jsonl"])[0] == 0
    code, out, err = run(["correlate", "s.jsonl", "--human", "overall", "--level", "all", "--json",
                          "--n-boot", "0"])
    assert code == 0, err
    levels = {row["level"] for row in json.loads(out)["correlations"]}
    assert levels == {"turn", "system"}
    notes = [line for line in err.splitlines() if "--level all" in line]
    assert len(notes) == 1 and "dialogue" in notes[0] and "dialogue_id" in notes[0]
    code, _, err = run(["correlate", "s.jsonl", "--human", "overall", "--level", "dialogue"])
    assert code == 2 and "dialogue_id" in err
    # with dialogue ids every level is computed and nothing is skipped
    rows = [json.loads(line) for line in (folder / "s.jsonl").read_text().splitlines()]
    for r in rows:
        r["meta"] = {"dialogue_id": r["id"].split("-")[0]}
    (folder / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = run(["correlate", "d.jsonl", "--human", "overall", "--level", "all", "--json",
                          "--n-boot", "0"])
    assert code == 0, err
    assert {row["level"] for row in json.loads(out)["correlations"]} == {"turn", "dialogue", "system"}
    assert "--level all" not in err


def test_install_sh_steps_are_quiet_but_show_failures(tmp_path):
    """The README says install.sh prints one line per stage and one next step: its `quiet`
    wrapper drops the package managers' expected chatter and progress bars, sends dialeval's
    progress lines to stdout, keeps any other stderr line, and on failure shows the whole stderr
    and stops with the step's status (set -e semantics)."""
    import subprocess

    text = (REPO / "install.sh").read_text(encoding="utf-8")
    helpers = text[text.index("\nVERBOSE=") + 1:text.index("\nPIP=(")]
    script = helpers + r"""
noisy() {
  echo "WARNING: Location '/opt/x' is ignored: it is either a non-existing path or lacks a specific scheme." >&2
  printf ' 45%%|####   | 4/9\r100%%|#######| 9/9\n\n' >&2
  echo "glove-6b-50d: prepared at /cache/glove in 3 s" >&2
  echo "a warning that matters" >&2
  echo "its own output"
}
failing() { echo "ERROR: the real cause" >&2; echo "WARNING: Location '/opt/x' is ignored" >&2; return 3; }
quiet noisy
quiet failing
echo "never printed"
"""
    proc = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], capture_output=True,
                          text=True, cwd=tmp_path, env={**os.environ, "DIALEVAL_INSTALL_VERBOSE": "0"})
    assert proc.returncode == 3
    assert proc.stdout.splitlines() == ["its own output", "glove-6b-50d: prepared at /cache/glove in 3 s"]
    assert proc.stderr.splitlines() == ["a warning that matters", "ERROR: the real cause",
                                        "WARNING: Location '/opt/x' is ignored",
                                        "install.sh: failed (exit 3): failing"]
    # one closing next step, on stderr (test_readme.py runs that section)
    said = [l for l in text.splitlines() if "next step" in l and not l.lstrip().startswith("#")]
    assert len(said) == 1 and said[0].rstrip().endswith(">&2") and ". ./.dialeval-env" in said[0]
    assert "--root-user-action=ignore" in text and "set -euo pipefail" in text
