"""The README's opening commands stay true: the test command is what CI runs, and the main job
on the bundled example runs (install.sh itself is left to CI, which runs it first)."""

from __future__ import annotations

import os
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
    assert steps[1] == ". ./.dialeval-env"      # written by install.sh (see the test below)
    for step in steps[2:]:
        argv = shlex.split(step)
        assert argv[0] == "dialeval"
        argv = [str(REPO / a) if a.startswith("examples/") else a for a in argv[1:]]
        proc = subprocess.run([sys.executable, "-m", "dialeval.cli", *argv], cwd=tmp_path,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    scores = (tmp_path / "demo-scores.jsonl").read_text().splitlines()
    assert len(scores) == 8
    assert "meteor" in proc.stdout and "Williams" in proc.stdout


def test_install_sh_writes_the_environment_file_the_readme_sources(tmp_path):
    """install.sh's last section, run alone with this Python: `.dialeval-env` must put the
    folder holding this Python's scripts first on PATH, so that after `. ./.dialeval-env`
    the README's `dialeval` and `python3` are the ones install.sh installed into (a venv's, on
    a PEP 668 system, where a bare `dialeval` would otherwise be missing: exit 127)."""
    import sysconfig

    text = (REPO / "install.sh").read_text(encoding="utf-8")
    section = text[text.index("# --- Reaching `dialeval`"):]
    proc = subprocess.run(["bash", "-c", f'set -euo pipefail; PY="{sys.executable}"\n' + section
                           + '\n. ./.dialeval-env; command -v python3; echo "$PATH"'],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    scripts = sysconfig.get_path("scripts")
    found, path = proc.stdout.splitlines()[-2:]
    assert path.split(":")[0] == scripts
    if os.path.exists(os.path.join(scripts, "python3")):   # a venv's bin/, or pyenv's
        assert found == os.path.join(scripts, "python3")
    assert ". ./.dialeval-env" in proc.stderr     # the install ends by saying how to reach dialeval
