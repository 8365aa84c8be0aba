"""Fixtures of the MCP server tests: ``store_engine`` (an engine on
``$MEMFS_HOME/memfs.db``, the database ``memfs mcp`` and ``memfs serve`` use) and
``server`` (a real ``memfs serve``), from ``tests/memory_tool/memory_helpers.py``."""

from __future__ import annotations

import _mcp_paths

store_engine = _mcp_paths.memory_helpers.store_engine
server = _mcp_paths.memory_helpers.server
