"""Response diversity over groups of responses to augmented queries (holistic paper, eq. 5-6)."""

from .entropy import (distinct_n, diversity_report, group_distinct, group_entropy, ngram_entropy,
                      responses_of_system)

__all__ = ["ngram_entropy", "distinct_n", "group_entropy", "group_distinct", "diversity_report", "responses_of_system"]
