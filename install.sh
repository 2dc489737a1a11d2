#!/usr/bin/env bash
# Installs dialeval with every optional family and the test tools, from PyPI and Debian only.
# Safe to run again: each step is skipped or is a no-op when already done.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
# CPU build of torch first, pinned exactly, so that nothing pulls the CUDA wheels.
"$PY" -m pip install -q --disable-pip-version-check -e ".[all,dev]"
