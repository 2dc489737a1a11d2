"""`dialeval models list|verify|build`: the default models that ship in the `dialeval_models`
package (see `dialeval.models.defaults`; their recipes: `dialeval.recipes`). Only argparse and
printing here."""

from __future__ import annotations

import json
import os
import sys

from dialeval.cli.models_build import cmd_build
from dialeval.errors import DialevalError

PACKAGE_HINT = ("no default models installed: pip install ./packages/dialeval-models "
                "(from a dialeval checkout; install.sh does it)")


def _size(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(b, f)) for b, _, files in os.walk(folder) for f in files)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _card(folder: str) -> dict:
    try:
        with open(os.path.join(folder, "card.json"), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def cmd_list(args) -> int:
    from dialeval.recipes import ORDER, RECIPES, command_text
    from dialeval.models.defaults import default_model_dir, model_digest, models_root

    root = models_root()
    rows = []
    for name in ORDER:
        folder = default_model_dir(name)
        card = _card(folder) if folder else {}
        recipe = RECIPES[name]
        rows.append({"name": name, "installed": folder is not None, "metrics": list(recipe.metrics),
                     "trained_on": card.get("trained_on", recipe.trained_on),
                     "licence": card.get("licence", recipe.licence),
                     "bytes": _size(folder) if folder else None,
                     "sha256": model_digest(folder) if folder else None,
                     "headline": card.get("headline", ""),
                     "command": card.get("command", command_text(name)),
                     "optional": recipe.optional})
    if args.json:
        print(json.dumps({"root": root, "models": rows}, ensure_ascii=False))
        return 0
    print(f"default models: {root or PACKAGE_HINT}")
    for r in rows:
        state = f"{_mb(r['bytes'])}, sha256 {r['sha256'][:12]}" if r["installed"] else "not installed"
        print(f"\n{r['name']} ({state}); metrics: {', '.join(r['metrics'])}")
        print(f"  trained on: {r['trained_on']}")
        print(f"  licence of the training data: {r['licence']}")
        if r["headline"]:
            print(f"  numbers: {r['headline']}")
        print(f"  build: {r['command']}")
        if r["optional"]:
            print(f"  opt-in: needs {r['optional']}; `models build` builds it only with --only {r['name']}")
    total = sum(r["bytes"] or 0 for r in rows)
    print(f"\ntotal {_mb(total)}; model cards: docs/models/NAME.md")
    return 0


def cmd_verify(args) -> int:
    from dialeval.models.defaults import installed_models, models_root
    from dialeval.models.store import sha256_of

    root = models_root()
    if root is None:
        raise DialevalError(PACKAGE_HINT)
    names = installed_models()
    if not names:
        raise DialevalError(f"{root}: holds no model folder")
    bad = 0
    for name in names:
        folder = os.path.join(root, name)
        problems, count, size = [], 0, 0
        # every manifest in the folder (a model may hold sub-models, each with its own)
        for base, dirs, files in os.walk(folder):
            dirs.sort()
            if "manifest.json" not in files:
                continue
            with open(os.path.join(base, "manifest.json"), encoding="utf-8") as handle:
                listed = json.load(handle).get("files", {})
            for rel, entry in sorted(listed.items()):
                path = os.path.join(base, rel)
                if not os.path.isfile(path):
                    problems.append(f"{os.path.relpath(path, root)} missing")
                elif sha256_of(path) != entry.get("sha256"):
                    problems.append(f"{os.path.relpath(path, root)} sha256 differs")
                elif base == folder:
                    count += 1
                    size += os.path.getsize(path)
        if problems:
            bad += 1
            print(f"{name}: FAILED: {'; '.join(problems)}")
        else:
            print(f"{name}: ok ({count} files, {_mb(size)})")
    if bad:
        print(f"dialeval: error: {bad} model(s) changed since they were built; reinstall the models package "
              "or rebuild them (`dialeval models build`)", file=sys.stderr)
        return 2
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("models", help="the shipped default models: list, verify, build")
    msub = p.add_subparsers(dest="models_command", required=True)
    q = msub.add_parser("list", help="each default: what it was trained on, licence, size, numbers")
    q.add_argument("--json", action="store_true", help="one JSON object")
    q.set_defaults(func=cmd_list)
    q = msub.add_parser("verify", help="check the sha256 of every file of every default (exit 2 on a mismatch)")
    q.set_defaults(func=cmd_verify)
    q = msub.add_parser("build", help="retrain the defaults from the public data sets (same bytes on a rebuild)")
    q.add_argument("--data-root", required=True,
                   help="folder holding the public data sets under their names (`dialeval datasets --sources`)")
    q.add_argument("--only", help="comma-separated defaults to build (default: all)")
    q.add_argument("-o", "--output", help="folder to write the models to (default: the checkout's "
                                          "packages/dialeval-models/src/dialeval_models)")
    from .train import add_resume_arguments

    add_resume_arguments(q)
    q.set_defaults(func=cmd_build)
