"""Running the recipes: each default trained in a fresh interpreter into a staging folder,
given its card, normalised, then moved into place."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Callable

from ..errors import DialevalError
from .cards import write_card
from .normalise import normalise
from .table import ORDER, RECIPES, command_text, stage_folder, stages


def check_data_root(root: str, names: list[str]) -> None:
    missing = sorted({f for n in names for f in RECIPES[n].needs if not os.path.isdir(os.path.join(root, f))})
    if missing:
        raise DialevalError(f"--data-root {root}: no folder {', '.join(missing)} (`dialeval datasets --sources` "
                            "names each data set's public source and the folder it expects)")


# Each recipe runs in a fresh interpreter: what an earlier recipe left in the process (random
# generators' state, torch settings, caches) must not reach the next one, and string hashing
# (set and dict order of strings) is fixed.
FIXED_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
             "TOKENIZERS_PARALLELISM": "false", "PYTHONHASHSEED": "0"}


def recipe_env(threads: int = 1, blas: str | None = None) -> dict[str, str]:
    """The environment a recipe's process runs in: FIXED_ENV, its thread count, and its OpenBLAS
    kernels when it names them (else none inherited: the machine's own choice)."""
    count = str(int(threads))
    env = {**os.environ, **FIXED_ENV, "OMP_NUM_THREADS": count, "MKL_NUM_THREADS": count, "OPENBLAS_NUM_THREADS": count}
    env.pop("OPENBLAS_CORETYPE", None)
    if blas:
        env["OPENBLAS_CORETYPE"] = blas
    return env


def _run(argv: list[str], threads: int = 1, blas: str | None = None) -> int:
    import subprocess

    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = recipe_env(threads, blas)
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    # the command's own output goes to stderr, like the build's progress lines
    try:
        out = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):   # a captured stream (tests): let it print
        out = None
    return subprocess.run([sys.executable, "-m", "dialeval.cli", *argv], env=env, stdout=out).returncode


def build(data_root: str, out_root: str, only: list[str] | None = None,
          say: Callable[[str], None] = lambda m: None, checkpoint=None,
          checkpoint_minutes: float | None = None) -> list[str]:
    """Train each default (in `ORDER`) into `out_root/<name>`; returns the names built. The
    defaults a recipe builds over (`after`) are read from `out_root`.

    With `checkpoint` (models.resume, the build's own), a default moved into place is recorded
    as done and a resumed build skips it; the recipe that was running continues from its own
    checkpoint (`--resume` on its command, beside its staging folder)."""
    from dialeval.models.resume import checkpoint_folder
    from dialeval.models import defaults

    # a default that needs an optional install is built when named, never by default
    names = [n for n in ORDER if (n in only if only is not None else not RECIPES[n].optional)]
    unknown = sorted(set(only or ()) - set(RECIPES))
    if unknown:
        raise DialevalError(f"--only {unknown[0]}: no such default; choose from {', '.join(ORDER)}")
    data_root, out_root = os.path.abspath(data_root), os.path.abspath(out_root)
    check_data_root(data_root, names)
    os.makedirs(out_root, exist_ok=True)
    previous = os.environ.get(defaults.ENV)
    os.environ[defaults.ENV] = out_root            # a recipe over another default reads the new one
    try:
        for name in names:
            recipe = RECIPES[name]
            for dep in recipe.after:
                if defaults.default_model_dir(dep) is None:
                    raise DialevalError(f"{name} is built over the default {dep!r}, which is not in {out_root}; "
                                        f"build it first (--only {dep})")
            target = os.path.join(out_root, name)
            if checkpoint is not None and checkpoint.stage_done(name) and os.path.isdir(target):
                say(f"models build: {name}: built before the stop, kept")
                continue
            staging = target + ".tmp-build"
            commands = stages(recipe, data_root, staging)
            folders = [stage_folder(staging, k) for k in range(1, len(commands))] + [staging]
            resuming = checkpoint is not None and checkpoint.resume
            say(f"models build: {name}: {command_text(name)}")
            for argv, folder in zip(commands, folders):
                if resuming and folder != staging and os.path.isdir(folder) \
                        and not os.path.isdir(checkpoint_folder(folder)):
                    continue                        # an earlier command of the recipe, finished
                if resuming and os.path.isdir(checkpoint_folder(folder)):
                    argv.append("--resume")
                else:
                    shutil.rmtree(folder, ignore_errors=True)
                    shutil.rmtree(checkpoint_folder(folder), ignore_errors=True)
                if checkpoint_minutes:
                    argv += ["--checkpoint-minutes", str(checkpoint_minutes)]
                status = _run(argv, recipe.threads, recipe.blas)
                if status == 130:
                    raise KeyboardInterrupt
                if status != 0:
                    for f in folders:
                        shutil.rmtree(f, ignore_errors=True)
                        shutil.rmtree(checkpoint_folder(f), ignore_errors=True)
                    raise DialevalError(f"models build: {name} failed (exit status {status})")
            for folder in folders[:-1]:
                shutil.rmtree(folder, ignore_errors=True)
            write_card(staging, recipe)
            normalise(staging, data_root, out_root, final=name)
            shutil.rmtree(target, ignore_errors=True)
            os.replace(staging, target)
            if checkpoint is not None:
                checkpoint.mark_stage(name)
            say(f"models build: {name} written to {target}")
    finally:
        if previous is None:
            os.environ.pop(defaults.ENV, None)
        else:
            os.environ[defaults.ENV] = previous
    return names
