"""`dialeval models build`: retrain the shipped defaults from the public data sets.

The recipes, the normalisation that makes a rebuild give the same bytes, and the building
itself are library code (`dialeval.recipes`); this module parses and prints. Names imported
from here before the recipes moved (`RECIPES`, `build`, `normalise`, ...) still resolve, read
from `dialeval.recipes` when first asked for, so `dialeval models` starts without them.
"""

from __future__ import annotations

import os

from dialeval.errors import DialevalError


def cmd_build(args) -> int:
    from dialeval.recipes import build

    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    out = args.output
    if out is None:
        out = os.path.join("packages", "dialeval-models", "src", "dialeval_models")
        if not os.path.isdir(out):
            raise DialevalError("give -o DIR (or run from a dialeval checkout, which builds into "
                                f"{out})")
    from dialeval.cli.train import run_resumable

    from dialeval.progress import say

    names = []

    def run() -> int:
        names.extend(build(args.data_root, out, only, say=say, checkpoint=args._checkpoint,
                           checkpoint_minutes=args.checkpoint_minutes))
        return 0

    status = run_resumable("models build", args, out, run)
    if status != 0:
        return status
    print(f"built {', '.join(names)} into {out}; reinstall the package to use them "
          "(pip install ./packages/dialeval-models), or point DIALEVAL_MODELS_DIR at the folder")
    return 0


def __getattr__(name: str):
    import dialeval.recipes as recipes

    try:
        return getattr(recipes, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
