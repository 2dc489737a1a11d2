"""The HTML report's analysis (`report/analysis.py`) apart from its layout (`report/html.py`,
`report/figures.py`): the same report either way, numbers without drawing, and one drawing for
what the PNG and SVG figures both show."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO


def _rows(n_systems: int = 6, k: int = 6) -> list[dict]:
    rng = np.random.default_rng(1)
    out = []
    for s in range(n_systems):
        for i in range(k):
            q = s / n_systems + rng.normal(scale=0.05)
            out.append({"id": f"s{s}-{i}", "system": f"sys{s}", "item": f"i{i}",
                        "scores": {"good": float(q + rng.normal(scale=0.02)), "noise": float(rng.uniform())},
                        "ratings": {"overall": [1 + 4 * q, 1 + 4 * q + rng.normal(scale=0.1)]}})
    return out


def test_build_report_is_the_analysis_laid_out():
    pytest.importorskip("matplotlib")
    from dialeval.report.analysis import ReportSettings, analyse
    from dialeval.report.html import build_report, report_data

    settings = ReportSettings(n_boot=20, n_resamples=20, top_k=2)
    by_options = build_report(_rows(), n_boot=20, n_resamples=20, top_k=2, title="t")
    assert report_data(analyse(_rows(), settings), title="t") == by_options
    assert build_report(_rows(), settings, title="t") == by_options
    with pytest.raises(TypeError, match="not both"):
        build_report(_rows(), settings, n_boot=5)


def test_the_analysis_draws_nothing():
    code = ("import sys; sys.path.insert(0, 'tests'); from test_report_analysis import _rows; "
            "from dialeval.report.analysis import analyse, ReportSettings; "
            "a = analyse(_rows(), ReportSettings(n_boot=10, n_resamples=10)); "
            "assert a.scatter and a.heatmap is not None and a.correlations; "
            "assert 'matplotlib' not in sys.modules and 'jinja2' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_png_and_svg_scatter_plots_share_one_drawing(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    from dialeval.report import figures, plots

    calls = []

    def spy(module, name, label):
        real = getattr(plots, name)
        monkeypatch.setattr(module, name, lambda *a, **k: calls.append(label) or real(*a, **k))

    spy(figures, "draw_points_by_system", "svg points")
    spy(figures, "draw_fit_line", "svg line")
    spy(plots, "draw_points_by_system", "png points")
    spy(plots, "draw_fit_line", "png line")
    x, y, systems = [1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 5.0], ["a", "b", "a", "b"]
    svg = figures.turn_scatter(x, y, systems, metric="m", quality="q", colours=figures.system_colours(["a", "b"]),
                               r=0.5)
    paths = plots.scatter_plots({"m": np.array(x)}, np.array(y), str(tmp_path), quality="q", systems=systems)
    assert svg.startswith("<svg") and len(paths) == 1
    assert calls == ["svg points", "svg line", "png points", "png line"]
