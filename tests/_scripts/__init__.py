"""Programs the tests run in subprocesses (so no test process holds a mount, and a
descriptor can stay open across steps the test takes), as real files that ruff sees.

Each runs as ``python -m _scripts.<name> ARG…`` with ``tests/`` on ``PYTHONPATH``
(:mod:`_support.scripts`, :func:`_support.mount.run_script`); it takes its parameters as
arguments, prints what the test asserts on, and waits for conditions with
:func:`_support.polling.wait_until`, never a fixed sleep.
"""
