"""What a default says about itself: `card.json` in its folder (printed by `dialeval models
list`) and its page `docs/models/<name>.md` (`tools/model_cards.py`)."""

from __future__ import annotations

import json
import os

from ..models.store import MANIFEST, write_manifest
from .table import DATA_ROOT, MODELS, RECIPES, Recipe, command_text


def write_card(folder: str, recipe: Recipe) -> None:
    """`card.json`: what `dialeval models list` prints (listed in the manifest like any file)."""
    card = {"name": recipe.name, "metrics": list(recipe.metrics), "trained_on": recipe.trained_on,
            "licence": recipe.licence, "command": command_text(recipe.name),
            "headline": headline(recipe.name, folder)}
    if recipe.threads != 1:         # the count a rebuild needs for the same bytes (one: not written)
        card["threads"] = recipe.threads
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
        copy = t.get("copy_term") or {}
        copied = (f"; copy term: a reply repeating the last turn loses {copy['weight']:g} points above a "
                  f"word-F1 knee of {copy['knee']:g} (validation Spearman with one copy per row at the bottom "
                  f"{copy['val_spearman_with_copies']:.3f})" if copy else "")
        return (f"validation Spearman {t['val_spearman']:.3f} (chosen by the search: PCA "
                f"{p.get('pca_dims') or 'all'}, lr {p.get('lr')}, best epoch {t.get('best_epoch')}); "
                f"{rows.get('train')} training rows, {rows.get('validation')} validation rows (own contexts)"
                + copied)
    if name in ("mme", "mme_cross"):
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
    if name in ("compose", "compose_ref", "compose_judge"):
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
           f"(`dialeval models list`; the signature then carries `model:<kind>@<hash>`, the model's kind and the hash of its manifest).", "",
           *([f"Opt-in: it needs {recipe.optional}, beyond the README's install, and `dialeval models build` "
              f"builds it only when named (`--only {name}`).", ""] if recipe.optional else []),
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
            "(`python3 benchmarks/bench_models_rebuild.py --data-root DATA --only " + name + "`)"
            + (f"; the build pins OpenBLAS's {recipe.blas} kernels (`OPENBLAS_CORETYPE`), the ones this "
               "folder was built with, whose last bits differ from the AVX-512 kernels'" if recipe.blas else "")
            + ".", ""]
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
