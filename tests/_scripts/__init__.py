"""Programs the tests run in subprocesses (so no test process holds a mount, and a
descriptor can stay open across steps the test takes), as real files that the linters
see (``ruff check tests``; ``cd tests && mypy --strict --ignore-missing-imports
--explicit-package-bases --follow-imports=silent -p _scripts``).

Each runs as ``python -m _scripts.<name> ARG…`` with ``tests/`` on ``PYTHONPATH``
(:mod:`_support.scripts`, :func:`_support.mount.run_script`); it takes its parameters as
arguments, prints what the test asserts on, and waits for conditions with
:func:`_support.polling.wait_until`, never a fixed sleep.
"""

from __future__ import annotations

import errno

__all__ = ["errno_name"]


def errno_name(exc: OSError) -> str:
    """The symbolic name of ``exc``'s errno (``"ENOENT"``), what the scripts print."""
    assert exc.errno is not None, exc
    return errno.errorcode[exc.errno]
