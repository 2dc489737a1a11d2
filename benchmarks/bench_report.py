"""The HTML report in a real browser: size, load time and screenshots.

1. DSTC6 (20 systems x 2,000 turns, 8 metrics: BLEU-1..4, ROUGE-L, CIDEr-D, CIDEr, METEOR;
   published human system means): the report's size in bytes and how long headless Chromium
   takes to open it (Navigation Timing `loadEventEnd`, and the wall time from the navigate
   command to the load event), median of several fresh loads;
2. USR-TopicalChat (5 systems, 4 metrics, `overall`): screenshots of the top of the page and of
   the scatter section into benchmarks/out/report_results/.

    python3 benchmarks/bench_report.py [--shared ../shared] [--loads 5] [--skip-dstc6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from chromium_cdp import Browser  # noqa: E402

DSTC6_METRICS = ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d", "cider", "meteor"]
USR_METRICS = ["bleu2", "bleu4", "rouge_l", "cider_d"]


def _load_times(path: str, loads: int) -> dict:
    url = "file://" + os.path.abspath(path)
    timing, wall, errors, requests = [], [], [], []
    for _ in range(loads):
        with Browser(timeout=120) as browser:
            page = browser.open(url)
            timing.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
            wall.append(page.load_wall_s)
            errors += page.console_errors()
            requests += [u for u in page.requests() if u != url and not u.startswith("data:")]
    return {"load_event_end_ms": timing, "navigate_to_load_s": wall,
            "median_load_event_end_ms": statistics.median(timing),
            "median_navigate_to_load_s": statistics.median(wall),
            "console_errors": errors, "network_requests": requests}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    ap.add_argument("--out", default=os.path.join(HERE, "out", "report_results"))
    ap.add_argument("--html-dir", default=tempfile.gettempdir(), help="where the (large) report files go")
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--skip-dstc6", action="store_true")
    args = ap.parse_args()
    from dialeval.meta.evaluate import evaluate_dataset
    from dialeval.meta.systems import score_rows
    from dialeval.data.datasets import load_dataset
    from dialeval.report.html import build_report, render_html, write_report
    from dialeval.scoring import score

    os.makedirs(args.out, exist_ok=True)
    results: dict = {}
    data = os.path.join(args.shared, "data")

    # -- USR-TC screenshots ---------------------------------------------------------------------
    ds = load_dataset("usr-tc", os.path.join(data, "usr"), exclude_systems=("Original Ground Truth",))
    result = score(ds.samples, USR_METRICS)
    report = build_report(score_rows(result), qualities=["overall"], signatures=result.signatures,
                          title="USR-TopicalChat: 4 metrics vs overall quality")
    usr_html = os.path.join(args.html_dir, "dialeval-usr-tc-report.html")
    write_report(usr_html, report)
    url = "file://" + os.path.abspath(usr_html)
    with Browser(timeout=120) as browser:
        page = browser.open(url)
        top = os.path.join(args.out, "usr-tc-report-top.png")
        with open(top, "wb") as f:
            f.write(page.screenshot())
        page.evaluate("document.getElementById('scatter').scrollIntoView(); true")
        scatter = os.path.join(args.out, "usr-tc-report-scatter.png")
        with open(scatter, "wb") as f:
            f.write(page.screenshot())
        results["usr_tc"] = {"bytes": os.path.getsize(usr_html),
                             "screenshots": [os.path.relpath(p, os.path.join(HERE, "..")) for p in (top, scatter)],
                             "console_errors": page.console_errors()}
    print(f"usr-tc report: {results['usr_tc']['bytes']:,} bytes; screenshots {top}, {scatter}")

    # -- DSTC6 ------------------------------------------------------------------------------------
    if not args.skip_dstc6:
        t0 = time.perf_counter()
        ev = evaluate_dataset("dstc6", os.path.join(data, "dstc6-eval"), DSTC6_METRICS)
        t1 = time.perf_counter()
        report = build_report(ev.rows(), system_human=ev.dataset.system_ratings,
                              signatures=ev.result.signatures,
                              title="DSTC6: 20 systems, 8 metrics, published human means")
        html = render_html(report)
        t2 = time.perf_counter()
        path = os.path.join(args.html_dir, "dialeval-dstc6-report.html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(html)
        times = _load_times(path, args.loads)
        with Browser(timeout=120) as browser:
            page = browser.open("file://" + os.path.abspath(path))
            shot = os.path.join(args.html_dir, "dialeval-dstc6-report-top.png")
            with open(shot, "wb") as f:
                f.write(page.screenshot())
        results["dstc6"] = {"bytes": len(html.encode("utf-8")), "score_s": t1 - t0,
                            "build_and_render_s": t2 - t1, "screenshot": shot, **times}
        print(f"dstc6 report: {results['dstc6']['bytes']:,} bytes "
              f"({results['dstc6']['bytes'] / 2**20:.2f} MiB); scoring {t1 - t0:.1f} s, "
              f"report {t2 - t1:.1f} s")
        print(f"  loadEventEnd (ms) over {args.loads} fresh loads: {times['load_event_end_ms']} "
              f"-> median {times['median_load_event_end_ms']:.0f} ms")
        print(f"  navigate -> load event (s): {[round(v, 3) for v in times['navigate_to_load_s']]} "
              f"-> median {times['median_navigate_to_load_s']:.3f} s")
        print(f"  console errors: {times['console_errors']}, network requests: {times['network_requests']}")
    with open(os.path.join(args.out, "report_bench.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
