"""Word-overlap metrics: BLEU-1..4, ROUGE-L, CIDEr-D and CIDEr (and METEOR, in its own module)."""
