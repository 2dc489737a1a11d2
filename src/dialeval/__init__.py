"""dialeval: automatic evaluation of dialogue responses, and of the metrics themselves.

`import dialeval` stays light: heavy families (embeddings, language models, learned
evaluators) import their dependencies only when a metric of theirs is built, and numpy itself
comes with the first use of `Sample` or `score` (the command line decides how many BLAS threads
numpy may start before it imports numpy; see `dialeval.models.threads`).
"""

from .version import __version__
from .errors import DialevalError, InputError

__all__ = ["__version__", "DialevalError", "InputError", "Sample", "score", "list_metrics"]


def score(samples, metrics, **options):
    """Score samples with the named metrics; see `dialeval.scoring.score` for every option."""
    from .scoring import score as _score

    return _score(samples, metrics, **options)


def _share_score_doc() -> None:
    """`help(dialeval.score)` shows the full option list of `dialeval.scoring.score`. The
    text lives in scoring.py; reading it from the source keeps `import dialeval` light."""
    import os

    path = os.path.join(os.path.dirname(__file__), "scoring.py")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        start = text.index('    """Score `samples`', text.index("def score("))
        end = text.index('"""', start + 8)
        lines = text[start + 7:end].splitlines()
        score.__doc__ = "\n".join(lines[:1] + [line[4:] for line in lines[1:]])
    except (OSError, ValueError):
        pass


_share_score_doc()


def __getattr__(name):
    if name == "Sample":
        from .data.sample import Sample

        return Sample
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def list_metrics():
    from .metrics.registry import list_metrics as _list

    return _list()
