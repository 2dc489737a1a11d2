"""Tokenizers (each with a name that goes into signatures) and integer n-gram tables."""

from .tokenizers import get_tokenizer, list_tokenizers

__all__ = ["get_tokenizer", "list_tokenizers"]
