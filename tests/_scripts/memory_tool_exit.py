"""Creates /memories/a.md with memfs's memory tool over the SQLite DATABASE_URL (store
``notes``), prints the tool's answer, then ends the tool as CLOSING says: ``none``
(left to the interpreter's exit), ``close`` or ``del``.

Usage: memory_tool_exit DATABASE_URL none|close|del
"""

from __future__ import annotations

import sys

from anthropic.types.beta import BetaMemoryTool20250818CreateCommand as Create

from memfs.memory_tool import MemfsMemoryTool
from memfs.store import open_engine

# At module level, as a script would: with ``none`` the tool is still referenced when
# the interpreter exits.
if __name__ == "__main__":
    url, closing = sys.argv[1:3]
    tool = MemfsMemoryTool.embedded(open_engine(url), ["notes"])
    print(tool.create(Create(command="create", path="/memories/a.md", file_text="a\n")))
    if closing == "close":
        tool.close()
    elif closing == "del":
        del tool
