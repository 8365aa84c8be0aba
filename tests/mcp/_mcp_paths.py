"""Puts ``tests/memory_tool`` on ``sys.path`` and, through its ``_test_paths``, the FUSE
and fault tests' helpers; imported first by this directory's conftest."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "memory_tool"))
TESTS = importlib.import_module("_test_paths").TESTS
