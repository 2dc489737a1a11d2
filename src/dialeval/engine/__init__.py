"""The scoring engine: plan, run, merge.

- `plan.py`: which metrics run (built once; rebuilt once per Dask worker from a recipe), which
  corpus-wide first passes they need (CIDEr's document frequencies), the shard size;
- `shard.py`: the work on one shard, the same for every backend: the first pass and scoring,
  giving sentence values and mergeable per-system states (`metrics.base.MetricState`);
- `merge.py`: `Totals`, the fold of shard results in input order, and corpus values from it;
- `run.py`: `run_plan`, the one loop: first pass, then scoring, shard by shard;
- `backends.py`: local (in process) or Dask (`distributed`), results in input order;
- `stream.py`: the streaming, resumable file-to-file run behind `dialeval score`.
"""

from .backends import BACKENDS, make_backend
from .merge import Totals
from .plan import DEFAULT_CHUNK_SIZE, Plan, make_plan
from .run import gather_first_pass, run_plan
from .shard import ShardResult, first_pass_shard, score_shard

__all__ = ["BACKENDS", "DEFAULT_CHUNK_SIZE", "Plan", "ShardResult", "Totals", "first_pass_shard",
           "gather_first_pass", "make_backend", "make_plan", "run_plan", "score_shard"]
