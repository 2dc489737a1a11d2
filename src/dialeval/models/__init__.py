"""Trained artifacts: saving and loading folders with a sha256 manifest (see `store`)."""
