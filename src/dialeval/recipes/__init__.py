"""The shipped default models' recipes, and rebuilding them from the public data sets, byte for byte.

Each default is made by one `dialeval` command line (`Recipe.argv`) over folders named as
`dialeval datasets --sources` names them, under one data root. A rebuild must give the same
bytes as the shipped folder, so that anyone can check that a default was made the way its
card says. What stands in the way of that, and how it is removed here:

- time budgets (`--max-minutes`) stop training at a moment that depends on the machine's
  load: recipes use fixed example counts, epochs and steps instead;
- thread counts change the order of floating-point sums, and what one training leaves in a
  process (generator states, settings) changes the next: each recipe runs in a fresh
  interpreter with one torch / BLAS thread and a fixed string-hash seed;
- files record when and where they were made: `normalise` sets the timestamps inside `.npz`
  archives to a fixed date, drops wall-clock and memory measurements from the JSON files,
  writes the data root and output folder as `<data-root>` and `<models>`, and rewrites every
  manifest after those edits.

The recipes run every family's trainer (each in a fresh `dialeval` process), so this package
sits above the metrics, below the command line (`tests/test_imports.py`, `LAYERS`):

- `table.py`: one `Recipe` per default (`RECIPES`, built in `ORDER`), its command line;
- `normalise.py`: what makes a built folder depend on the data and the recipe alone;
- `build.py`: running the recipes into a models folder;
- `cards.py`: `card.json` beside each default and its page `docs/models/<name>.md`.
"""

from __future__ import annotations

from .build import FIXED_ENV, build, check_data_root
from .cards import card_markdown, headline, write_card
from .normalise import FIXED_DATE, LIBRARY_JSON, normalise
from .table import (ADEM_SETS, COMPOSE_REF_SETS, COMPOSE_SETS, DATA_ROOT, MODELS, ORDER, RECIPES, Recipe,
                    command_text)

__all__ = ["ADEM_SETS", "COMPOSE_REF_SETS", "COMPOSE_SETS", "DATA_ROOT", "FIXED_DATE", "FIXED_ENV", "LIBRARY_JSON",
           "MODELS", "ORDER", "RECIPES", "Recipe", "build", "card_markdown", "check_data_root", "command_text",
           "headline", "normalise", "write_card"]
