"""dialeval: automatic evaluation of dialogue responses, and of the metrics themselves.

`import dialeval` stays light: heavy families (embeddings, language models, learned
evaluators) import their dependencies only when a metric of theirs is built.
"""

from .version import __version__
from .errors import DialevalError, InputError
from .data.sample import Sample

__all__ = ["__version__", "DialevalError", "InputError", "Sample", "score", "list_metrics"]


def score(samples, metrics, **options):
    """Score samples with the named metrics; see `dialeval.scoring.score`."""
    from .scoring import score as _score

    return _score(samples, metrics, **options)


def list_metrics():
    from .metrics.registry import list_metrics as _list

    return _list()
