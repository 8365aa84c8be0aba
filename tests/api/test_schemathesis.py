"""schemathesis (current major version) against a real ``memfs serve``: does
``/openapi.json`` say what the server does? (the contract is the documentation)

Bounded, seeded runs of ``schemathesis run`` with every check (``--checks all``):
the coverage phase (boundaries in both modes, and undeclared methods: 405 with
``Allow``), fuzzing in both modes (positive cases must be accepted, negative ones
refused) and the stateful phase, which follows the OpenAPI links of
:mod:`memfs.api.openapi` from created objects to their operations. (The schema has
no examples, so the examples phase is not run.) The callers are an admin API key and
a session token (read_write and read_only attachments).

``schemathesis_hooks.py`` keeps out of the positive cases what JSON Schema can't
state, each rule named there, and gives real ids to half the cases.

Time: schemathesis's own CPU dominates (the server answers in milliseconds), so the
phases are spread over the runs: coverage ~11 s of CPU, stateful ~8 s, fuzzing with
one example per operation and mode ~7 s; about 35 s of CPU for both backends, several
times that in wall time on a loaded machine.

A refused negative case may be 413 besides the usual 4xx: memfs answers an oversize
content with 413 (``memfs.api.errors``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.api.conftest import Server

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261201
RUN_TIMEOUT_S = 240
# Budgets: the coverage phase is cheap per case and its count is fixed by the schema;
# fuzzing and stateful cases cost schemathesis far more CPU than the server.
CONFIG = """
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 409, 413]

[phases.coverage]
unexpected-methods = ["PUT", "TRACE"]

[phases.fuzzing.generation]
max-examples = 1

[phases.stateful.generation]
max-examples = 4

[phases.stateful.inference]
algorithms = []
"""


def _seed(server: Server) -> dict[str, str]:
    """Real ids for the path parameters."""
    client = server.client().beta.memory_stores
    store = client.create(name="fuzz")
    memory = client.memories.create(store.id, path="/fuzz/a.md", content="a")
    client.memories.update(memory.id, memory_store_id=store.id, content="b")
    oldest = list(client.memory_versions.list(store.id, memory_id=memory.id))[-1]
    deleted = client.memories.create(store.id, path="/fuzz/deleted.md", content="d")
    client.memories.delete(deleted.id, memory_store_id=store.id)
    session = server.session((store.id, "read_write"))
    return {
        "memory_store_id": store.id,
        "memory_id": memory.id,
        "memory_version_id": oldest.id,
        "deleted_memory_id": deleted.id,
        "session_id": session["id"],
    }


def _schemathesis(
    server: Server, secret: str, ids: dict[str, str], tmp_path: Path, phases: str
) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    env = dict(os.environ)
    env.update(
        SCHEMATHESIS_HOOKS="tests.api.schemathesis_hooks",
        MEMFS_FUZZ_IDS=json.dumps(ids),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    command = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "--no-color",
        "run", f"{server.url}/openapi.json",
        "--header", f"Authorization: Bearer {secret}",
        "--checks", "all",
        "--phases", phases,
        "--mode", "all",
        "--seed", str(SEED),
        "--workers", "1",
        "--generation-allow-x00", "false",
        "--generation-database", "none",
        "--request-timeout", "20",
        "--continue-on-failure",
    ]  # fmt: skip
    finished = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    output = finished.stdout + finished.stderr
    (tmp_path / "schemathesis.out").write_text(output)
    assert finished.returncode == 0, output[-20000:]
    assert re.search(r"Operations: +(\d+) selected", output), output
    for phase in phases.split(","):
        assert re.search(rf"✅ +{phase.capitalize()} \(in", output), output[-20000:]


def _on_postgresql(server: Server) -> bool:
    return server.database.startswith("postgresql")


def test_schemathesis_as_an_admin_key(server: Server, tmp_path: Path) -> None:
    """Coverage (both modes) and stateful on SQLite; stateful only on PostgreSQL: the
    coverage phase's cases follow from the schema alone, which is the same."""
    phases = "stateful" if _on_postgresql(server) else "coverage,stateful"
    _schemathesis(server, server.admin_secret, _seed(server), tmp_path, phases)


def test_schemathesis_as_a_session_token(server: Server, tmp_path: Path) -> None:
    """Fuzzing (random data, both modes), on SQLite only: what a session may do does
    not depend on the database, and the coverage phase's boundaries are the admin
    run's."""
    if _on_postgresql(server):
        pytest.skip("a session's scope does not depend on the backend; run on SQLite")
    ids = _seed(server)
    admin = server.client().beta.memory_stores
    read_only = admin.create(name="fuzz read-only")
    session = server.session((ids["memory_store_id"], "read_write"), (read_only.id, "read_only"))
    # ids["session_id"] is another session: revoking its own would end the run early.
    _schemathesis(server, session["token"], ids, tmp_path, "fuzzing")
