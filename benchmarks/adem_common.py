"""Shared pieces of the ADEM benchmark: the pooled rated sets and an on-disk vector cache.

Encoding is by far the slowest step on a shared CPU, so every distinct context and text of
the pool is encoded once per encoder and kept in `models/adem-cache/<encoder>.npz` (git-ignored),
keyed by the text itself; the experiments then only do PCA and train M, N.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time

import numpy as np

# ../shared/data beside the repository, as the tests find it (or $DIALEVAL_SHARED_DATA)
DATA = os.environ.get("DIALEVAL_SHARED_DATA",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data"))
CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "adem-cache")


def pool():
    from dialeval.metrics.learned.adem.data import RATED_SETS, load_rated_set

    rows = []
    for name, rs in RATED_SETS.items():
        rows += load_rated_set(name, os.path.join(DATA, rs.folder),
                               dailydialog_test=os.path.join(DATA, "dailydialog", "test.zip"))
    return rows


def cache_path(encoder_spec: str) -> str:
    """One file per encoder *and* weights: a retrained encoder in the same folder gets a new file."""
    if ":" not in encoder_spec:
        return os.path.join(CACHE, f"{encoder_spec}.npz")
    kind, folder = encoder_spec.split(":", 1)
    manifest = os.path.join(folder, "manifest.json")
    stamp = open(manifest, "rb").read() if os.path.exists(manifest) else b""
    key = hashlib.sha1(encoder_spec.encode() + stamp).hexdigest()[:10]
    return os.path.join(CACHE, f"{kind}-{key}.npz")


def context_key(context, k):
    return "\x1e".join(list(context)[-k:])


def encode_pool(rows, encoder_spec: str, context_turns: int = 3, log=print):
    """(contexts dict, texts dict) of vectors, from the cache or computed and cached."""
    from dialeval.metrics.learned.adem.encoders import make_encoder

    path = cache_path(encoder_spec)
    ctx_vecs, txt_vecs = {}, {}
    if os.path.exists(path):
        with np.load(path, allow_pickle=False) as z:
            ctx_vecs = dict(zip(z["ctx_keys"].tolist(), z["ctx"]))
            txt_vecs = dict(zip(z["txt_keys"].tolist(), z["txt"]))
    enc = make_encoder(encoder_spec, context_turns)
    k = context_turns if encoder_spec.startswith("minilm") else enc.model.max_turns
    ctx_need = list(dict.fromkeys(context_key(r.context, k) for r in rows if context_key(r.context, k) not in ctx_vecs))
    txt_need = list(dict.fromkeys(t for r in rows for t in [r.response, *r.references] if t not in txt_vecs))
    if ctx_need or txt_need:
        log(f"encoding {len(ctx_need)} contexts and {len(txt_need)} texts with {encoder_spec}")
        started = time.time()
        for i in range(0, len(txt_need), 256):
            part = txt_need[i:i + 256]
            txt_vecs.update(zip(part, enc.encode_texts(part)))
            log(f"  texts {i + len(part)}/{len(txt_need)}  {time.time() - started:.0f} s")
            _save(path, ctx_vecs, txt_vecs)
        for i in range(0, len(ctx_need), 256):
            part = ctx_need[i:i + 256]
            ctx_vecs.update(zip(part, enc.encode_contexts([p.split("\x1e") for p in part])))
            log(f"  contexts {i + len(part)}/{len(ctx_need)}  {time.time() - started:.0f} s")
            _save(path, ctx_vecs, txt_vecs)
    return ctx_vecs, txt_vecs, k


def _save(path, ctx_vecs, txt_vecs):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp.npz"
    np.savez(tmp, ctx_keys=np.array(list(ctx_vecs), dtype=str), ctx=np.array(list(ctx_vecs.values())),
             txt_keys=np.array(list(txt_vecs), dtype=str), txt=np.array(list(txt_vecs.values())))
    os.replace(tmp, path)


def vectors(rows, ctx_vecs, txt_vecs, k):
    """C, R (mean over references; NaN rows without), H for rows."""
    C = np.stack([ctx_vecs[context_key(r.context, k)] for r in rows]).astype(np.float64)
    H = np.stack([txt_vecs[r.response] for r in rows]).astype(np.float64)
    R = np.full_like(H, np.nan)
    for i, r in enumerate(rows):
        if r.references:
            R[i] = np.mean([txt_vecs[t] for t in r.references], axis=0)
    return C, R, H


if __name__ == "__main__":
    # python3 benchmarks/adem_common.py ENCODER_SPEC : fill the cache
    rows = pool()
    print(len(rows), "rows")
    encode_pool(rows, sys.argv[1] if len(sys.argv) > 1 else "minilm")
