"""Rebuild the shipped default models and check that every byte is the same.

    python3 benchmarks/bench_models_rebuild.py --data-root DIR [--only amfm,mme] [--out benchmarks/out/models_results]

Builds each default with `dialeval models build` (one thread, fixed seeds) into a scratch folder
and compares each file's sha256 with the installed default (`dialeval models list` names where
they are; DIALEVAL_MODELS_DIR overrides), then prints one row per model: build time (wall and
CPU), files, bytes, and whether every byte matched. Not a test: a full rebuild takes many
minutes. The table is also written to OUT/rebuild.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)   # KenLM's lmplz runs as a child
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    from dialeval.cli.models_build import ORDER, RECIPES, build
    from dialeval.models.defaults import default_model_dir
    from dialeval.models.store import files_under, sha256_of

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-root", required=True)
    ap.add_argument("--only", help="comma-separated defaults (default: every installed one)")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "models_results"))
    args = ap.parse_args()
    names = [n for n in (args.only.split(",") if args.only else ORDER)]
    shipped = {n: default_model_dir(n) for n in names}
    missing = [n for n, d in shipped.items() if d is None]
    if missing:
        print(f"not installed, nothing to compare with: {', '.join(missing)}", file=sys.stderr)
        return 2
    scratch = os.path.join(args.out, "rebuild")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    for name in names:           # a default built over another (compose over mme) reads the shipped one
        for dep in RECIPES[name].after:
            if dep not in names and not os.path.exists(os.path.join(scratch, dep)):
                shutil.copytree(default_model_dir(dep), os.path.join(scratch, dep))
    rows = []
    for name in names:
        wall, cpu = time.perf_counter(), _cpu()
        build(args.data_root, scratch, [name])
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
        new, old = os.path.join(scratch, name), shipped[name]
        files = sorted(set(files_under(new)) | set(files_under(old)) | {"manifest.json"})
        differ = [f for f in files if not (os.path.isfile(os.path.join(new, f)) and os.path.isfile(os.path.join(old, f))
                                           and sha256_of(os.path.join(new, f)) == sha256_of(os.path.join(old, f)))]
        size = sum(os.path.getsize(os.path.join(new, f)) for f in files_under(new))
        rows.append((name, wall, cpu, len(files), size, "yes" if not differ else "NO: " + ", ".join(differ[:4])))
        print(f"{name}: {wall:.0f} s wall, {cpu:.0f} s CPU, {len(files)} files, {size / 1e6:.2f} MB, "
              f"same bytes: {rows[-1][-1]}", flush=True)
    table = ["| model | wall s | CPU s | files | MB | same bytes |", "|---|---:|---:|---:|---:|---|"]
    table += [f"| {n} | {w:.0f} | {c:.0f} | {k} | {s / 1e6:.2f} | {same} |" for n, w, c, k, s, same in rows]
    with open(os.path.join(args.out, "rebuild.md"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(table) + "\n")
    print("\n".join(table))
    return 0 if all(r[-1] == "yes" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
