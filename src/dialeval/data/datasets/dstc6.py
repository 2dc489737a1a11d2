"""DSTC6 end-to-end track evaluation package: 20 systems x 2,000 Twitter turns, 11
references per turn (the original reply, then 10 written by annotators, in the golden
order), and only system-level human means (`human_evaluation_results.txt`: the mean of 10
raters' 1-5 scores over the 2,000 turns; "Human Mean" of the AM-FM paper's Table 1). The
per-response ratings and the contexts are not public, so this set correlates at system level
only. S_21 (the original reference rated as a system) has a human mean but no hypothesis
file; it is left out, as the paper's 20-system correlation does.

Lines are read as nlg-eval reads them: UTF-8, `.strip()`ed.
"""

from __future__ import annotations

import os

from ...errors import InputError
from ..sample import DatasetInfo, Sample
from .base import Dataset, need_file, read_text, Source

SOURCE = Source(
    folder="dstc6-eval",
    title="DSTC6 end-to-end conversation modeling, human evaluation package (Hori & Hori 2017, arXiv:1706.07440)",
    origin=("the organisers' dstc6_t2_evaluation.tgz, linked from the README of github.com/dialogtekgeek/"
            "DSTC6-End-to-End-Conversation-Modeling; a copy of its folder dstc6_t2_evaluation/ is in the history of "
            "github.com/karthik19967829/DSTC11-Benchmark (commit 678fdf7)"),
    licence="no licence file: research use, cite Hori & Hori 2017; the texts are public tweets (Twitter's terms apply)",
    layout=("human_evaluation_results.txt", "references/original_refs.txt", "references/refgen_result{1..10}.txt",
            "hypotheses/S_{1..20}.txt"),
    note="system-level human means only; the dialogue contexts are not public (tweet ids)")

REFERENCE_FILES = ["original_refs.txt"] + [f"refgen_result{k}.txt" for k in range(1, 11)]


def _lines(path) -> list[str]:
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [l.strip() for l in lines]


def load(path: str | os.PathLike, systems: int = 20) -> Dataset:
    human_file = need_file(path, "human_evaluation_results.txt")
    means: dict[str, dict[str, float]] = {}
    for number, line in enumerate(_lines(human_file), 1):
        if number == 1 or not line:
            continue
        parts = line.split("\t")
        try:
            means[parts[0]] = {"overall": float(parts[1])}
        except (IndexError, ValueError):
            raise InputError("expected 'system<TAB>score'", path=str(human_file), line=number) from None
    refs = [_lines(need_file(path, "references", f)) for f in REFERENCE_FILES]
    samples = []
    for k in range(1, systems + 1):
        system = f"S_{k}"
        hyp_file = need_file(path, "hypotheses", f"{system}.txt")
        hyps = _lines(hyp_file)
        if any(len(r) != len(hyps) for r in refs):
            raise InputError(f"{len(hyps)} lines, but the reference files have "
                             f"{sorted({len(r) for r in refs})}", path=str(hyp_file))
        for i, hyp in enumerate(hyps):
            samples.append(Sample(id=f"{system}-{i}", response=hyp, references=[r[i] for r in refs],
                                  system=system))
    info = DatasetInfo(
        name="dstc6", level="system", scales={"overall": (1, 5)},
        qualities={"overall": "response quality, 5-point Likert (5 very good ... 1 very poor), "
                              "system mean over 2,000 turns x 10 raters"},
        description="DSTC6 track 2: 20 systems, 11 references, system-level human means only")
    return Dataset(info, samples, system_ratings={s: v for s, v in means.items()
                                                  if s in {x.system for x in samples}})
