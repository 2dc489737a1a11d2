"""Judge prompt templates: the shipped ones (templates/*.txt), a user's file, and filling them.

A template is plain text with up to three placeholders, `{context}`, `{response}` and
`{references}` (a pairwise template has `{response_a}` and `{response_b}`, the replies shown
first and second, instead of `{response}`); nothing else in it is special (other braces stay as
written). A line that is
exactly `[answer]` ends the user's message: the text after it (trailing newline removed) opens
the model's answer, so the rating is read right after, e.g. `The rating is `. Without it the
rating is the first token of the answer.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ...errors import DialevalError

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
QUALITIES = ("overall", "relevance", "coherence", "fluency", "engagement")
PLACEHOLDERS = ("{context}", "{response}", "{references}", "{response_a}", "{response_b}")
PAIR_PLACEHOLDERS = ("{response_a}", "{response_b}")   # the pairwise template's two replies
ANSWER_MARK = "[answer]"
NO_CONTEXT = "(the conversation starts here)"
NO_REFERENCES = "(none)"


@dataclass(frozen=True)
class Template:
    name: str        # the shipped name, or the file's base name
    text: str        # the user's message, with placeholders
    answer: str      # what opens the answer ("" = nothing)
    sha: str         # sha256 of the file's bytes, first 12 hex digits

    @property
    def wants_references(self) -> bool:
        return "{references}" in self.text

    def fill(self, context: list[str], response: str, references: list[str]) -> str:
        return self._fill({"{context}": format_context(context), "{response}": " ".join(response.split()),
                           "{references}": format_references(references)})

    def fill_pair(self, context: list[str], first: str, second: str, references: list[str] = ()) -> str:
        """The pairwise template with the reply shown first and the one shown second."""
        return self._fill({"{context}": format_context(context), "{response_a}": " ".join(first.split()),
                           "{response_b}": " ".join(second.split()),
                           "{references}": format_references(list(references))})

    def _fill(self, values: dict[str, str]) -> str:
        out, i = [], 0
        text = self.text
        while i < len(text):   # one left-to-right pass: a placeholder inside a filled value stays text
            for key in PLACEHOLDERS:
                if key in values and text.startswith(key, i):
                    out.append(values[key])
                    i += len(key)
                    break
            else:
                out.append(text[i])
                i += 1
        return "".join(out)


def shipped_names() -> list[str]:
    return sorted(p.stem for p in TEMPLATE_DIR.glob("*.txt"))


def load_template(spec: str | os.PathLike | None, quality: str,
                  needs: tuple[str, ...] = ("{response}",)) -> Template:
    """The template for `quality`: the shipped one when `spec` is None, else `spec` as a file
    path, or as a shipped template's name (`overall-ref`). `needs`: the placeholders it must
    have (the pairwise judge's template: `{response_a}` and `{response_b}`)."""
    if spec is None or spec == "":
        path, name = TEMPLATE_DIR / f"{quality}.txt", quality
    else:
        path = Path(os.fspath(spec))
        name = path.stem
        if not path.is_file():
            shipped = TEMPLATE_DIR / f"{os.fspath(spec)}.txt"
            if shipped.is_file() and os.sep not in os.fspath(spec):
                path = shipped
            else:
                raise DialevalError(f"--judge-template {os.fspath(spec)}: no such file (or shipped template: "
                                    f"{', '.join(shipped_names())})")
    data = path.read_bytes()
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DialevalError(f"{path}: a judge template must be UTF-8 text") from None
    missing = [p for p in needs if p not in raw]
    if missing:
        raise DialevalError(f"{path}: a{' pairwise' if needs != ('{response}',) else ''} judge template needs "
                            f"{' and '.join(missing)} placeholder{'s' if len(missing) > 1 else ''}")
    text, answer = raw, ""
    lines = raw.split("\n")
    if ANSWER_MARK in (line.strip() for line in lines):
        at = [line.strip() for line in lines].index(ANSWER_MARK)
        text = "\n".join(lines[:at])
        answer = "\n".join(lines[at + 1:])
        if answer.endswith("\n"):
            answer = answer[:-1]
    return Template(name, text.strip("\n"), answer, hashlib.sha256(data).hexdigest()[:12])


def format_context(turns: list[str]) -> str:
    """The context turns, one a line, speakers A and B alternating so that the last turn is A's
    (the response is B's)."""
    turns = [" ".join(t.split()) for t in turns]
    if not turns:
        return NO_CONTEXT
    n = len(turns)
    return "\n".join(f"{'A' if (n - 1 - i) % 2 == 0 else 'B'}: {t}" for i, t in enumerate(turns))


def format_references(refs: list[str]) -> str:
    refs = [" ".join(r.split()) for r in refs if r.strip()]
    return "\n".join(f"- {r}" for r in refs) if refs else NO_REFERENCES
