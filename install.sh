#!/usr/bin/env bash
# Installs dialeval with every optional family and the test tools, from PyPI and Debian only.
# Safe to run again: each step is skipped or is a no-op when already done.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"

# --- Debian packages -------------------------------------------------------------------
APT_PACKAGES=()
if [ ${#APT_PACKAGES[@]} -gt 0 ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

# --- Python packages --------------------------------------------------------------------
# torch first, pinned exactly, so that nothing pulls the CUDA wheels.
"$PY" -m pip install -q --disable-pip-version-check "torch==2.13.0"
"$PY" -m pip install -q --disable-pip-version-check -e ".[all,dev]"

# --- Resources built or set up after installation ----------------------------------------
