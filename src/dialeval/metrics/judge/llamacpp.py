"""The judge through llama.cpp (`--judge-backend llama.cpp`): a GGUF file computed in its own
quantised types.

Why a second runtime: transformers reads a GGUF file by dequantising every weight to float32, so
the packaged 1.5B judge (a 1.1 GB Q4_K_M file) costs 70 CPU s to load, 9 GB of memory and 3.9 CPU s
per item on a CPU. llama.cpp multiplies with the quantised blocks as they are; measured on the same
prompts it holds 2.7 GB instead of 8.7 and needs 0.43x the CPU time per item, and its
ratings agree with the float32 ones to Pearson 0.999 (docs/judge.md). The arithmetic is the only
difference: the prompts are the same tokens, because the tokenizer and the chat template come from
the GGUF file's own metadata through transformers (the tokenizer alone, no weights), as on the
torch path.

One prompt at a time, its score a function of that prompt alone (the engine's promise for any
`--chunk-size`): the template's data-independent prefix is decoded once and kept in the key/value
memory; each prompt's remaining tokens are decoded after it, in pieces of at most `N_BATCH`
tokens, the answer position's logits read, and those tokens removed from the memory again.

llama-cpp-python has no binary wheel on PyPI; `bash install.sh --llama-cpp` builds it from PyPI's
source release with cmake and the C++ compiler (Debian's `cmake`, `g++`), a few CPU minutes.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

import numpy as np

from ...errors import DialevalError
from .frame import MIN_PREFIX, JudgeFrame, shared_prefix

PACKAGE = "llama-cpp-python"
INSTALL = "bash install.sh --llama-cpp"
N_BATCH = 512           # tokens decoded per call; a longer prompt is decoded in pieces of this size
MAX_CTX = 8192          # the memory's window, capped: the prompts here are far shorter


def gguf_file(path: str) -> str:
    """The GGUF file `path` names (the file, or a folder holding exactly one: the backbone
    loader's rule), or a one-line error: llama.cpp reads nothing else."""
    from ...backbones.loading import _gguf_files

    names = _gguf_files(path) if os.path.exists(path) else []
    if len(names) > 1:
        raise DialevalError(f"{path}: {len(names)} .gguf files; give --judge-model the file itself")
    if not names:
        raise DialevalError(f"{path}: --judge-backend llama.cpp reads a GGUF file, and this is not one "
                            "(a packaged one: --judge-model qwen1.5b)")
    return path if os.path.isfile(path) else os.path.join(path, names[0])


BACKENDS = ("torch", "llama.cpp")


def check_backend(backend: str, precision: str, device: str, endpoint: str | None, path: str | None) -> str:
    """`--judge-backend`, refused in one line before any model is read where it cannot run."""
    if backend not in BACKENDS:
        raise DialevalError(f"--judge-backend {backend!r}: choose {' or '.join(BACKENDS)}")
    if backend == "torch":
        return backend
    if endpoint:
        raise DialevalError("--judge-backend llama.cpp runs a local model and --judge-endpoint asks a server: "
                            "give one of them")
    if precision != "fp32":
        raise DialevalError(f"--judge-precision {precision}: llama.cpp computes in the GGUF file's own types; "
                            "leave the precision at fp32")
    if device != "cpu":
        raise DialevalError(f"--judge-device {device}: the llama.cpp backend runs on the CPU here")
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        _library()
    if path and os.path.exists(path):
        gguf_file(path)
    return backend


def _library():
    try:
        import llama_cpp
    except ImportError:
        raise DialevalError(f"--judge-backend llama.cpp needs {PACKAGE}, which is not installed: {INSTALL} "
                            "(builds it from source with cmake and a C++ compiler)") from None
    return llama_cpp


_QUIET: Any = None      # the no-op log callback, kept alive as long as the process


def _silence(lib) -> None:
    """llama.cpp logs every tensor it loads to stderr; dialeval's own progress lines say enough."""
    global _QUIET
    if _QUIET is None:
        _QUIET = lib.llama_log_callback(lambda level, text, data: None)
        lib.llama_log_set(_QUIET, ctypes.c_void_p(0))
        lib.llama_backend_init()


class LlamaCppModel:
    """One GGUF model and one llama.cpp context (its key/value memory) in this process."""

    def __init__(self, path: str, threads: int):
        lib = _library()
        _silence(lib)
        self.lib, self.path = lib, path
        self.model = lib.llama_model_load_from_file(path.encode(), lib.llama_model_default_params())
        if not self.model:
            raise DialevalError(f"{path}: llama.cpp could not read this GGUF file")
        params = lib.llama_context_default_params()
        self.n_ctx = int(min(MAX_CTX, lib.llama_model_n_ctx_train(self.model)))
        params.n_ctx, params.n_batch, params.n_ubatch = self.n_ctx, N_BATCH, N_BATCH
        params.n_threads = params.n_threads_batch = int(threads)
        # plain attention, always: llama.cpp's "auto" settles on flash attention or not per
        # graph, so a prompt's logits moved (by up to 0.13) with the prompts decoded before it
        params.flash_attn_type = 0
        self.ctx = lib.llama_init_from_model(self.model, params)
        if not self.ctx:
            lib.llama_model_free(self.model)
            self.model = None
            raise DialevalError(f"{path}: llama.cpp could not make a context of {self.n_ctx} tokens")
        self.memory = lib.llama_get_memory(self.ctx)
        self.n_vocab = int(lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(self.model)))
        self.batch = lib.llama_batch_init(N_BATCH, 0, 1)
        self.cached: tuple[int, ...] = ()      # the tokens the memory holds

    def close(self) -> None:
        """Free llama.cpp's memory (the model cache calls it through `__del__` on eviction)."""
        lib = getattr(self, "lib", None)
        if lib is None:
            return
        if getattr(self, "batch", None) is not None:
            lib.llama_batch_free(self.batch)
            self.batch = None
        if getattr(self, "ctx", None):
            lib.llama_free(self.ctx)
            self.ctx = None
        if getattr(self, "model", None):
            lib.llama_model_free(self.model)
            self.model = None

    def __del__(self):
        # at exit the library, and this module's globals (`sys` too), may be gone before us: the
        # OS frees it all
        if sys is not None and not sys.is_finalizing():
            self.close()

    def _decode(self, tokens: list[int], start: int) -> None:
        """Decode `tokens` at positions `start`.., each piece asking for its last token's logits."""
        for lo in range(0, len(tokens), N_BATCH):
            piece = tokens[lo:lo + N_BATCH]
            batch = self.batch
            for i, t in enumerate(piece):
                batch.token[i] = t
                batch.pos[i] = start + lo + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = 0
            batch.logits[len(piece) - 1] = 1
            batch.n_tokens = len(piece)
            rc = self.lib.llama_decode(self.ctx, batch)
            if rc != 0:
                raise DialevalError(f"{self.path}: llama.cpp could not decode a prompt of {start + len(tokens)} "
                                    f"tokens (code {rc})")

    def hold_prefix(self, prefix: list[int]) -> None:
        """Make the memory hold exactly `prefix` (decoded once; kept while the prefix stays)."""
        if tuple(prefix) == self.cached:
            return
        self.lib.llama_memory_clear(self.memory, True)
        self.cached = ()
        if prefix:
            self._decode(prefix, 0)
        self.cached = tuple(prefix)

    def last_logits(self, suffix: list[int], ids: list[int]) -> np.ndarray:
        """The logits of `ids` after the held prefix and `suffix` (which is removed again)."""
        start = len(self.cached)
        if start + len(suffix) > self.n_ctx:
            raise DialevalError(f"{self.path}: a prompt of {start + len(suffix)} tokens exceeds llama.cpp's "
                                f"window of {self.n_ctx}")
        try:
            self._decode(suffix, start)
            row = np.ctypeslib.as_array(self.lib.llama_get_logits_ith(self.ctx, -1), shape=(self.n_vocab,))
            return row[ids].astype(np.float32)
        finally:
            self.lib.llama_memory_seq_rm(self.memory, 0, start, -1)


class LlamaCppJudge(JudgeFrame):
    """The judge's frame (tokenizer, chat header, answer tokens) over a llama.cpp model."""

    def __init__(self, path: str):
        from transformers import AutoTokenizer

        from ...backbones.fingerprint import model_fingerprint
        from ...backbones.runtime import offline_environment, thread_count
        from ...progress import loading

        offline_environment()
        file = gguf_file(path)
        with loading(f"judge {os.path.basename(file)} (llama.cpp)"):
            self.runtime = LlamaCppModel(file, thread_count())
            tokenizer = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(file)),
                                                      gguf_file=os.path.basename(file), local_files_only=True)
        super().__init__(tokenizer, file, self.runtime.n_ctx, model_fingerprint(file))

    def rating_logits(self, tokens: list[list[int]], ids: list[int], batch_tokens: int,
                      fixed_prefix: int | None = None) -> np.ndarray:
        """As the torch path's, one prompt at a time (`batch_tokens` has nothing to batch here).
        A prompt that starts with the template's fixed prefix is decoded after the held prefix;
        one that does not (cut to fit the window) is decoded whole, so each value depends on its
        own prompt only."""
        out = np.zeros((len(tokens), len(ids)), dtype=np.float32)
        if not tokens:
            return out
        n = fixed_prefix if fixed_prefix is not None else (shared_prefix(tokens) if len(tokens) > 1 else 0)
        prefix = tokens[0][:n] if n >= MIN_PREFIX else []
        shared = [i for i, t in enumerate(tokens) if prefix and len(t) > len(prefix) and t[:len(prefix)] == prefix]
        alone = sorted(set(range(len(tokens))) - set(shared))
        for rows, held in ((shared, prefix), (alone, [])):
            if not rows:
                continue
            self.runtime.hold_prefix(held)
            for i in rows:
                out[i] = self.runtime.last_logits(tokens[i][len(held):], ids)
        return out


__all__ = ["INSTALL", "LlamaCppJudge", "LlamaCppModel", "gguf_file"]
