"""Learned evaluators: metrics whose scoring function is fitted to human ratings (ADEM)."""
