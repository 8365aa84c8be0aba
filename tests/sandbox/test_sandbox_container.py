"""The container recipe (SPEC §4 Sandboxes): ``deploy/entrypoint.sh``, the entrypoint of
``deploy/Dockerfile``, mounts as root for the agent user, runs the command as that
user, and unmounts when it ends, with every write committed. Run here in a private
mount namespace with a throwaway user (no container runtime needed).
"""

from __future__ import annotations

import pwd
import sys
from collections.abc import Callable
from pathlib import Path

from _support.cli import REPO_ROOT
from _support.mount import live, wait_until
from sandbox_helpers import Agent, in_namespace

from memfs.core.model import MemoryStore
from memfs.fuse.status import status_path
from memfs.store import Engine

ENTRYPOINT = REPO_ROOT / "deploy/entrypoint.sh"


def test_the_entrypoint_runs_the_agent_on_its_own_mount(
    fuse_available: None, agents: tuple[Agent, Agent], make_store: Callable[..., MemoryStore],
    store_engine: Engine, shared_dir: Path,
) -> None:
    agent, _ = agents
    notes = make_store("Notes", {"/hello.md": "hello\n"})
    mountpoint = shared_dir / "memory"
    done = in_namespace(
        f"""{ENTRYPOINT} sh -c 'id -u; echo "$HOME $USER ${{MEMFS_TOKEN:-no token}}"; \
            cat {mountpoint}/notes/hello.md; echo agent > {mountpoint}/notes/agent.md; \
            stat -c %A {mountpoint}/notes/agent.md'""",
        env={
            "MEMFS": str(Path(sys.executable).parent / "memfs"),
            "MEMFS_AGENT_USER": agent.name,
            "MEMFS_MOUNT": str(mountpoint),
            "MEMFS_MOUNT_ARGS": "--store Notes",
            "MEMFS_TOKEN": "memfs_st_not-for-the-agent",
        },
    )
    home = pwd.getpwnam(agent.name).pw_dir
    assert done.stdout.splitlines() == [
        str(agent.uid), f"{home} {agent.name} no token", "hello", "-rw-------",
    ]
    assert f"unmounted {mountpoint}" in done.stderr
    wait_until(lambda: not status_path(str(mountpoint)).exists(), "the daemon to finish")
    assert live(store_engine, notes.id)["/agent.md"].content == "agent\n"
    assert list(store_engine.iter_fsck_findings()) == []
