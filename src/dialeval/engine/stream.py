"""The streaming, resumable run behind `dialeval score`: read shards, score, write as you go.

Per-sample rows go to `OUTPUT.partial` as each shard finishes; after each shard the file is
flushed to disk and a checkpoint `OUTPUT.resume.json` records how many shards and bytes are
done and the merged per-system states (floats written with `repr`, which round-trips exactly).
At the end the partial file is renamed to OUTPUT and the checkpoint removed, so OUTPUT is whole
or absent. `resume=True` truncates the partial file to the checkpoint's byte count, restores the
states, skips the done shards (reading them again, unscored) and carries on: the finished file
is byte-identical to an uninterrupted run's, because shards, their order and the order of
merging are the same. A checkpoint made with another input, other options or another shard
size is refused. The merged corpus-wide first pass (CIDEr's document frequencies) is saved
beside the checkpoint once it is done (`OUTPUT.firstpass.npz`, see `checkpoint.py`), so a resumed
run does not read the whole input for it again.

Memory: one shard of samples and rows at a time (times the Dask window), the merged states,
and what a metric's first pass needs (CIDEr: distinct n-grams with their document frequency).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..data.readers import chunked, iter_parallel_samples, iter_samples, STDIN
from ..data.sample import Sample
from ..data.writers import json_value
from ..errors import DialevalError
from ..version import __version__
from .checkpoint import FIRST_PASS_SUFFIX, load_checkpoint, load_first_pass, save_checkpoint, save_first_pass
from .merge import Totals, no_reference_note, unscored_notes
from .plan import Plan
from .rows import rows_text
from .run import KeepSingleShard, gather_first_pass, run_plan

KILL_HOOK = "DIALEVAL_ENGINE_KILL_AFTER_SHARD"  # tests: SIGKILL self after writing that shard's rows
CHECKPOINT_VERSION = 2   # 2: the first pass is kept in OUTPUT.firstpass.npz


@dataclass
class Source:
    """A re-readable input: one file (JSONL, JSON array, CSV, TSV; `-` is standard input,
    spooled to a temporary file so that it can be read twice) or parallel text files."""

    path: str | None = None
    fmt: str | None = None
    hyp: Sequence[str] = ()
    ref: Sequence[str] = ()
    systems: Sequence[str] | None = None
    default_system: str | None = None
    _spool: str | None = None

    def samples(self) -> Iterator[Sample]:
        if self.hyp:
            return iter_parallel_samples(self.hyp, self.ref, systems=self.systems or None)
        from ..data.readers import input_format

        path = self._spool or self.path
        samples = iter_samples(path, fmt=input_format(self.path, self.fmt))
        if self.default_system is None:
            return samples
        return (_with_system(s, self.default_system) for s in samples)

    def spool_stdin(self, directory: str | None = None) -> None:
        if self.path == STDIN and self._spool is None:
            fd, tmp = tempfile.mkstemp(prefix=".dialeval-stdin-", dir=directory)
            with os.fdopen(fd, "wb") as handle:
                shutil.copyfileobj(sys.stdin.buffer, handle, 1 << 20)
            self._spool = tmp

    def cleanup(self) -> None:
        if self._spool is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._spool)
            self._spool = None

    def estimated_rows(self) -> int | None:
        """About how many samples the input holds, for the progress total: its lines (blank
        lines and a CSV header aside, multi-line CSV cells make it an over-estimate), counted
        without decoding; None for a JSON array (one record is not one line)."""
        from ..data.readers import count_lines, input_format

        try:
            if self.hyp:
                return sum(count_lines(p) for p in self.hyp)
            path = self._spool or self.path
            if path is None or path == STDIN:
                return None
            fmt = input_format(self.path, self.fmt)
            with open(path, "rb") as handle:
                head = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
            if fmt == "jsonl" and head.startswith(b"["):
                return None
            n = count_lines(path)
            return max(n - 1, 0) if fmt in ("csv", "tsv") else n
        except (OSError, DialevalError):
            return None

    def fingerprint(self) -> dict[str, Any]:
        paths = list(self.hyp) + list(self.ref) if self.hyp else [self.path]
        files = []
        for p in paths:
            st = os.stat(p)
            files.append([os.path.abspath(p), st.st_size, st.st_mtime_ns])
        return {"files": files, "fmt": self.fmt, "systems": list(self.systems or []),
                "default_system": self.default_system, "refs": len(self.ref)}


def _with_system(sample: Sample, system: str) -> Sample:
    if sample.system is None:
        sample.system = system
    return sample


@dataclass
class RunSummary:
    """The aggregate of a streamed run (what the table and `--report` show)."""

    metrics: list[str]
    corpus: dict[str, float]
    systems: dict[str, dict[str, float]]
    signatures: dict[str, str]
    counts: dict[str, int]
    n: int
    notes: list[str] = field(default_factory=list)
    scored: dict[str, dict[str, int]] = field(default_factory=dict)   # system -> metric -> scored rows

    def summary(self) -> dict[str, Any]:
        return {"metrics": {m: {"corpus": json_value(float(self.corpus[m])), "signature": self.signatures[m]}
                            for m in self.metrics},
                "systems": {s: {m: json_value(float(v)) for m, v in vals.items()}
                            for s, vals in self.systems.items()},
                "rows": dict(self.counts), "scored": self.scored}


def stats_metric_names(plan: Plan) -> list[str]:
    """Metrics whose corpus score is a function of summed statistics (corpus BLEU, METEOR in
    `multi` mode), not a mean of sentence scores: their rows are what resampling needs."""
    return [m.name for m in plan.metrics() if m.system_value(m.refs_mode) == "summed-stats"]


def shard_lines(plan: Plan, samples: Sequence[Sample], sentence: dict[str, Any],
                stats: dict[str, Any] | None = None, first: bool = False) -> str:
    """Output rows of one shard. With `stats` (`score --with-stats`), each row also carries the
    statistics rows of the summed-statistics metrics, and the file's first row the signatures,
    so that `compare` and `report` can recompute corpus scores on resamples."""
    names = plan.names
    # Python floats, once per shard (a numpy scalar per row and metric is slow to take)
    columns = [np.asarray(sentence[m], dtype=np.float64).tolist() for m in names]
    extras = None
    if stats is not None:
        summed = stats_metric_names(plan)
        extras = []
        for i in range(len(samples)):
            extra: dict[str, Any] = {}
            if summed:
                extra["stats"] = {m: [float(v) for v in stats[m][i]] for m in summed}
            if first and i == 0:
                extra["signatures"] = dict(plan.signatures)
            extras.append(extra)
    return rows_text(samples, names, columns, extras)


def stream_score(plan: Plan, source: Source, backend, output: str | None = None, *, resume: bool = False,
                 progress: bool | None = None, say: Callable[[str], None] | None = None,
                 with_stats: bool = False) -> RunSummary:
    """Score `source` shard by shard with `plan` on `backend`; write per-sample rows to
    `output` (JSON lines) as they finish (with `with_stats`, also the statistics rows that
    resampling needs). Returns the run's aggregate."""
    say = say or (lambda msg: print(f"dialeval: {msg}", file=sys.stderr))
    if resume and not output:
        raise DialevalError("--resume needs -o/--output (the run to continue)")
    if resume and source.path == STDIN:
        raise DialevalError("--resume needs a file input: standard input cannot be read again")
    source.spool_stdin(os.path.dirname(os.path.abspath(output)) if output else None)
    try:
        return _stream(plan, source, backend, output, resume, progress, say, with_stats)
    finally:
        source.cleanup()


def _stream(plan, source, backend, output, resume, progress, say, with_stats=False) -> RunSummary:
    size = plan.chunk_size

    # an input of one shard is read once, not once for the first pass and again for scoring
    shards = KeepSingleShard(lambda: chunked(source.samples(), size))

    partial = checkpoint = first_pass_file = None
    first_pass_record: dict[str, Any] | None = None
    state: dict[str, Any] | None = None
    fingerprint: dict[str, Any] = {}
    totals = Totals()
    skip = 0
    handle = None
    if output:
        partial, checkpoint = output + ".partial", output + ".resume.json"
        first_pass_file = output + FIRST_PASS_SUFFIX
        fingerprint = {"version": __version__, "checkpoint": CHECKPOINT_VERSION, "metrics": plan.names,
                       "signatures": plan.signatures, "recipe": repr(plan.recipe), "shard": size,
                       "with_stats": bool(with_stats),
                       "input": source.fingerprint() if source.path != STDIN else "stdin"}
        state = load_checkpoint(checkpoint, partial, fingerprint) if resume else None
        if resume and state is None:
            say("--resume: no checkpoint of this output; starting from the beginning")
        if state is not None:
            totals = Totals.from_dict(state["totals"])
            skip = int(state["shards"])
            handle = open(partial, "r+b")
            handle.truncate(int(state["bytes"]))
            handle.seek(int(state["bytes"]))
            say(f"--resume: {totals.n} samples ({skip} shards) already done; continuing")
        else:
            os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
            handle = open(partial, "wb")

    from ..progress import Progress, default_mode, ticking

    mode = default_mode(progress)
    bar = Progress(source.estimated_rows() if mode else None, mode, initial=totals.n)
    kill_after = os.environ.get(KILL_HOOK)
    kill_after = int(kill_after) if kill_after not in (None, "") else None

    def on_shard(index, samples, result, totals_now):
        if handle is not None:
            handle.write(shard_lines(plan, samples, result.sentence, result.stats if with_stats else None,
                                     first=index == 0).encode("utf-8"))
            handle.flush()
            if kill_after is not None and index == kill_after:
                import signal

                os.kill(os.getpid(), signal.SIGKILL)
            os.fsync(handle.fileno())
            save_checkpoint(checkpoint, {"fingerprint": fingerprint, "shards": index + 1, "bytes": handle.tell(),
                                         "totals": totals_now.to_dict(), "first_pass": first_pass_record})
        bar.set(totals_now.n)   # exact at each shard's end (ticks moved it within the shard)

    ok = False
    try:
        corpus = None
        if plan.needs_first_pass and state is not None:
            corpus = load_first_pass(first_pass_file, plan, state.get("first_pass"))
            if corpus is not None:
                first_pass_record = state["first_pass"]
                say("--resume: corpus-wide first pass restored from the checkpoint")
            elif state.get("first_pass") is not None:
                say("--resume: the checkpoint has no usable first pass; reading the input for it again")
        if corpus is None:
            corpus = gather_first_pass(plan, shards, backend)
            # an empty pass (an input of one shard, see gather_first_pass) is not saved: finding
            # it again costs a resumed run no more than reading that shard, which it does anyway
            if handle is not None and corpus:
                first_pass_record = save_first_pass(first_pass_file, plan, corpus)
                save_checkpoint(checkpoint, {"fingerprint": fingerprint, "shards": skip, "bytes": handle.tell(),
                                             "totals": totals.to_dict(), "first_pass": first_pass_record})
        with ticking(bar.advance if mode else None):   # nobody watching: shards are not sliced
            totals = run_plan(plan, shards, backend, corpus=corpus, totals=totals, skip=skip, on_shard=on_shard,
                              keep_stats=with_stats)
        if totals.n == 0:
            raise DialevalError("no samples to score")
        ok = True
    except DialevalError as exc:
        # bad input or options: resuming cannot help, leave nothing behind; but a service that
        # stopped answering (a served judge, `resumable`) keeps the finished shards for --resume
        if handle is not None and not getattr(exc, "resumable", False):
            handle.close()
            handle = None
            for path in (partial, checkpoint, first_pass_file):
                with contextlib.suppress(OSError):
                    os.unlink(path)
        raise
    finally:
        bar.close()
        if handle is not None:
            handle.close()
    if ok and output:
        try:
            os.replace(partial, output)
        except OSError as exc:   # checked up front by the CLI; a race or a library caller
            for path in (partial, checkpoint, first_pass_file):
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise DialevalError(f"cannot write {output}: {exc.strerror or exc}") from None
        for path in (checkpoint, first_pass_file):
            with contextlib.suppress(OSError):
                os.unlink(path)
    notes = []
    note = no_reference_note(plan, totals)
    if note:
        notes.append(note)
    notes.extend(unscored_notes(plan, totals))
    corpus_values, systems = totals.corpus_values(plan)
    return RunSummary(metrics=list(plan.names), corpus=corpus_values, systems=systems,
                      signatures=dict(plan.signatures), counts=dict(totals.counts), n=totals.n, notes=notes,
                      scored=totals.scored(plan))
