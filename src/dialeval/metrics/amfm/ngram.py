"""Fluency (eq. 2): sentence probabilities from an n-gram back-off language model.

Estimation is KenLM's `lmplz` (interpolated modified Kneser-Ney), run as a program: the
project does not re-implement it. install.sh builds `lmplz` into `.tools/bin`; it is found
there, through `DIALEVAL_KENLM_BIN` (a folder), or on PATH. Querying reads the ARPA file
itself (standard back-off semantics, which KenLM's query implements too), so scoring needs
no compiled module.

Eq. 2 is the geometric mean of the token probabilities, exp(1/N sum log p): we include the
end-of-sentence prediction, so N = words + 1 and an empty response still has a probability.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ...errors import DialevalError
from .text import tokens

BOS, EOS, UNK = "<s>", "</s>", "<unk>"
ENV_BIN = "DIALEVAL_KENLM_BIN"


def find_lmplz() -> str | None:
    """Path of KenLM's lmplz: $DIALEVAL_KENLM_BIN, then the repository's .tools/bin, then PATH."""
    candidates = []
    if os.environ.get(ENV_BIN):
        candidates.append(Path(os.environ[ENV_BIN]) / "lmplz")
    for parent in Path(__file__).resolve().parents:
        if (parent / ".tools" / "bin").is_dir():
            candidates.append(parent / ".tools" / "bin" / "lmplz")
            break
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return shutil.which("lmplz")


def train_arpa(sentences: Iterable[str], order: int, arpa_path: str | os.PathLike, *,
               memory: str = "400M", prune: Sequence[int] = ()) -> str:
    """Estimate an order-`order` modified Kneser-Ney LM with lmplz; write it as ARPA.

    `--discount_fallback` lets lmplz use its default discounts when a small corpus has too few
    singletons/doubletons to estimate them (it refuses otherwise)."""
    if not 1 <= int(order) <= 6:
        raise DialevalError(f"n-gram order {order} outside 1..6")
    lmplz = find_lmplz()
    if lmplz is None:
        raise DialevalError("training the FM language model needs KenLM's lmplz: run install.sh "
                            f"(builds it into .tools/bin) or set {ENV_BIN} to the folder holding it")
    arpa_path = os.fspath(arpa_path)
    with tempfile.TemporaryDirectory(prefix="dialeval-lmplz-") as tmp:
        text = os.path.join(tmp, "corpus.txt")
        lines = 0
        with open(text, "w", encoding="utf-8") as handle:
            for sentence in sentences:
                words = tokens(sentence)
                if words:
                    handle.write(" ".join(words) + "\n")
                    lines += 1
        if lines == 0:
            raise DialevalError("FM training corpus has no words")
        cmd = [lmplz, "-o", str(int(order)), "-S", memory, "-T", tmp, "--discount_fallback",
               "--text", text, "--arpa", arpa_path]
        if prune:
            cmd += ["--prune", *map(str, prune)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-3:]
            raise DialevalError(f"lmplz failed (order {order}): {' | '.join(tail)}")
    return arpa_path


class ArpaLM:
    """An ARPA back-off model in memory: n-gram -> (log10 p, log10 back-off)."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self.prob: dict[str, float] = {}
        self.backoff: dict[str, float] = {}
        self.order = 0
        self._read()
        if UNK not in self.prob:
            raise DialevalError(f"{self.path}: ARPA model has no {UNK} entry")
        self.unk = self.prob[UNK]

    def _read(self) -> None:
        section = 0
        try:
            handle = open(self.path, encoding="utf-8")
        except OSError as exc:
            raise DialevalError(f"{self.path}: cannot read the language model ({exc.strerror})") from None
        with handle:
            for number, line in enumerate(handle, 1):
                line = line.rstrip("\n")
                if not line:
                    continue
                if line.startswith("\\"):
                    if line.endswith("-grams:"):
                        section = int(line[1:line.index("-")])
                        self.order = max(self.order, section)
                    elif line == "\\end\\":
                        break
                    continue
                if section == 0:
                    continue
                parts = line.split("\t")
                try:
                    self.prob[parts[1]] = float(parts[0])
                    if len(parts) > 2:
                        self.backoff[parts[1]] = float(parts[2])
                except (IndexError, ValueError):
                    raise DialevalError(f"{self.path}:{number}: malformed ARPA line") from None
        if self.order == 0:
            raise DialevalError(f"{self.path}: not an ARPA file (no n-gram sections)")

    def token_log10(self, words: Sequence[str]) -> list[float]:
        """log10 p of each word and of </s>, given <s> and the preceding words (back-off)."""
        history = [BOS]
        out = []
        prob, backoff, n = self.prob, self.backoff, self.order
        for word in list(words) + [EOS]:
            context = history[-(n - 1):] if n > 1 else []
            total = 0.0
            while True:
                key = " ".join(context + [word])
                value = prob.get(key)
                if value is not None:
                    total += value
                    break
                if not context:
                    total += self.unk
                    break
                total += backoff.get(" ".join(context), 0.0)
                context = context[1:]
            out.append(total)
            history.append(word)
        return out

    def sentence_log10(self, text: str) -> float:
        return float(sum(self.token_log10(tokens(text))))

    def mean_log10(self, texts: Sequence[str]) -> np.ndarray:
        """Per text, the mean log10 probability per predicted token (log10 of eq. 2)."""
        cache: dict[str, float] = {}
        out = np.empty(len(texts))
        for i, text in enumerate(texts):
            value = cache.get(text)
            if value is None:
                scores = self.token_log10(tokens(text))
                value = cache[text] = sum(scores) / len(scores)
            out[i] = value
        return out
