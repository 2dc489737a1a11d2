"""A loaded causal LM and the sequence frame it scores in: the one type every LM module shares.

Kept apart from checkpoint.py (which finds and loads folders) so that the scorer (logprob.py) and
the LoRA trainer (lora.py) can name it without importing the loader that dispatches to them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import DialevalError


@dataclass
class LoadedLM:
    """A causal LM ready to score: model, tokenizer, separator id and stored reference scores."""

    path: str
    model: Any
    tokenizer: Any
    sep_id: int
    max_len: int
    device: str
    info: dict = field(default_factory=dict)
    reference: dict[str, np.ndarray] = field(default_factory=dict)
    shared: bool = False             # the model is the backbone cache's (a cast makes a copy)
    layout: str = "plain"
    lowercase: bool = False
    precision: str = "fp32"          # the weights' dtype: fp32, or bf16 (`--lm-precision`)
    _frame: "Frame | None" = None
    _split: "bool | None" = None     # logprob.py: decoder + output layer apart gives the same bits

    def encode(self, text: str) -> list[int]:
        """Token ids of one utterance, with the leading space a byte-level BPE gives mid-text
        (none in the chat frame, where an utterance starts a line)."""
        text = " ".join(text.split())
        if self.lowercase:
            text = text.lower()
        if not text:
            return []
        return list(self.tokenizer.encode(text if self.layout == "chat" else " " + text, add_special_tokens=False))

    @property
    def frame(self) -> "Frame":
        if self._frame is None:
            self._frame = make_frame(self.tokenizer, self.layout, self.sep_id, self.path)
        return self._frame


LAYOUTS = ("plain", "chat")


@dataclass(frozen=True)
class Frame:
    """Token ids around a (query, response) pair: head + q + mid + r + end; solo + r + end."""

    head: list[int]
    mid: list[int]
    solo: list[int]
    end: list[int]


def make_frame(tokenizer, layout: str, sep_id: int, path: str = "") -> Frame:
    if layout == "plain":
        return Frame([sep_id], [sep_id], [sep_id], [sep_id])
    if layout != "chat":
        raise DialevalError(f"{path}: unknown LM layout {layout!r}; choose from {', '.join(LAYOUTS)}")
    vocab = tokenizer.get_vocab()
    if "<|im_start|>" not in vocab or "<|im_end|>" not in vocab:
        raise DialevalError(f"{path}: the chat layout needs a tokenizer with <|im_start|> and <|im_end|> tokens")

    def ids(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False))

    return Frame(ids("<|im_start|>user\n"), ids("<|im_end|>\n<|im_start|>assistant\n"),
                 ids("<|im_start|>assistant\n"), ids("<|im_end|>"))


def offline() -> None:
    """Never reach the model hub: every path here is local. Also checks the `lm` extra is there."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import importlib.util

    for name in ("torch", "transformers", "tokenizers", "safetensors"):
        if importlib.util.find_spec(name) is None:
            from ...optional import MissingDependency

            raise MissingDependency(name, "the language-model metrics", "lm")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
