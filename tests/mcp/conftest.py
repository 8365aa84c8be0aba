"""Fixtures of the MCP server tests: ``store_engine`` and ``make_store`` (an engine on
``$MEMFS_HOME/memfs.db``, the database ``memfs mcp`` and ``memfs serve`` use; from
``tests/fuse/fuse_fixtures.py``) and ``server`` (a real ``memfs serve``, from
``tests/memory_tool/memory_helpers.py``)."""

from __future__ import annotations

import _mcp_paths
import fuse_fixtures
import memory_helpers

TESTS = _mcp_paths.TESTS
store_engine = fuse_fixtures.store_engine
make_store = fuse_fixtures.make_store
server = memory_helpers.server
