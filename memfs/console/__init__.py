"""The web console (SPEC §12): server-rendered pages over the same engine calls as the
API, for people who read, fix and review what agents remembered.

=============  ===================================================================
``app``        the ASGI application mounted at ``/console``: routes, templates, CSS
``guard``      the security: cookie, CSRF token, failed sign-in limit, headers
``view``       how a page runs: sign-in resolved, CSRF checked, handler in a thread
``account``    sign-in, sign-out, sessions and keys
``stores``     stores list, a store's tree and search, deleted memories, audit trail
``memories``   a memory, its editor (with conflicts), versions, diffs, redact, revert
``history``    snapshots, the store as of a point, store diff, restore, fork and merge
``dreams``     dreams: start, follow, review the output's diff, apply or discard
``transfer``   export (JSONL, a zip of files) and import of an uploaded file
=============  ===================================================================

The console is part of the HTTP layer: it uses :mod:`memfs.api.auth` (the same
credentials and scope checks), and only the composition root (``memfs serve``) mounts
it, so the API never imports it.
"""

from memfs.console.app import create_console

__all__ = ["create_console"]
