"""torch threads on a shared machine: training steps of the default `train lm` model with 1
thread against 2 (or more), interleaved in one process so both see the same load.

    nice -n 10 python3 benchmarks/bench_threads.py [--threads 1,2] [--rounds 3] [--steps 10]

Prints seconds per step for each thread count, the ratio to the first, the load average and
the default `dialeval.models.threads.default_threads()` would choose now.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from dialeval.models.threads import default_threads, idle_cores

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=5000, n_positions=128, n_embd=160, n_layer=3, n_head=4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 5000, (32, 64))
    counts = [int(t) for t in args.threads.split(",")]
    per_step: dict[int, list[float]] = {c: [] for c in counts}
    load_before = os.getloadavg()[0]
    for _ in range(args.rounds):
        for c in counts:
            torch.set_num_threads(c)
            began = time.perf_counter()
            for _ in range(args.steps):
                loss = model(input_ids=ids, labels=ids).loss
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            per_step[c].append((time.perf_counter() - began) / args.steps)
    base = min(per_step[counts[0]])
    print(f"cores {os.cpu_count()}, load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}; "
          f"idle cores now {idle_cores()}, default threads {default_threads()}")
    for c in counts:
        best, mean = min(per_step[c]), sum(per_step[c]) / len(per_step[c])
        print(f"threads {c}: {best:.3f} s/step best, {mean:.3f} mean over {args.rounds} rounds "
              f"(x{best / base:.2f} of {counts[0]} thread(s), best)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
