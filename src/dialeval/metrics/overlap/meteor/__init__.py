"""METEOR 1.5 without Java: the jar's normaliser, matchers, aligner and scoring in Python.

Modules: `normalize` (wrapper and `-norm` text handling), `resources` (finding METEOR's data
files and the paraphrase cache), `align` (candidate matches, beam search, statistics), `metric`
(the `meteor` Metric), `cli` (`--meteor-resources`). Nothing heavy is imported here.
"""

__all__ = ["Meteor"]


def __getattr__(name):
    if name == "Meteor":
        from .metric import Meteor
        return Meteor
    raise AttributeError(name)
