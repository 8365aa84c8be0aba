"""Memory without a mount: the SDK's memory tool and the core it shares with the MCP
server (SPEC §5 ``memfs.memory_tool``).

==========================  ====================================================
module                      concern
==========================  ====================================================
``tool``                    ``MemfsMemoryTool`` / ``AsyncMemfsMemoryTool``: the
                            SDK's ``BetaAbstractMemoryTool`` on memfs stores
``files``                   the memory file service: the six commands on
                            ``/memories``, shared by the tool and ``memfs.mcp``
``access``                  the port to memfs: an embedded engine, or a server
                            with a session token
``refusals``                domain errors → the tool's error texts, one table
``dreamer``                 the language-model dreamer (SPEC §11): the Messages
                            API with the tool on a dream's output store
==========================  ====================================================

Usage::

    from memfs.memory_tool import MemfsMemoryTool
    from memfs.store import open_engine

    with MemfsMemoryTool.embedded(open_engine(), ["Notes"]) as memory:
        runner = client.beta.messages.tool_runner(
            model=..., max_tokens=1024, tools=[memory], messages=[...]
        )

or ``MemfsMemoryTool.remote("http://127.0.0.1:8765", session_token)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memfs.memory_tool.files import MemoryFiles
from memfs.memory_tool.port import StoreAccess, StoreView
from memfs.memory_tool.refusals import RefusalKind, Refused

if TYPE_CHECKING:
    from memfs.memory_tool.tool import AsyncMemfsMemoryTool, MemfsMemoryTool

__all__ = [
    "AsyncMemfsMemoryTool",
    "MemfsMemoryTool",
    "MemoryFiles",
    "RefusalKind",
    "Refused",
    "StoreAccess",
    "StoreView",
]


def __getattr__(name: str) -> Any:
    # The tool classes import the anthropic SDK (seconds on a busy machine); the MCP
    # server, and so ``memfs serve``, use only the file service and never pay for it.
    if name in ("AsyncMemfsMemoryTool", "MemfsMemoryTool"):
        from memfs.memory_tool import tool

        return getattr(tool, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
