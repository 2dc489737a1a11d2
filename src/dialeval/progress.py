"""What a long run tells its user while it works: a progress bar (or periodic lines), model
loading, and run-wide tallies that become one warning at the end.

- `Progress`: samples done of a total, with the elapsed time and an estimate of what is left.
  On a terminal it is a tqdm bar that appears only once the run has lasted `DELAY` seconds (a
  short run shows nothing); when stderr is not a terminal (a log file, CI), it prints a plain
  line every `EVERY` seconds after the first `LINES_DELAY`. It advances per chunk of work: after each
  metric on each system's part of a shard and on each slice of rows a slow metric scores
  (`tick`, called by `engine.shard.score_shard` when the shard is scored in this process), and
  is set exactly when a shard is folded in.
- `loading`: one `dialeval: loading ...` line around a model load (the CLI turns it on; the
  library stays quiet): at once on a terminal, after `SLOW_LOAD` seconds in a log; `waiting`
  the same around a step that is usually quick (building a metric), only once it is slow.
- `tally` / `collect_tallies`: counts that metrics would otherwise warn about once per shard
  and system (out-of-vocabulary words); the engine sums them over the run and warns once.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any, Callable, Iterator

from .errors import DialevalWarning

DELAY = 3.0         # seconds before the bar appears on a terminal (shorter runs stay silent)
LINES_DELAY = 10.0  # seconds before the first plain line in a log (a log wants fewer lines)
EVERY = 15.0        # seconds between plain progress lines when stderr is not a terminal

ANNOUNCE = False   # set by the CLI: print model loading
_TICK: Callable[[float], None] | None = None
_TALLY: dict[Any, list[int]] | None = None


SLOW_LOAD = 10.0   # seconds: without a terminal, a load is announced once it has taken this long


@contextlib.contextmanager
def loading(what: str) -> Iterator[None]:
    """Around a model load: `dialeval: loading WHAT ...` on stderr when the CLI asked for it, at
    once on a terminal (where a silent wait looks like a hang), and in a log only when the load
    has taken `SLOW_LOAD` seconds (so short runs keep their stderr to what matters)."""
    if not ANNOUNCE:
        yield
        return
    line = f"dialeval: loading {what} ..."
    if sys.stderr.isatty():
        print(line, file=sys.stderr, flush=True)
        yield
        return
    with _said_after(SLOW_LOAD, line):
        yield


def say(message: str) -> None:
    """One line of a command's own progress on stderr, flushed at once (stdout is for results):
    what every training command gives its estimator as `say` / `log`."""
    print(message, file=sys.stderr, flush=True)


class Heartbeat:
    """What a long loop says between its own reports: `say(line())` at most once every `every`
    seconds, the first one `every` seconds after it was made (a loop that reports often on its
    own says nothing more). Training loops print their checks a few times an epoch, which on a
    CPU can be half an hour apart; this keeps a log from falling silent that long."""

    def __init__(self, say: Callable[[str], None], every: float = EVERY):
        self.say, self.every = say, float(every)
        self._last = time.monotonic()

    def __call__(self, line: Callable[[], str]) -> None:
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            self.say(line())

    def reset(self) -> None:
        """Count from now (the loop just reported on its own)."""
        self._last = time.monotonic()


@contextlib.contextmanager
def _said_after(delay: float, line: str) -> Iterator[None]:
    """`line` on stderr if the block is still running after `delay` seconds."""
    import threading

    timer = threading.Timer(delay, lambda: print(line, file=sys.stderr, flush=True))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


@contextlib.contextmanager
def waiting(what: str, after: float | None = None) -> Iterator[None]:
    """Around a step that is usually quick but may not be (building a metric that prepares a
    packaged model on first use): `dialeval: WHAT ...` on stderr once it has taken `after`
    seconds (`SLOW_LOAD`), on a terminal as in a log, and only when the CLI asked. A quick
    step says nothing; a slow one never leaves the user without a line."""
    if not ANNOUNCE:
        yield
        return
    with _said_after(SLOW_LOAD if after is None else after, f"dialeval: {what} ..."):
        yield


def tick(samples: float) -> None:
    """Some samples' worth of work is done (a fraction of a shard)."""
    if _TICK is not None:
        _TICK(samples)


@contextlib.contextmanager
def ticking(callback: Callable[[float], None] | None) -> Iterator[None]:
    global _TICK
    before, _TICK = _TICK, callback
    try:
        yield
    finally:
        _TICK = before


def tally(key: Any, *counts: int) -> bool:
    """Add `counts` to the run's tally `key`; False when no run is collecting (then the caller
    reports by itself, as a metric computed on its own does). A tally is summed over the run's
    shards and systems, so what it reports must be a sum over samples whatever the shards: a
    count that a caller adds only for some shards (a denominator added only where the numerator
    is not 0) makes the reported number depend on --chunk-size."""
    if _TALLY is None:
        return False
    have = _TALLY.setdefault(key, [0] * len(counts))
    for i, c in enumerate(counts):
        have[i] += int(c)
    return True


@contextlib.contextmanager
def collect_tallies() -> Iterator[dict[Any, list[int]]]:
    """Tallies made inside the block (by this process) land in the dict yielded."""
    global _TALLY
    before, _TALLY = _TALLY, {}
    found = _TALLY
    try:
        yield found
    finally:
        _TALLY = before


def merge_tallies(into: dict[Any, list[int]], part: dict[Any, list[int]] | None) -> None:
    for key, counts in (part or {}).items():
        have = into.setdefault(key, [0] * len(counts))
        for i, c in enumerate(counts):
            have[i] += c


class TallyWarning(DialevalWarning):
    """A run's tally of its responses (out-of-vocabulary tokens, rows left unscored, another
    script): a category of its own so that a caller that scores responses it made on purpose
    unreadable (the probe's variants) can set these aside, as they are not about the user's data."""


class ForeignScriptWarning(TallyWarning):
    """Responses written mostly in a script the English-only metrics cannot read, with its
    numbers, so that the probe can say it again of the user's responses alone."""

    def __init__(self, count: int, script: str, metrics):
        self.count, self.script, self.metrics = int(count), script, tuple(metrics)
        super().__init__(f"{self.count:,} response(s) written mostly in {script} script, which "
                         f"{', '.join(self.metrics)} cannot read (their models know only English): "
                         "their scores for those rows mean little")


class ScriptFloorWarning(TallyWarning):
    """Responses in another script than the Latin text they answer, which the metrics with the
    script rule (metrics/base.py) scored at their floor."""

    def __init__(self, count: int, script: str, metrics):
        self.count, self.script, self.metrics = int(count), script, tuple(metrics)
        super().__init__(f"{self.count:,} response(s) written mostly in {script} script answer text in "
                         f"Latin letters: {', '.join(self.metrics)} score them at their floor, as a "
                         "blank reply")


def report_tallies(tallies: dict[Any, list[int]]) -> None:
    """One warning per kind of tally of a whole run."""
    import warnings

    from .errors import DialevalWarning

    for key, counts in sorted(tallies.items(), key=lambda kv: repr(kv[0])):
        if key[0] == "oov":
            # the count of unknown tokens, not a rate: the metrics tally the tokens of an
            # evaluated set only when it has an unknown one, so the total would be the tokens
            # of the shards that had one and change with --chunk-size
            unknown = counts[0]
            if unknown:
                warnings.warn(f"word vectors: {unknown:,} token{'s' if unknown != 1 else ''} out of "
                              f"vocabulary (case {key[1]})", TallyWarning, stacklevel=3)
        elif key[0] == "script" and counts[0]:
            warnings.warn(ForeignScriptWarning(counts[0], key[1], key[2]), stacklevel=3)
        elif key[0] == "script-floor" and counts[0]:
            warnings.warn(ScriptFloorWarning(counts[0], key[1], key[2]), stacklevel=3)
        elif key[0] == "judge-spread":     # a served judge (metrics/judge/served.py)
            items, sd_micro, unread = counts
            if key[2] > 1 and (items or unread):
                spread = (f"mean within-item SD of the rating {sd_micro / 1e6 / items:.3f} over {items:,} "
                          "item(s)" if items else "no item scored")
                warnings.warn(f"{key[1]}: G-Eval estimate from {key[2]} sampled answers per item: {spread}"
                              + (f"; {unread:,} answer(s) named no rating" if unread else ""),
                              DialevalWarning, stacklevel=3)
            elif unread:
                warnings.warn(f"{key[1]}: {unread:,} item(s) left unscored (NaN): no rating among the "
                              "server's top tokens", DialevalWarning, stacklevel=3)
        elif key[0] == "unscored" and counts[0]:
            warnings.warn(f"{key[1]}: {counts[0]:,} sample(s) left unscored (NaN): every reference "
                          "has no word in the vectors' vocabulary", TallyWarning, stacklevel=3)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Samples done of `total` (None: unknown) on stderr: a bar on a terminal, plain lines
    otherwise (`mode` "bar", "lines" or None for nothing)."""

    def __init__(self, total: int | None, mode: str | None, initial: int = 0, unit: str = "sample"):
        self.total = total
        self.mode = mode
        self.unit = unit
        self.done = float(initial)
        self.initial = initial
        self.started = time.monotonic()
        self.last_line = self.started + LINES_DELAY - EVERY
        self.rate_from: tuple[float, float] | None = None   # (time, done) of the first advance
        self.bar = None
        self._beat = None
        import threading

        self._lock = threading.Lock()
        if mode == "lines":   # a line every EVERY seconds even while one long step has no tick
            self._stop = threading.Event()
            self._beat = threading.Thread(target=self._heartbeat, daemon=True)
            self._beat.start()
        if mode == "bar":
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=initial, unit=unit, file=sys.stderr, leave=False,
                            delay=DELAY, dynamic_ncols=True, smoothing=0.1)

    def _heartbeat(self) -> None:
        while not self._stop.wait(min(1.0, EVERY / 3)):
            with self._lock:
                self._maybe_line()

    def _maybe_line(self) -> None:
        if self.total is None or self.done < self.total:
            now = time.monotonic()   # (no line for the finished state: the result follows)
            if now - self.last_line >= EVERY:
                self.last_line = now
                print(self.line(now), file=sys.stderr, flush=True)

    def advance(self, samples: float) -> None:
        self.set(self.done + samples)

    def set(self, done: float) -> None:
        with self._lock:
            if self.rate_from is None:   # the rate counts from the first work done, not from the
                self.rate_from = (time.monotonic(), done)   # start (a first pass or model loading)
            step = done - self.done
            self.done = done
            if self.bar is not None:
                if step:
                    self.bar.update(step)
            elif self.mode == "lines":
                self._maybe_line()

    def line(self, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        elapsed = now - self.started
        done = int(self.done)
        text = f"dialeval: {done:,}"
        if self.total:
            text += f" of {self.total:,} {self.unit}s ({min(self.done / self.total, 1):.0%})"
        else:
            text += f" {self.unit}s"
        text += f", {_clock(elapsed)} elapsed"
        if self.rate_from is not None and self.total and self.done < self.total:
            since, base = self.rate_from
            if self.done > base and now > since:
                text += f", about {_clock((now - since) / (self.done - base) * (self.total - self.done))} left"
        return text

    def close(self) -> None:
        if self._beat is not None:
            self._stop.set()
            self._beat.join()
            self._beat = None
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def default_mode(progress: bool | None) -> str | None:
    """None (automatic): a bar on a terminal, plain lines otherwise; False: nothing; True: a bar
    on a terminal, else lines."""
    if progress is False:
        return None
    return "bar" if sys.stderr.isatty() else "lines"
