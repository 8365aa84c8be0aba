"""memfs: durable, versioned memory for AI agents, mounted as ordinary files.

Layers (dependency direction left to right is forbidden; a test checks it):
``model``, ``rules``, ``errors``, ``config``, ``ids`` ← ``store`` ← ``fuse``, ``api`` ← ``cli``.
"""

__version__ = "0.1.0"
