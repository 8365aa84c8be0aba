"""Timing helpers of the engine-level benchmarks (``scripts/bench-asof``,
``scripts/bench-history``): medians of repeated calls, and whole paginated listings."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def every_page(fetch: Callable[[str | None], Any]) -> int:
    """Calls ``fetch(cursor)`` from the first page (``None``) until a page has no
    ``next_cursor``; returns how many items the pages held."""
    count, cursor = 0, None
    while True:
        page = fetch(cursor)
        count += len(page.items)
        cursor = page.next_cursor
        if cursor is None:
            return count


def median_ms(action: Callable[[], Any], runs: int) -> tuple[float, Any]:
    """(median wall time of ``runs`` calls of ``action`` in milliseconds, the last
    call's result)."""
    samples, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), result
