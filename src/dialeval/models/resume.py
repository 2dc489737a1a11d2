"""Training that survives a stop: a checkpoint every few minutes, and `--resume` to go on from it.

A session here ends after three hours, a preemptible machine whenever it likes; a training run
longer than that used to be lost. Every `dialeval train` command (and `models build`) therefore
writes its progress to `OUTPUT.checkpoint/` beside the folder it will write, and the same command
with `--resume` continues from it. The promise is exactness: a run stopped and resumed, any number
of times, writes the same bytes as one that ran straight through (one thread; the recorded
wall-clock and CPU seconds aside, as for every rebuild: `recipes.normalise`).

What makes that hold is saving everything a step depends on, at a step boundary:
- the weights and buffers being trained, the optimiser's and the scheduler's state;
- every random state a step can draw from: Python's, NumPy's and torch's global generators
  (dropout, shuffles a caller does with them);
- where the loop is: the pass or epoch, the batches of that pass and how many are done, and the
  loop's own record (losses, checks, the best state kept so far).
The training loops (`models.training.train_causal_lm`, `backbones.tuning.tune_top_layers`) own
that list; a caller's randomness that lives outside them (a seeded `random.Random` that shuffles
each pass) is reproduced by calling the caller's pass or epoch function again for every pass
already run, which advances it exactly as the first run did, and the global generators are then
set back to the saved ones.

A command is made of stages (MME's sub-metrics, the recipes of `models build`) and each stage of
loops; a stage that finished is recorded in the ledger and skipped on resume (its output is
already written), and the loops of a stage are numbered in the order they start, which a
deterministic run repeats. The identity of the run (the command, every argument, dialeval's
version) is written first; a checkpoint of another command, other arguments or another version
is refused in one line rather than silently continued.

The loop files are torch.save pickles: they hold torch and NumPy objects that no safe format
takes whole, and they are the user's own files from the user's own run, read only when the
identity beside them matches. Shipped artifacts are never pickled.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import time
from typing import Any, Callable, Mapping

from ..errors import DialevalError

SUFFIX = ".checkpoint"
IDENTITY = "identity.json"
LEDGER = "ledger.json"
DEFAULT_MINUTES = 5.0


def checkpoint_folder(output: str) -> str:
    return os.path.normpath(os.path.abspath(output)) + SUFFIX


def _write_json(path: str, value: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=1, sort_keys=True)
    os.replace(tmp, path)


def run_identity(command: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """What a checkpoint must match to be continued: the command, its arguments (all but the
    ones that only say how to checkpoint) and dialeval's version."""
    from ..version import __version__

    args = {k: v for k, v in sorted(arguments.items())
            if not k.startswith("_") and k not in ("resume", "checkpoint_minutes", "func", "quiet")}
    text = json.dumps(args, sort_keys=True, default=str)
    return {"command": command, "version": __version__, "arguments": json.loads(text),
            "hash": hashlib.sha256(f"{command}\n{__version__}\n{text}".encode()).hexdigest()[:16]}


class TrainingCheckpoint:
    """The checkpoint folder of one run, or a named part of it (`scope`)."""

    def __init__(self, folder: str, identity: Mapping[str, Any], *, every_seconds: float = DEFAULT_MINUTES * 60,
                 resume: bool = False, say: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, _prefix: str = "", _root: "TrainingCheckpoint | None" = None):
        self.folder = folder
        self.identity = dict(identity)
        self.every_seconds = float(every_seconds)
        self.resume = resume
        self.say = say or (lambda m: None)
        self.clock = clock
        self.prefix = _prefix
        self.root = _root or self
        if _root is None:
            self.last_save = clock()
            self.loops_started: dict[str, int] = {}
            self.ledger: dict[str, Any] = {"stages": [], "loops": {}}
            self.saves = 0

    # -- the run ---------------------------------------------------------------------------------
    def open(self) -> "TrainingCheckpoint":
        """Check the folder against this run: continue it (with `resume`), or start a new one.
        A folder left by an unfinished run is never overwritten without `--resume`."""
        path = os.path.join(self.folder, IDENTITY)
        exists = os.path.exists(path)
        if exists and not self.resume:
            raise DialevalError(f"{self.folder} holds the checkpoint of an unfinished run: add --resume to continue "
                                "it, or delete the folder to start again")
        if self.resume and not exists:
            raise DialevalError(f"--resume: no checkpoint in {self.folder} (nothing to continue; run without --resume)")
        if exists:
            try:
                with open(path, encoding="utf-8") as handle:
                    found = json.load(handle)
                with open(os.path.join(self.folder, LEDGER), encoding="utf-8") as handle:
                    self.ledger = json.load(handle)
            except (OSError, ValueError) as exc:
                raise DialevalError(f"{self.folder}: unreadable checkpoint ({exc}); delete the folder to start "
                                    "again") from None
            if found.get("hash") != self.identity["hash"]:
                what = ("another command" if found.get("command") != self.identity["command"] else
                        "another dialeval version" if found.get("version") != self.identity["version"] else
                        "other arguments")
                raise DialevalError(f"{self.folder}: a checkpoint of {what} ({found.get('command')}, dialeval "
                                    f"{found.get('version')}); it is not continued: run the same command as it, or "
                                    "delete the folder to start again")
            done = len(self.ledger.get("stages", []))
            self.say(f"resuming from {self.folder} ({done} stage(s) done, "
                     f"{len(self.ledger.get('loops', {}))} loop(s) begun)")
        else:
            os.makedirs(self.folder, exist_ok=True)
            _write_json(os.path.join(self.folder, LEDGER), self.ledger)
            _write_json(path, self.identity)
        return self

    def has_progress(self) -> bool:
        """Whether anything was saved that a resumed run would use."""
        ledger = self.root.ledger
        return bool(self.root.saves or ledger.get("stages") or ledger.get("loops"))

    def finish(self) -> None:
        """The run wrote its output: the checkpoint has served."""
        shutil.rmtree(self.root.folder, ignore_errors=True)

    # -- stages ----------------------------------------------------------------------------------
    def scope(self, name: str) -> "TrainingCheckpoint":
        """A named part of the run (a sub-metric, a recipe): its stages and loops are its own."""
        return TrainingCheckpoint(self.folder, self.identity, every_seconds=self.every_seconds, resume=self.resume,
                                  say=self.say, clock=self.clock, _prefix=f"{self.prefix}{name}/", _root=self.root)

    def stage_done(self, name: str) -> bool:
        return f"{self.prefix}{name}" in self.root.ledger["stages"]

    def mark_stage(self, name: str) -> None:
        """`name` finished and its output is written: a resumed run skips it."""
        key = f"{self.prefix}{name}"
        if key not in self.root.ledger["stages"]:
            self.root.ledger["stages"].append(key)
        _write_json(os.path.join(self.root.folder, LEDGER), self.root.ledger)

    # -- loops -----------------------------------------------------------------------------------
    def loop(self) -> "LoopCheckpoint":
        """The next training loop of this scope (numbered in the order the loops start)."""
        counter = self.root.loops_started
        n = counter.get(self.prefix, 0)
        counter[self.prefix] = n + 1
        return LoopCheckpoint(self.root, f"{self.prefix}loop{n}")


class LoopCheckpoint:
    """One training loop's saved state: `restore()` at its start, `maybe_save(state)` after
    each step (it writes when the interval has passed), `save(state, done=True)` at its end."""

    def __init__(self, run: TrainingCheckpoint, key: str):
        self.run = run
        self.key = key
        self.path = os.path.join(run.folder, key.replace("/", "__") + ".pt")

    def restore(self) -> dict[str, Any] | None:
        if not self.run.resume or self.key not in self.run.ledger.get("loops", {}):
            return None
        import torch

        try:
            state = torch.load(self.path, map_location="cpu", weights_only=False)
        except (OSError, RuntimeError, EOFError, ValueError) as exc:
            raise DialevalError(f"{self.path}: unreadable loop checkpoint ({exc}); delete {self.run.folder} to "
                                "start again") from None
        self.run.say(f"resuming {self.key} at step {state.get('steps')}" + (" (finished)" if state.get("done") else ""))
        return state

    def due(self) -> bool:
        return self.run.clock() - self.run.last_save >= self.run.every_seconds

    def maybe_save(self, state: Callable[[], dict[str, Any]]) -> None:
        if self.due():
            self.save(state())

    def save(self, state: dict[str, Any], done: bool = False) -> None:
        import torch

        state = {**state, "done": done, "rng": rng_state()}
        tmp = self.path + ".tmp"
        torch.save(state, tmp)
        os.replace(tmp, self.path)
        self.run.ledger.setdefault("loops", {})[self.key] = {"steps": state.get("steps"), "done": done}
        _write_json(os.path.join(self.run.folder, LEDGER), self.run.ledger)
        self.run.last_save = self.run.clock()
        self.run.saves += 1
        self.after_save(state)

    def after_save(self, state: dict[str, Any]) -> None:
        """Nothing here; a test's subclass stops the run at this point, as a kill would."""


# -- random states ----------------------------------------------------------------------------------
def rng_state() -> dict[str, Any]:
    import numpy as np
    import torch

    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    import numpy as np
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
