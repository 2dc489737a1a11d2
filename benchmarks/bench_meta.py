"""Bootstrap CIs: dialeval's vectorised resampling against the plain per-resample scipy loop
that the papers' scripts use, on the same resamples, in one process. Prints times and ratios.

    python3 benchmarks/bench_meta.py [--n 600] [--n-boot 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from dialeval.meta.correlation import bootstrap_indices, rowwise


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.normal(size=args.n)
    y = np.round(x + rng.normal(size=args.n))
    idx = bootstrap_indices(args.n, args.n_boot, np.random.default_rng(1))
    fns = {"pearson": stats.pearsonr, "spearman": stats.spearmanr,
           "kendall": lambda a, b: stats.kendalltau(a, b, variant="b")}
    print(f"n={args.n}, resamples={args.n_boot}")
    print(f"{'method':10s} {'scipy loop (s)':>15s} {'dialeval (s)':>13s} {'ratio':>7s} {'max |diff|':>11s}")
    for method, fn in fns.items():
        t0 = time.perf_counter()
        base = np.array([fn(x[i], y[i]).statistic for i in idx])
        t1 = time.perf_counter()
        ours = rowwise(x[idx], y[idx], method)
        t2 = time.perf_counter()
        print(f"{method:10s} {t1 - t0:15.3f} {t2 - t1:13.3f} {(t1 - t0) / (t2 - t1):7.1f} "
              f"{np.max(np.abs(base - ours)):11.2e}")


if __name__ == "__main__":
    main()
