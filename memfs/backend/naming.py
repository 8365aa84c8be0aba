"""Names a backend gives on its own: conflict copies (SPEC §4 concurrent writers).

The rule is :func:`memfs.core.naming.conflict_name` (with its compact timestamp), shared
by the FUSE layer (a close that meets a newer head), the remote replay (a queued write
that meets one) and a merge of a fork (SPEC §10), so all name conflict copies alike;
re-exported here for the backends.
"""

from __future__ import annotations

from memfs.core.naming import compact_timestamp, conflict_name

__all__ = ["compact_timestamp", "conflict_name"]
