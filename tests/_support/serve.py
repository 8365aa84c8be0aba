"""A real ``memfs serve`` subprocess: the one server wrapper of the API, fault and CLI
tests.

:class:`ServeProcess` starts ``memfs serve`` on loopback, waits for its ready line
(:func:`read_ready_url`), and can be killed (``kill -9``) and started again on the same
port, or stopped with SIGTERM. Each run's stderr goes to ``server-<n>.log`` in its log
directory; :meth:`ServeProcess.tracebacks` names the runs that logged a traceback.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from _support.cli import memfs_command
from memfs.api.serve import READY_PREFIX

__all__ = ["SERVER_START_TIMEOUT_S", "SERVER_STOP_TIMEOUT_S", "ServeProcess", "read_ready_url"]

SERVER_START_TIMEOUT_S = 30.0
SERVER_STOP_TIMEOUT_S = 15.0


def read_ready_url(stdout: IO[str], deadline: float) -> str | None:
    """Reads ``memfs serve``'s stdout until the line announcing that it is ready; the URL
    that line gives, or None when the output ends or ``deadline`` (a
    :func:`time.monotonic` value) passes first."""
    with selectors.DefaultSelector() as selector:
        selector.register(stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=deadline - time.monotonic()):
                break
            line = stdout.readline()
            if not line:
                break
            if line.startswith(READY_PREFIX):
                return line[len(READY_PREFIX) :].strip()
    return None


class ServeProcess:
    """``memfs serve --host 127.0.0.1`` over one database, as a subprocess.

    Args:
        database: what ``--database`` gets: a SQLite file or a ``postgresql://`` URL.
        log_dir: where each run's stderr goes (``server-<n>.log``).
        extra_args: more ``memfs serve`` options.
        env: the server's environment (default: this process's).
        start: start it now (default); else call :meth:`start`.
    """

    def __init__(
        self,
        database: str | Path,
        log_dir: Path,
        *extra_args: str,
        env: Mapping[str, str] | None = None,
        start: bool = True,
    ) -> None:
        self.database = database
        self.log_dir = log_dir
        self.extra_args = extra_args
        self.env = dict(env) if env is not None else None
        self.port = 0
        self.url = ""
        self.process: subprocess.Popen[str] | None = None
        self.runs = 0
        if start:
            self.start()

    @property
    def log_path(self) -> Path:
        """The log of the current (or last) run."""
        return self.log_dir / f"server-{self.runs}.log"

    def start(self) -> None:
        """Starts the server, on the port of its previous run if it had one (a killed
        server's port may be briefly unavailable: retried until the deadline)."""
        assert self.process is None or self.process.poll() is not None
        self.runs += 1
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            # 0600 like memfs's own files: a log in $MEMFS_HOME must not look like a
            # file memfs left readable to others.
            fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "w") as log:
                self.process = subprocess.Popen(
                    memfs_command(
                        "serve", "--host", "127.0.0.1", "--port", str(self.port),
                        "--database", str(self.database), *self.extra_args,
                    ),
                    stdout=subprocess.PIPE, stderr=log, text=True, env=self.env,
                )
            url = self._wait_ready(deadline)
            if url is not None:
                break
            if time.monotonic() > deadline or not self.port:
                raise AssertionError(f"memfs serve did not start:\n{self.log_text()}")
        self.url = url
        self.port = int(url.rsplit(":", 1)[1])

    def _wait_ready(self, deadline: float) -> str | None:
        assert self.process is not None
        assert self.process.stdout is not None
        url = read_ready_url(self.process.stdout, deadline)
        if url is not None:
            return url
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=SERVER_STOP_TIMEOUT_S)
        self.process.stdout.close()
        return None

    def kill(self) -> None:
        """``kill -9``: no request in flight gets an answer, nothing is flushed."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=SERVER_STOP_TIMEOUT_S)
        assert self.process.stdout is not None
        self.process.stdout.close()

    def stop(self) -> int | None:
        """SIGTERM (SIGKILL if it does not stop in time); returns the exit status, or
        None when it was not running."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=SERVER_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None and not process.stdout.closed:
            process.stdout.close()
        return process.returncode

    def log_text(self) -> str:
        """The current run's log."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tracebacks(self) -> list[str]:
        """The logs of the runs that logged a traceback."""
        return [
            str(path) for path in sorted(self.log_dir.glob("server-*.log"))
            if "Traceback" in path.read_text(errors="replace")
        ]
