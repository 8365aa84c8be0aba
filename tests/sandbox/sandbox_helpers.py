"""Helpers of the sandbox tests: throwaway users, commands run as them, Python for
them, and shell scripts run in a private mount namespace (``unshare -m``).

The interpreter of the test run may live where other uids can't reach it (a pyenv
under a 0700 /root): :func:`agent_python` then falls back to the system's python3 of
the same version, with this checkout's site-packages on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import pwd
import secrets
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from _support.mount import COMMAND_TIMEOUT_S

__all__ = [
    "Agent",
    "agent_errno",
    "agent_python",
    "in_namespace",
    "make_agent",
    "remove_agent",
    "run_as",
]


@dataclass(frozen=True)
class Agent:
    """A user made for the test session."""

    name: str
    uid: int
    gid: int


def make_agent() -> Agent:
    """``useradd`` of a new user with its own primary group and no home directory."""
    name = f"memfs-sbx-{secrets.token_hex(3)}"
    subprocess.run(
        ["useradd", "--no-create-home", "--user-group", "--shell", "/bin/sh", name],
        check=True, capture_output=True, timeout=COMMAND_TIMEOUT_S,
    )
    entry = pwd.getpwnam(name)
    return Agent(name, entry.pw_uid, entry.pw_gid)


def remove_agent(agent: Agent) -> None:
    subprocess.run(["userdel", agent.name], check=False, capture_output=True,
                   timeout=COMMAND_TIMEOUT_S)


def run_as(
    agent: Agent, *command: str | Path, env: dict[str, str] | None = None,
    cwd: Path | None = None, check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Runs ``command`` as ``agent`` (``runuser -u``: its uid, gid and groups)."""
    args = ["runuser", "-u", agent.name, "--"]
    if env is not None:
        args += ["env", *(f"{k}={v}" for k, v in env.items())]
    args += [str(c) for c in command]
    completed = subprocess.run(
        args, capture_output=True, text=True, cwd=cwd, timeout=COMMAND_TIMEOUT_S,
        check=False,
    )
    if check and completed.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {completed.returncode}\n"
            f"stdout: {completed.stdout}\nstderr: {completed.stderr}"
        )
    return completed


def _reachable_by_others(path: str) -> bool:
    """Whether every directory above ``path`` can be searched by any uid and the file
    is executable by any uid."""
    real = Path(os.path.realpath(path))
    if not os.stat(real).st_mode & 0o001:
        return False
    return all(os.stat(parent).st_mode & 0o001 for parent in real.parents)


def agent_python() -> tuple[list[str], dict[str, str]]:
    """(the command that starts Python with memfs importable for another uid, the
    environment it needs)."""
    if _reachable_by_others(sys.executable):
        return [sys.executable], {}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = f"/usr/bin/{version}"
    if not os.path.exists(system):
        import pytest

        pytest.skip(f"{sys.executable} can't be run by other uids and there is no {system}")
    site = sysconfig.get_paths()["purelib"]
    checkout = str(Path(__file__).resolve().parents[2])
    return [system], {"PYTHONPATH": f"{checkout}:{site}"}


def agent_errno(agent: Agent, code: str) -> str:
    """Runs ``code`` as ``agent``; the errno name of the OSError it raises, or
    ``"no error"``."""
    body = textwrap.indent(textwrap.dedent(code).strip(), "    ")
    script = (
        "import errno, os\n"
        "try:\n"
        f"{body}\n"
        "except OSError as e:\n"
        "    print(errno.errorcode[e.errno])\n"
        "else:\n"
        "    print('no error')\n"
    )
    python, env = agent_python()
    return run_as(agent, *python, "-c", script, env=env).stdout.strip()


def in_namespace(
    script: str, *, env: dict[str, str] | None = None, timeout_s: float = COMMAND_TIMEOUT_S,
    check: bool = True, extra: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """Runs the ``sh -e`` ``script`` in a new private mount namespace
    (``unshare --mount --propagation private``): its mounts are seen by nothing outside.
    """
    completed = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", *extra, "sh", "-ec",
         textwrap.dedent(script)],
        capture_output=True, text=True, timeout=timeout_s, check=False,
        env=dict(os.environ, **(env or {})),
    )
    if check and completed.returncode != 0:
        raise AssertionError(
            f"the namespace script exited {completed.returncode}\n"
            f"stdout: {completed.stdout}\nstderr: {completed.stderr}"
        )
    return completed
