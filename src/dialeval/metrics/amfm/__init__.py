"""AM-FM (D'Haro et al., DSTC6): adequacy as LSI cosine, fluency as an n-gram LM ratio.

- `lsi`: bag-of-words vectors projected by a truncated SVD learned on a corpus (eq. 1);
- `ngram`: n-gram language models, estimated by KenLM's `lmplz`, queried from the ARPA file
  (eq. 2);
- `model`: the trainable estimator (`AMFMModel.fit / save / load`) holding both;
- `metric`: the `am`, `fm`, `fm_abs` and `amfm` metrics (eq. 3-4, multi-reference rules);
- `tuning`: system-level correlation, lambda / L / n selection by cross-validation, and
  cross-fitting on an evaluation set's own references;
- `sweep`: the paper's hyper-parameter curves (Figure 1, Table 2, Figure 2) as CSV and PNG;
- `cli`: `dialeval train amfm`, `dialeval sweep amfm`, `dialeval score --amfm-model`.

Heavy imports (scikit-learn, matplotlib) happen inside functions.
"""
