"""What every runtime of the local judge shares (`metric.py`'s torch path, `llamacpp.py`): the
frame around a prompt, the answer tokens, and the token prefix every prompt of a template
starts with (computed once, reused as a cache)."""

from __future__ import annotations

import numpy as np

from ...errors import DialevalError
from .prompt import Template

RATINGS = "12345"
MIN_PREFIX = 8          # shorter shared prefixes are not worth a cache


class JudgeFrame:
    """What every runtime of the judge shares: the tokenizer, the frame around a prompt (chat
    header or plain) and the answer tokens. A runtime adds `rating_logits`."""

    def __init__(self, tokenizer, path: str, max_len: int, fingerprint: str):
        self.tokenizer = tokenizer
        self.path = path
        self.max_len = int(max_len)
        self.fingerprint = fingerprint
        self.chat = bool(getattr(tokenizer, "chat_template", None))
        pad = tokenizer.pad_token_id
        if pad is None:
            pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
        self.pad_id = int(pad)

    def prompt_text(self, user: str, template: Template) -> str:
        """The full text up to the answer position."""
        if self.chat:
            head = self.tokenizer.apply_chat_template([{"role": "user", "content": user}], tokenize=False,
                                                      add_generation_prompt=True)
            return head + template.answer
        return user + "\n" + (template.answer or "Rating (1-5): ")

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=not self.chat))

    def rating_ids(self, prompt: str) -> tuple[list[int], bool]:
        """The five rating tokens as they follow `prompt`'s last token, and whether the prompt's
        trailing spaces must go (a tokenizer that writes " 3" as one token)."""
        return self.label_ids(prompt, RATINGS)

    def label_ids(self, prompt: str, labels) -> tuple[list[int], bool]:
        """`rating_ids` for any one-character answer labels (the pairwise judge's "1", "2")."""
        tok = self.tokenizer
        tail = prompt[-64:]
        for strip, lead in ((False, ""), (True, " ")):
            base_text = tail.rstrip(" ") if strip else tail
            if strip and base_text == tail:
                continue
            base = tok.encode(base_text, add_special_tokens=False)
            ids = []
            for d in labels:
                full = tok.encode(base_text + lead + d, add_special_tokens=False)
                if full[:len(base)] != base or len(full) != len(base) + 1:
                    break
                ids.append(full[-1])
            if len(ids) == len(labels) and len(set(ids)) == len(labels):
                return ids, strip
        single = [tok.encode(d, add_special_tokens=False) for d in labels]
        if all(len(s) == 1 for s in single):
            return [s[0] for s in single], False
        raise DialevalError(f"{self.path}: the tokenizer has no single tokens for the answers "
                            f"{', '.join(labels)}")

    def rating_logits(self, tokens: list[list[int]], ids: list[int], batch_tokens: int,
                      fixed_prefix: int | None = None) -> np.ndarray:
        """(n, len(ids)) float32 logits of the answer tokens at the last position of each token list."""
        raise NotImplementedError


def shared_prefix(tokens: list[list[int]]) -> int:
    """Length of the token prefix all rows share, leaving every row at least one token."""
    first = tokens[0]
    n = min(len(t) for t in tokens) - 1
    for t in tokens[1:]:
        k = 0
        while k < n and t[k] == first[k]:
            k += 1
        n = k
    return max(0, n)


__all__ = ["MIN_PREFIX", "RATINGS", "JudgeFrame", "shared_prefix"]
