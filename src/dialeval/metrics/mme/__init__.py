"""MME sub-metrics (Zhang et al., MME-CRS, DSTC10 track 5): fluency (FM), relevance (RM), topic
coherence (TCM), engagement (EM) and specificity (SM: NLL, NCE, PPL), each a small head trained
here on top of the frozen all-MiniLM-L6-v2 encoder and saved in one model folder
(`dialeval train mme`). The composition of their scores (CRS) lives in `dialeval.meta`.

Modules: `data` (DailyDialog-derived training sets, perturbations), `encoder` (frozen MiniLM
features, each distinct text encoded once), `heads` (MLP heads stored as plain arrays),
`normalise` (USL-H's percentile clip + min-max), one module per sub-metric, `model` (the folder
that holds them all) and `metric` (the registered `mme_*` metrics).
"""
