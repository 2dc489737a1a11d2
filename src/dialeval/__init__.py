"""dialeval: automatic evaluation of dialogue responses, and of the metrics themselves.

`import dialeval` stays light: heavy families (embeddings, language models, learned
evaluators) import their dependencies only when a metric of theirs is built, and numpy itself
comes with the first use of `Sample` or `score` (the command line decides how many BLAS threads
numpy may start before it imports numpy; see `dialeval.models.threads`).
"""

from .version import __version__
from .errors import DialevalError, InputError

__all__ = ["__version__", "DialevalError", "InputError", "Sample", "score", "list_metrics"]


def _make_score():
    """`dialeval.score`, made on first lookup so that its documentation can be generated from
    the registry (`scoring_doc`) without making `import dialeval` read every metric module."""
    from .scoring_doc import score_doc

    def score(samples, metrics=None, **options):
        from .scoring import score as _score

        return _score(samples, metrics, **options)

    score.__module__ = __name__
    score.__doc__ = score_doc()
    return score


def __getattr__(name):
    if name == "score":
        globals()["score"] = made = _make_score()
        return made
    if name == "Sample":
        from .data.sample import Sample

        return Sample
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def list_metrics():
    from .metrics.registry import list_metrics as _list

    return _list()
