"""Embedding-based metrics: nlg-eval's word-vector metrics (average, extrema, greedy) and
sentence-encoder cosine. Heavy dependencies (pandas, gensim, sentence-transformers) are
imported inside the functions that need them."""
