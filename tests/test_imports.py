"""The import rules of issue 24, checked mechanically from the source (no module is imported):
no import cycle among dialeval's modules, and no metric family imports another family.

Every `import` statement counts, including the ones inside functions (a lazy import is still a
dependency: it fails or loops the same way, only later). A family is a subpackage of
dialeval/metrics (overlap, embedding, lm, amfm, mme, learned, diversity); the shared modules
beside them (metrics/base.py, rowwise.py, registry.py, compose.py) and dialeval.backbones are
what families share instead of importing each other.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from conftest import REPO

SRC = REPO / "src"
METRICS = "dialeval.metrics"

# No import cycle is allowed (issue 24): the last one, cli.meta <-> cli.report, went when the
# shared `--table-format` flag moved to cli/options.py.
ALLOWED_CYCLES: list[set[str]] = []


@lru_cache(maxsize=1)
def modules() -> dict[str, tuple[Path | None, bool]]:
    """Module name -> (source path or None for a compiled one, is a package)."""
    found: dict[str, tuple[Path | None, bool]] = {}
    for path in sorted((SRC / "dialeval").rglob("*")):
        if path.suffix not in (".py", ".pyx") or "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts = parts[:-1]
        name = ".".join(parts)
        if path.suffix == ".pyx":
            found.setdefault(name, (None, False))   # Cython: a module, its imports are not Python's
        else:
            found[name] = (path, package)
    return found


@lru_cache(maxsize=1)
def import_graph() -> dict[str, set[str]]:
    mods = modules()
    graph: dict[str, set[str]] = {}
    for name, (path, package) in mods.items():
        edges: set[str] = set()
        if path is not None:
            here = name if package else name.rpartition(".")[0]
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    if node.level:
                        base = here.split(".")[:len(here.split(".")) - (node.level - 1)]
                        module = ".".join(base + ([node.module] if node.module else []))
                    else:
                        module = node.module or ""
                    # `from pkg import sub` depends on the submodule; `from mod import name` on mod
                    targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names]
                else:
                    continue
                for target in targets:
                    while target and target not in mods:      # `import a.b.c` of a name inside a.b
                        target = target.rpartition(".")[0]
                    if target.startswith("dialeval") and target != name:
                        edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


@lru_cache(maxsize=1)
def families() -> frozenset[str]:
    return frozenset(name.split(".")[2] for name, (_, package) in modules().items()
                     if package and name.count(".") == 2 and name.startswith(METRICS + "."))


def family(module: str) -> str | None:
    parts = module.split(".")
    if module.startswith(METRICS + ".") and len(parts) >= 3 and parts[2] in families():
        return parts[2]
    return None


def test_the_checker_sees_what_it_should():
    """The graph is real: known edges are present, and a planted cycle is found."""
    graph = import_graph()
    assert "dialeval.backbones.tuning" in graph["dialeval.metrics.mme.finetune"]
    assert "dialeval.metrics.overlap.meteor.kernel" in graph["dialeval.metrics.overlap.meteor.metric"]
    assert family("dialeval.metrics.mme.encoder") == "mme" and family("dialeval.metrics.rowwise") is None
    planted = {k: set(v) for k, v in graph.items()}
    planted["dialeval.backbones.batching"].add("dialeval.metrics.mme.finetune")
    assert any({"dialeval.backbones.batching", "dialeval.metrics.mme.finetune"} <= c for c in cycles(planted))


def test_no_import_cycles():
    found = [sorted(c) for c in cycles(import_graph()) if c not in ALLOWED_CYCLES]
    assert not found, f"import cycles: {found}"


def test_no_metric_family_imports_another():
    crossing = sorted(f"{m} -> {t}" for m, targets in import_graph().items() for t in targets
                      if family(m) and family(t) and family(m) != family(t))
    assert not crossing, "a metric family imports another family:\n" + "\n".join(crossing)


def test_backbones_import_no_metric():
    """The shared layer sits below the families: it may not import any of them."""
    up = sorted(f"{m} -> {t}" for m, targets in import_graph().items() if m.startswith("dialeval.backbones")
                for t in targets if t.startswith(METRICS))
    assert not up, up


# The layers, lowest first; a module may import its own layer and the ones below it, never one
# above. `dialeval` (the package's front door) sits on top with the CLI.
LAYERS = [
    ("base", ("dialeval.errors", "dialeval.version", "dialeval.options", "dialeval.optional", "dialeval.cache",
              "dialeval.progress", "dialeval.plugins", "dialeval.stats")),
    ("data", ("dialeval.data",)),
    ("text", ("dialeval.text",)),
    ("models", ("dialeval.models",)),
    ("backbones", ("dialeval.backbones",)),
    ("metrics", ("dialeval.metrics", "dialeval.augment")),
    ("engine", ("dialeval.engine",)),
    ("scoring", ("dialeval.scoring",)),
    ("meta", ("dialeval.meta",)),
    ("report", ("dialeval.report",)),
    ("recipes", ("dialeval.recipes",)),
    ("cli", ("dialeval.cli", "dialeval")),
]

# No upward import is allowed (issue 24, "Layers point down only"): the composition's estimator
# moved to metrics/compose/model.py (meta/ keeps only its leave-one-set-out evaluation), and the
# default-model recipes, which run every trainer, to their own layer below the CLI (recipes/).
ALLOWED_UPWARD: set[tuple[str, str]] = set()


def layer_of(module: str) -> int:
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    assert rank is not None, f"{module} belongs to no layer: add it to LAYERS"
    return rank


def test_layers_point_down_only():
    up = sorted(f"{m} ({LAYERS[layer_of(m)][0]}) -> {t} ({LAYERS[layer_of(t)][0]})"
                for m, targets in import_graph().items() for t in targets
                if layer_of(t) > layer_of(m) and (m, t) not in ALLOWED_UPWARD)
    assert not up, "imports that point up a layer:\n" + "\n".join(up)
