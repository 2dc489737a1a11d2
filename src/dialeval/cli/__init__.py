"""The command line: one package, one module per command group; it calls the library and prints.

`main.py` builds the parser and turns a `DialevalError` into one line and exit status 2; each
other module adds its commands (`add_commands`), `train` targets (`add_train_commands`) or
`score` options (`add_score_arguments`). The library never imports this package.
"""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
