"""The command line: one package, one module per command group; it calls the library and prints.

`main.py` builds the parser and turns a `DialevalError` into one line and exit status 2; each
module it names in `CLI_EXTENSIONS` adds its commands (`add_commands`) and/or declares its
training commands (`TRAIN_COMMANDS`, `models.estimator.TrainCommand`s from which `train.py`
generates `dialeval train NAME` / `dialeval fit NAME`; an installed package adds its own through
the `dialeval.train` entry points). The scoring flags are generated from the metrics'
constructors (`options.py`). The library never imports this package.
"""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
