"""Fixtures of the benchmark's smoke tests (``scripts/bench``, ``scripts/floorfs.py``).

Every test here is marked ``bench`` (deselect with ``-m "not bench"``); those that mount
are also marked ``fuse`` and skip, with the precise reason, when FUSE is unavailable.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _support.mount import FUSE_UNAVAILABLE_REASON

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
_HERE = Path(__file__).resolve().parent

# benchlib is a package of scripts/, not of memfs: make it importable for the unit tests.
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "bench: smoke tests of scripts/bench and scripts/floorfs.py (slowish)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.bench)


@pytest.fixture
def fuse_available() -> None:
    if FUSE_UNAVAILABLE_REASON is not None:
        pytest.skip(FUSE_UNAVAILABLE_REASON)
