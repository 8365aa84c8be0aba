"""Puts the FUSE tests' and the fault tests' helper modules on ``sys.path`` (one copy of
the real-mount harness and of the ``memfs serve`` wrapper); imported first by the
conftests of ``tests/memory_tool`` and ``tests/mcp``."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
for directory in ("fuse", "faults", "memory_tool"):
    if str(TESTS / directory) not in sys.path:
        sys.path.insert(0, str(TESTS / directory))
