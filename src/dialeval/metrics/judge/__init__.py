"""A local causal LM as a judge: `judge` (overall) and `judge_<quality>` (relevance, coherence,
fluency, engagement), the expected 1-5 rating under the model (docs/judge.md).

Heavy dependencies (torch, transformers) are imported inside functions only.
"""
