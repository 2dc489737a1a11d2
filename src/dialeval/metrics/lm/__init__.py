"""Causal-language-model context coherence and fluency (Pang et al. 2020, eq. 1-4).

Heavy dependencies (torch, transformers, tokenizers) are imported inside functions only.
"""
