"""``--log-format json`` (README "Logs"): ``memfs serve`` and mount daemons log one
JSON object per line, with the ids involved; the HTTP access log is in the same form;
and no secret or memory content reaches a log, whatever is done."""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from _support.mount import Mounter, run_python, wait_until
from _support.serve import ServeProcess

from memfs import logs
from memfs.core.model import Access, MemoryStore, Scope
from memfs.store import API_KEY_SECRET_PREFIX, SESSION_TOKEN_PREFIX, Engine, ResourceSpec

REQUIRED = ("time", "level", "logger", "message")


def json_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a log, each of which must be one JSON object with the required
    fields."""
    entries = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        assert isinstance(entry, dict), line
        assert all(isinstance(entry.get(name), str) for name in REQUIRED), line
        entries.append(entry)
    return entries


def test_json_logs_name_ids_and_keep_no_secret_or_content(
    mounter: Mounter, store_engine: Engine, make_store: Callable[..., MemoryStore],
    memfs_home: Path, tmp_path: Path,
) -> None:
    store = make_store("Notes", {"/a.md": "a\n"})
    _, key_secret = store_engine.api_keys.create("logs", [Scope.ADMIN])
    session, token = store_engine.sessions.create([ResourceSpec(store.id, Access.READ_WRITE)])
    assert token is not None
    canaries = [f"CONTENT-CANARY-{uuid.uuid4().hex}" for _ in range(3)]
    server = ServeProcess(memfs_home / "memfs.db", tmp_path, "--log-format", "json")
    try:
        headers = {"Authorization": f"Bearer {key_secret}"}
        with httpx.Client(base_url=server.url, headers=headers) as client:
            created = client.post(
                f"/v1/memory_stores/{store.id}/memories",
                json={"path": "/api.md", "content": f"{canaries[0]}\n"},
            )
            assert created.status_code == 200, created.text
            memory_id = created.json()["id"]
            assert client.get(
                f"/v1/memory_stores/{store.id}/memories/{memory_id}"
            ).status_code == 200
            refused = client.get(
                "/v1/memory_stores", headers={"Authorization": f"Bearer {key_secret}x"}
            )
            assert refused.status_code == 401
        remote = mounter.mount_remote(server.url, token, extra=("--log-format", "json"))
        local = mounter.mount("Notes", extra_args=("--log-format", "json"))
        run_python(f"""
            import pathlib
            pathlib.Path({str(remote / "notes" / "remote.md")!r}).write_text("{canaries[1]}\\n")
            pathlib.Path({str(local / "notes" / "local.md")!r}).write_text("{canaries[2]}\\n")
        """)
        wait_until(
            lambda: {"/remote.md", "/local.md"}
            <= {m.path for m in store_engine.memories.list(store.id).items},
            "both writes",
        )
        for mount in (remote, local):
            mounter.unmount(mount)
    finally:
        assert server.stop() == 0

    server_log = json_lines(server.log_path)
    access = [e for e in server_log if e["logger"] == "memfs.access"]
    posted = next(e for e in access if e["method"] == "POST")
    assert posted["status"] == 200
    assert posted["store_id"] == store.id
    assert posted["route"] == "/v1/memory_stores/{memory_store_id}/memories"
    assert posted["request_id"].startswith("req_")
    assert posted["api_key_id"].startswith("apikey_")
    read = next(e for e in access if e.get("memory_id") == memory_id)
    assert read["status"] == 200
    assert any(e["status"] == 401 for e in access)
    # The remote mount's requests carry its session.
    assert any(e.get("session_id") == session.id for e in access)

    remote_log = json_lines(remote.log_file)
    local_log = json_lines(local.log_file)
    assert any(e.get("session_id") for e in local_log)  # "mounted … session sesn_…"
    for entries in (remote_log, local_log, server_log):
        assert not [e for e in entries if e["level"] in ("WARNING", "ERROR", "CRITICAL")]

    for path in (server.log_path, remote.log_file, local.log_file):
        text = path.read_text()
        for secret in (key_secret, token):
            assert secret not in text, f"a secret in {path}"
            assert secret[len("memfs_sk_"):] not in text, f"a secret's tail in {path}"
        for canary in canaries:
            assert canary not in text, f"memory content in {path}"


def test_a_secret_given_to_a_logger_is_cut_to_its_prefix() -> None:
    stream = io.StringIO()
    handler = logs.configure(
        logging.StreamHandler(stream), "json",
        secret_prefixes=(API_KEY_SECRET_PREFIX, SESSION_TOKEN_PREFIX),
    )
    logger = logging.getLogger("memfs.test.secrets")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("refused %s for mem_0123456789abcdefghjkmnpqrs", "memfs_st_Abc-123_x")
        try:
            raise ValueError("bad key memfs_sk_Zyx987")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "refused memfs_st_… for mem_0123456789abcdefghjkmnpqrs"
    assert first["memory_id"] == "mem_0123456789abcdefghjkmnpqrs"
    assert first["level"] == "WARNING"
    assert first["logger"] == "memfs.test.secrets"
    assert "memfs_sk_…" in second["exception"]
    assert "Zyx987" not in stream.getvalue()
