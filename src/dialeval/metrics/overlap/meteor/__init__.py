"""METEOR 1.5 without Java: the jar's normaliser, matchers, aligner and scoring.

Modules: `normalize` (wrapper and `-norm` text handling), `resources` (finding METEOR's data
files and the paraphrase cache), `align` (candidate matches, beam search, statistics: the
pure-Python reference), `kernel.pyx` (the same per-pair work compiled with Cython, run by
default), `packed` (a batch's sentences as the kernel's flat arrays), `metric` (the `meteor`
Metric), `javahash` (Java's String.hashCode). Nothing heavy is imported here.
"""

__all__ = ["Meteor"]


def __getattr__(name):
    if name == "Meteor":
        from .metric import Meteor
        return Meteor
    raise AttributeError(name)
