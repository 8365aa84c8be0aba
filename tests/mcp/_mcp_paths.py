"""Puts ``tests/memory_tool`` on ``sys.path`` (its :mod:`memory_helpers` serve both
directories); imported first by this directory's conftest."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

MEMORY_TOOL_TESTS = Path(__file__).resolve().parent.parent / "memory_tool"
if str(MEMORY_TOOL_TESTS) not in sys.path:
    sys.path.insert(0, str(MEMORY_TOOL_TESTS))
memory_helpers = importlib.import_module("memory_helpers")
