"""Polling with a deadline: the one way tests wait for something to happen.

CI runs on a busy 2-core box: a test waits for the *event*, bounded by a deadline that
only a broken build reaches; it never sleeps a fixed time and hopes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["POLL_INTERVAL_S", "PROPAGATION_TIMEOUT_S", "wait_until", "wait_until_async"]

T = TypeVar("T")

POLL_INTERVAL_S = 0.02
# SPEC §4: changes made elsewhere appear within about one second; slack for CI.
PROPAGATION_TIMEOUT_S = 5.0


def wait_until(
    predicate: Callable[[], T],
    what: str,
    timeout_s: float = PROPAGATION_TIMEOUT_S,
    *,
    interval_s: float = POLL_INTERVAL_S,
) -> T:
    """Calls ``predicate`` until it returns something truthy and returns that value.

    Raises:
        AssertionError: ``timeout_s`` seconds passed first (names ``what``). An
            exception from ``predicate`` (e.g. "the daemon died") passes through.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)


async def wait_until_async(
    predicate: Callable[[], Any | Awaitable[Any]],
    what: str,
    timeout_s: float = PROPAGATION_TIMEOUT_S,
    *,
    interval_s: float = POLL_INTERVAL_S,
) -> Any:
    """:func:`wait_until` inside a trio test: ``predicate`` may be sync or async, and
    the loop sleeps with ``trio.sleep`` between calls."""
    import inspect

    import trio

    deadline = trio.current_time() + timeout_s
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if trio.current_time() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await trio.sleep(interval_s)
