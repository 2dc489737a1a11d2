"""Meta-evaluation: how well a metric agrees with humans, and how much the humans agree.

- `correlation`: Pearson / Spearman / Kendall tau-b with p-values at turn, dialogue and
  system level, with seeded bootstrap confidence intervals;
- `significance`: Williams' test and a paired bootstrap for "metric A beats metric B";
- `agreement`: split-half, leave-one-rater-out, Cohen / Fleiss kappa, Krippendorff's alpha,
  dropping low-agreement raters;
- `normalize`: a metric put on the human scale (ADEM's |metric|);
- `systems`: comparing systems (`compare`, the report's tables), from `measures` (a system's
  value from score rows, by each metric's declaration), `pairing` (which rows are one item),
  `resampling` (bootstrap, approximate randomization, significance marks) and `human` (a row's
  and a system's human score);
- `system_level`: correlation of the systems' values with their human means;
- `evaluate`: tables from `dialeval score` output, for the CLI.
"""

from .agreement import (agreement, cohen_kappa, drop_raters, fleiss_kappa, human_mean,
                        krippendorff_alpha, leave_one_out, pairwise_kappa, ratings_matrix,
                        split_half)
from .correlation import LEVELS, METHODS, Correlation, correlate, correlation
from .normalize import to_human_scale
from .significance import Comparison, compare, williams_test

__all__ = ["agreement", "cohen_kappa", "drop_raters", "fleiss_kappa", "human_mean",
           "krippendorff_alpha", "leave_one_out", "pairwise_kappa", "ratings_matrix",
           "split_half", "LEVELS", "METHODS", "Correlation", "correlate", "correlation",
           "to_human_scale", "Comparison", "compare", "williams_test"]
