"""Shared test helpers: where ../shared is, and skipping cleanly when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DIALEVAL_SHARED", REPO.parent / "shared"))
GOLDEN = SHARED / "golden"
DATA = SHARED / "data"


def need(path: Path) -> Path:
    """Skip the calling test when a shared file or folder is missing."""
    if not path.exists():
        pytest.skip(f"{path} not present (shared data/golden files live in ../shared)")
    return path


@pytest.fixture
def golden():
    return need(GOLDEN)


@pytest.fixture
def data():
    return need(DATA)
