"""The behavioural probes for every shipped metric on rated sets with contexts and references.

For each set: the items whose original response humans rated in the top 40% of `overall`
(responses equal to a reference dropped), a seeded sample of `--limit` of them, every probe
family, every registered metric with its shipped default model. Writes OUT/NAME.json (what
`dialeval probe -o` writes) and one Markdown page with a share table per set and, per metric,
the families it fails on every set (share below `--fail-below`).

    python3 benchmarks/probe_defaults.py --data-root $DATA [--limit 50] [--out benchmarks/out/probes]
    python3 benchmarks/probe_defaults.py --render benchmarks/out/probes   # the page from saved JSON

The same as `dialeval probe --dataset usr-tc --data-root $DATA/usr --metrics all --top overall:0.4
--limit 50 --seed 0 -o usr-tc.json`, once per set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

SETS = ("usr-tc", "gupta")


def run(data_root: str, out: str, limit: int, seed: int) -> None:
    from dialeval.data.datasets import get_spec
    from dialeval.meta.evaluate import load_rated
    from dialeval.meta.probes import probe

    os.makedirs(out, exist_ok=True)
    for name in SETS:
        dataset = load_rated(name, os.path.join(data_root, get_spec(name).folder))
        if dataset.reference_systems:
            dataset = dataset.without_systems(dataset.reference_systems)
        start, cpu = time.time(), time.process_time()
        result = probe(dataset.samples, "all", top=("overall", 0.4), limit=limit, seed=seed)
        data = result.to_dict()
        data["input"] = f"{name} (public rated set)"
        data["timing"] = {"wall_s": round(time.time() - start, 1), "cpu_s": round(time.process_time() - cpu, 1)}
        with open(os.path.join(out, f"{name}.json"), "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
        print(f"{name}: {data['timing']}", file=sys.stderr)


def cell(r: dict) -> str:
    if r.get("share") is None:
        return "n/a"
    return f"{r['share']:.2f}"


def render(folder: str, fail_below: float) -> str:
    sets = {}
    for name in SETS:
        path = os.path.join(folder, f"{name}.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                sets[name] = json.load(handle)
    if not sets:
        raise SystemExit(f"no probe JSON in {folder}")
    first = next(iter(sets.values()))
    families, metrics = first["families"], first["metrics"]
    lines = []
    for name, data in sets.items():
        items = data["items"]
        lines.append(f"### {name}: {items['probed']} items (top 40% by overall, "
                     f"{items['reference_copies_dropped']} reference copies dropped, seed {data['settings']['seed']})")
        lines.append("")
        lines.append("| metric | " + " | ".join(families) + " |")
        lines.append("|---|" + "---:|" * len(families))
        for m in metrics:
            lines.append(f"| `{m}` | " + " | ".join(cell(data["results"][m][f]) for f in families) + " |")
        lines.append("")
    lines.append(f"### Families each metric fails on every set (share below {fail_below})")
    lines.append("")
    lines.append("| metric | fails |")
    lines.append("|---|---|")
    for m in metrics:
        failed = []
        for f in families:
            shares = [d["results"][m][f].get("share") for d in sets.values()]
            if all(s is not None and s < fail_below for s in shares):
                failed.append(f"{f} ({' / '.join(f'{s:.2f}' for s in shares)})")
        lines.append(f"| `{m}` | {', '.join(failed) or 'none'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", help="the public data sets' root folder")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "probes"))
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fail-below", type=float, default=0.9)
    ap.add_argument("--render", metavar="DIR", help="only write the page from the JSON in DIR")
    args = ap.parse_args()
    if args.render:
        print(render(args.render, args.fail_below))
        return
    if not args.data_root:
        ap.error("--data-root is required (or --render DIR)")
    run(args.data_root, args.out, args.limit, args.seed)
    print(render(args.out, args.fail_below))


if __name__ == "__main__":
    main()
