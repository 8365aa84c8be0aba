"""SPEC §3: ``memfs serve --certfile/--keyfile`` speaks HTTPS; serving a
non-loopback address without TLS warns that tokens would cross the network in clear."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest
from _support.cli import Cli, memfs_env
from _support.serve import ServeProcess

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is missing")


def self_signed(directory: Path, name: str = "server") -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, and its key, made by ``openssl``."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def admin_secret(cli: Cli) -> str:
    created = cli.run("key", "create", "--scope", "admin", "--json")
    return str(json.loads(created.stdout)["secret"])


def test_serve_with_a_certificate_speaks_https_only(cli: Cli, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    secret = admin_secret(cli)
    server = ServeProcess(
        cli.database, tmp_path, "--certfile", str(cert), "--keyfile", str(key),
        env=memfs_env(cli.home),
    )  # fmt: skip
    try:
        assert server.url.startswith("https://127.0.0.1:"), server.url
        trusted = ssl.create_default_context(cafile=str(cert))
        headers = {"authorization": f"Bearer {secret}"}
        with httpx.Client(verify=trusted, headers=headers, timeout=30) as client:
            response = client.get(f"{server.url}/v1/memory_stores")
        assert response.status_code == 200, response.text
        assert response.json()["data"] == []
        plain = server.url.replace("https://", "http://")
        with httpx.Client(headers=headers, timeout=30) as client, pytest.raises(httpx.HTTPError):
            client.get(f"{plain}/v1/memory_stores")  # no plain HTTP beside TLS
        with httpx.Client(timeout=30) as client, pytest.raises(httpx.ConnectError):
            client.get(f"{server.url}/v1/memory_stores")  # an unknown CA is refused
    finally:
        assert server.stop() == 0, server.log_text()
    assert "without TLS" not in server.log_text()


def test_a_non_loopback_address_without_tls_warns(cli: Cli, tmp_path: Path) -> None:
    server = ServeProcess(cli.database, tmp_path, "--host", "0.0.0.0", env=memfs_env(cli.home))
    try:
        log = server.log_text()
    finally:
        assert server.stop() == 0, server.log_text()
    [warning] = [line for line in log.splitlines() if "without TLS" in line]
    assert "WARNING" in warning, warning
    assert "--certfile" in warning, warning


def test_loopback_without_tls_does_not_warn(cli: Cli, tmp_path: Path) -> None:
    server = ServeProcess(cli.database, tmp_path, env=memfs_env(cli.home))
    assert server.stop() == 0
    assert "without TLS" not in server.log_text()


def test_half_or_broken_tls_settings_are_one_error_line(cli: Cli, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    other_cert, _ = self_signed(tmp_path, "other")
    assert cli.error("serve", "--port", "0", "--certfile", str(cert)) == (
        "TLS needs both --certfile and --keyfile"
    )
    error = cli.error("serve", "--port", "0", "--certfile", str(other_cert), "--keyfile", str(key))
    assert error.startswith(f"cannot use the TLS certificate {other_cert} with the key {key}: ")
    missing = tmp_path / "missing.crt"
    error = cli.error("serve", "--port", "0", "--certfile", str(missing), "--keyfile", str(key))
    assert error.startswith(f"cannot use the TLS certificate {missing}"), error


def test_a_stop_asked_the_moment_the_server_is_ready_is_a_clean_shutdown(
    cli: Cli, tmp_path: Path
) -> None:
    """SIGTERM right after the ready line (as systemd or a test harness may send it) is
    caught: the signal receiver is open before the line is printed, so the server never
    dies of the signal's default action (exit -15)."""
    for _ in range(3):
        server = ServeProcess(cli.database, tmp_path, env=memfs_env(cli.home))
        assert server.stop() == 0, server.log_text()
        assert "received SIGTERM, shutting down" in server.log_text()
