"""Helpers of the tests that run ``memfs serve`` as a subprocess (``tests/api``,
``tests/faults``). This directory is on ``sys.path`` (pytest puts it there for
``tests/conftest.py``), so they import this module by its name.
"""

from __future__ import annotations

import selectors
import time
from typing import IO

from memfs.api.serve import READY_PREFIX


def read_ready_url(stdout: IO[str], deadline: float) -> str | None:
    """Reads ``memfs serve``'s stdout until the line announcing that it is ready; the URL
    that line gives, or None when the output ends or ``deadline`` (a
    :func:`time.monotonic` value) passes first."""
    with selectors.DefaultSelector() as selector:
        selector.register(stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=deadline - time.monotonic()):
                break
            line = stdout.readline()
            if not line:
                break
            if line.startswith(READY_PREFIX):
                return line[len(READY_PREFIX) :].strip()
    return None
