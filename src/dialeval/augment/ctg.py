"""Conditional text generator (CTG): alternative queries from the utterance history.

The generator is a causal LM trained on DailyDialog train pairs (`dialeval train lm`): given
the history `<sep> u_1 <sep> ... u_{t-1} <sep>` it proposes what could be said at turn t, and
the top-k beams are the augmented queries u_t^(1..k). By default only the last history turn is
given, since the LM is trained on (previous utterance, utterance) pairs; a query without history
gets unconditioned beams. Beams that merely
repeat the original query or another beam are replaced by the next-best distinct ones.
"""

from __future__ import annotations

from typing import Sequence


class CTGAugmenter:
    def __init__(self, lm, history_turns: int = 1, max_new_tokens: int = 32, extra_beams: int = 4):
        self.lm = lm
        self.history_turns = max(1, history_turns)
        self.max_new_tokens = max_new_tokens
        self.extra_beams = extra_beams

    def beams(self, history: Sequence[str], k: int) -> list[str]:
        import torch

        lm = self.lm
        ids = [lm.sep_id]
        for turn in list(history)[-self.history_turns:]:
            ids += lm.encode(turn) + [lm.sep_id]
        room = lm.max_len - self.max_new_tokens
        ids = ids[-room:] if room > 0 else ids[-1:]
        n = k + self.extra_beams
        with torch.inference_mode():
            out = lm.model.generate(torch.tensor([ids], device=lm.device),
                                    attention_mask=torch.ones((1, len(ids)), dtype=torch.long, device=lm.device),
                                    num_beams=n, num_return_sequences=n, do_sample=False,
                                    max_new_tokens=self.max_new_tokens, eos_token_id=lm.sep_id,
                                    pad_token_id=lm.sep_id, no_repeat_ngram_size=3, early_stopping=True)
        texts = []
        for row in out[:, len(ids):].tolist():
            if lm.sep_id in row:
                row = row[:row.index(lm.sep_id)]
            texts.append(" ".join(lm.tokenizer.decode(row, skip_special_tokens=True).split()))
        return texts

    def augment(self, query: str, history: Sequence[str] = (), k: int = 4) -> list[str]:
        seen = {" ".join(query.lower().split())}
        out = []
        for text in self.beams(history, k):
            key = text.lower()
            if text and key not in seen:
                seen.add(key)
                out.append(text)
            if len(out) == k:
                break
        return out
