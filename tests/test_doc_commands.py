"""Every `dialeval ...` command in the README and docs/ parses with the real command line.

Recipes drift when a flag is renamed or a training option becomes a generated one; a reader then
copies a command that fails at its first word. Each command in a fenced shell block (with `\\`
continuations joined) is read the way a reader would type it: optional `[...]` groups left out,
the first of `a|b|c` alternatives taken, `...` placeholders dropped, `$DATA` standing for the
public data root (docs/datasets.md). Parsing runs argparse only: nothing is trained or read.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from conftest import REPO
from dialeval.cli.main import build_parser

PREFIXES = ("dialeval ", "python3 -m dialeval.cli ")


def doc_commands():
    paths = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"```(?:bash|sh|console|shell)?\n(.*?)```", text, flags=re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.strip().removeprefix("$ ")
                for prefix in PREFIXES:
                    if line.startswith(prefix):
                        yield path.relative_to(REPO).as_posix(), line[len(prefix):]


def as_typed(command: str) -> list[str]:
    command = re.sub(r"\s+#.*$", "", command)
    while re.search(r"\[[^\[\]]*\]", command):
        command = re.sub(r"\[[^\[\]]*\]", "", command)
    for stop in (" | ", " > ", " && ", " ; ", " 2>"):
        command = command.split(stop)[0]
    command = re.sub(r"(\S+?)\|\S+", lambda m: m.group(1), command)
    return [w for w in shlex.split(command.replace("$DATA", "DATA")) if w != "..."]


COMMANDS = list(doc_commands())


def test_the_docs_hold_recipes():
    assert len(COMMANDS) >= 30, COMMANDS
    assert any(c.startswith("train adem") for _, c in COMMANDS)


@pytest.mark.parametrize("where,command", COMMANDS, ids=[f"{w}:{c[:40]}" for w, c in COMMANDS])
def test_command_parses(where, command, capsys):
    try:
        build_parser().parse_args(as_typed(command))
    except SystemExit as exc:
        if exc.code:
            pytest.fail(f"{where}: `dialeval {command}` does not parse:\n{capsys.readouterr().err}")
