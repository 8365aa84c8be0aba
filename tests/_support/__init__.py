"""Helpers every test directory shares: one copy of each.

- :mod:`_support.polling`: wait for a condition with a deadline (never a bare sleep).
- :mod:`_support.cli`: run the real ``memfs`` command in a subprocess.
- :mod:`_support.serve`: a real ``memfs serve`` subprocess (start, restart on its port,
  kill, stop).
- :mod:`_support.scripts`: run the programs of ``tests/_scripts`` (helper scripts are
  files there, never code inside strings).
- :mod:`_support.mount`: real FUSE mounts (``Mount``, ``Mounter``) and the tools that
  drive them.

``tests/`` is on ``sys.path`` (pytest puts the rootdir conftest's directory there), so
test modules import ``_support.<module>``.
"""
