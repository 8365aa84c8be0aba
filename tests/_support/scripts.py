"""The programs of ``tests/_scripts``, run in subprocesses.

- :func:`script_command`, :func:`script_env`: the command and environment that run
  ``tests/_scripts/<name>.py`` (for ``subprocess.Popen``).
- :func:`script_process`: runs one to the end and returns the finished process (never
  raises on the exit status); :func:`_support.mount.run_script` checks it and returns its
  output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = [
    "SCRIPTS_DIR",
    "SCRIPT_TIMEOUT_S",
    "TESTS_DIR",
    "script_command",
    "script_env",
    "script_process",
]

TESTS_DIR = Path(__file__).resolve().parents[1]
SCRIPTS_DIR = TESTS_DIR / "_scripts"
SCRIPT_TIMEOUT_S = 60.0


def script_command(name: str, *args: str | Path | int) -> list[str]:
    """The command that runs ``tests/_scripts/<name>.py`` with ``args`` (run it with
    :func:`script_env`)."""
    return [sys.executable, "-m", f"_scripts.{name}", *map(str, args)]


def script_env() -> dict[str, str]:
    """This process's environment with ``tests/`` on ``PYTHONPATH``, so a script can
    import ``_support`` and ``_scripts``."""
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS_DIR), *filter(None, [path])]))


def script_process(
    name: str, *args: str | Path | int, timeout_s: float = SCRIPT_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """Runs ``tests/_scripts/<name>.py`` with ``args``; the finished process (text)."""
    return subprocess.run(
        script_command(name, *args), env=script_env(), capture_output=True, text=True,
        timeout=timeout_s, check=False,
    )
