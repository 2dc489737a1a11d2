"""`dialeval.score`'s documentation comes from the registry, and looking it up keeps
`import dialeval` light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_score_documentation_lists_every_registered_option():
    """`help(dialeval.score)` is generated from the registry: every option a metric declares
    (what the command line turns into flags) appears, with its metrics."""
    import dialeval
    from dialeval.metrics.registry import all_options

    doc = dialeval.score.__doc__
    for name in all_options():
        if name not in ("refs_mode", "tokenizer"):
            assert f"    {name}: " in doc, name
    assert "(meteor)" in doc and "refs_mode: how several references combine" in doc


def test_import_stays_light_until_score_is_looked_up():
    src = Path(__file__).resolve().parents[1] / "src"
    code = ("import sys, dialeval; light = 'numpy' not in sys.modules; "
            "doc = dialeval.score.__doc__; print(light, 'word_vectors:' in doc)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]
