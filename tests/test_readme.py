"""The README's opening commands stay true: the test command is what CI runs, and the main job
on the bundled example runs (install.sh itself is left to CI, which runs it first)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

from conftest import REPO


def _first_blocks():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```bash\n(.*?)\n```", text, flags=re.S)[:2]


def test_ci_runs_the_readme_test_command():
    _, test_command = _first_blocks()
    assert test_command.strip() in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_main_job_on_the_bundled_example(tmp_path):
    main_job, _ = _first_blocks()
    steps = [s.strip() for s in main_job.split("&&")]
    assert steps[0] == "bash install.sh"
    for step in steps[1:]:
        argv = shlex.split(step)
        assert argv[0] == "dialeval"
        argv = [str(REPO / a) if a.startswith("examples/") else a for a in argv[1:]]
        proc = subprocess.run([sys.executable, "-m", "dialeval.cli", *argv], cwd=tmp_path,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    scores = (tmp_path / "demo-scores.jsonl").read_text().splitlines()
    assert len(scores) == 8
    assert "meteor" in proc.stdout and "Williams" in proc.stdout
