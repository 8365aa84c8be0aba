"""``memfs serve`` startup failures: one error line and exit status 1, never a traceback."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from _support.cli import Cli


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port another socket is listening on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_port_in_use_is_one_line(cli: Cli, busy_port: int) -> None:
    assert (
        cli.error("serve", "--port", str(busy_port))
        == f"cannot listen on 127.0.0.1:{busy_port}: address already in use"
    )


def test_unknown_host_is_one_line(cli: Cli) -> None:
    error = cli.error("serve", "--host", "no-such-host.invalid", "--port", "0")
    assert error.startswith("cannot listen on no-such-host.invalid:0: "), error


def test_port_out_of_range_is_a_usage_error(cli: Cli) -> None:
    result = cli.run("serve", "--port", "70000", expect=2)
    assert "--port" in result.stderr


def test_unreachable_postgresql_is_one_line(cli: Cli, closed_port: int) -> None:
    url = f"postgresql://memfs@127.0.0.1:{closed_port}/memfs"
    error = cli.error("serve", "--port", "0", "--database", url)
    assert error.startswith("cannot open the store database: connection failed"), error
    assert "Connection refused" in error


@pytest.mark.parametrize("url", ["mysql://memfs@localhost/memfs", "postgresql://memfs@:x/"])
def test_unsupported_or_malformed_database_url_is_one_line(cli: Cli, url: str) -> None:
    error = cli.error("serve", "--port", "0", "--database", url)
    assert error.startswith("cannot open the store database: "), error
    assert error.endswith("(use a SQLite file path, sqlite:///PATH or postgresql://USER@HOST/DB)")


def test_key_and_session_commands_report_an_unreachable_database_in_one_line(
    cli: Cli, closed_port: int
) -> None:
    url = f"postgresql://memfs@127.0.0.1:{closed_port}/memfs"
    for args in (("key", "list"), ("session", "show", "sesn_x")):
        error = cli.error(*args, "--database", url)
        assert error.startswith("cannot open the store database: "), error
