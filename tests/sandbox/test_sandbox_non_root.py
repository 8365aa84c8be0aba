"""Non-root mounting (SPEC §4 Sandboxes): a user who can open
``/dev/fuse`` and run ``fusermount3`` mounts for itself; when ``/dev/fuse`` can't be
opened, or ``allow_other`` is not allowed, the error says exactly why and what fixes it.

Each test runs in a private mount namespace where a device node of its own (mode 0666
or 0600) is bound over ``/dev/fuse`` and a ``fuse.conf`` of its own over
``/etc/fuse.conf``: the machine's own device and policy are left alone.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from sandbox_helpers import Agent, agent_python, in_namespace

from memfs.store import open_engine


def _namespace_script(
    agent: Agent, shared: Path, body: str, *, device_mode: str, user_allow_other: bool
) -> str:
    """A script that prepares /dev/fuse and /etc/fuse.conf in the namespace, then runs
    ``body`` with ``$AS_AGENT`` (the prefix that runs a command as the agent with memfs
    importable) and ``$MEMFS`` (``$AS_AGENT python -m memfs.cli``)."""
    python, env = agent_python()
    env = dict(env, MEMFS_HOME=str(shared / "home"))
    as_agent = " ".join(
        ["runuser", "-u", agent.name, "--", "env", *(f"{k}={v}" for k, v in env.items())]
    )
    devices = shared / "dev"
    conf = shared / "fuse.conf"
    conf.write_text("user_allow_other\n" if user_allow_other else "# mount_max = 1000\n")
    return f"""
        mkdir -p {devices}
        mount -t tmpfs -o mode=755 memfs-test-dev {devices}
        mknod -m {device_mode} {devices}/fuse c 10 229
        mount --bind {devices}/fuse /dev/fuse
        mount --bind {conf} /etc/fuse.conf
        AS_AGENT={shlex.quote(as_agent)}
        MEMFS="$AS_AGENT {shlex.quote(' '.join(python))} -m memfs.cli"
        MOUNTING="$AS_AGENT {shlex.quote(' '.join(python))} -m memfs.cli.mounting"
        # A failed step must not leave the agent's daemon behind in this namespace.
        trap '$MOUNTING umount {shared / "mnt"} >/dev/null 2>&1 || true' EXIT
        {body}
    """


def _agent_dirs(agent: Agent, shared: Path) -> tuple[Path, Path]:
    home = shared / "home"
    mountpoint = shared / "mnt"
    for path in (home, mountpoint):
        path.mkdir(mode=0o700)
        os.chown(path, agent.uid, agent.gid)
    return home, mountpoint


def test_a_non_root_user_mounts_for_itself(
    fuse_available: None, agents: tuple[Agent, Agent], shared_dir: Path
) -> None:
    agent, _ = agents
    home, mountpoint = _agent_dirs(agent, shared_dir)
    body = f"""
        $MEMFS store create Notes >/dev/null
        $MOUNTING mount {mountpoint} --store Notes
        grep " {mountpoint} " /proc/self/mountinfo
        $AS_AGENT sh -c 'echo mine > {mountpoint}/notes/a.md && cat {mountpoint}/notes/a.md'
        $AS_AGENT stat -c '%u %A' {mountpoint}/notes/a.md
        $MOUNTING umount {mountpoint}
    """
    done = in_namespace(_namespace_script(
        agent, shared_dir, body, device_mode="0666", user_allow_other=False
    ))
    mountinfo, content, owner_mode, unmounted = done.stdout.splitlines()[-4:]
    assert f"user_id={agent.uid}" in mountinfo  # fusermount3 made it for the agent
    assert content == "mine"
    assert owner_mode == f"{agent.uid} -rw-r--r--"
    assert unmounted == f"unmounted {mountpoint}"
    engine = open_engine(str(home / "memfs.db"))
    try:
        (store,) = engine.stores.list(limit=10).items
        (memory,) = engine.memories.all(store.id)
        assert engine.memories.get(store.id, memory.id, with_content=True).content == "mine\n"
    finally:
        engine.close()


def test_an_unopenable_dev_fuse_is_named_with_its_mode_and_the_fix(
    fuse_available: None, agents: tuple[Agent, Agent], shared_dir: Path
) -> None:
    agent, _ = agents
    _, mountpoint = _agent_dirs(agent, shared_dir)
    body = f"""
        $MEMFS store create Notes >/dev/null
        $MOUNTING mount {mountpoint} --store Notes 2>&1 && exit 3 || true
    """
    done = in_namespace(_namespace_script(
        agent, shared_dir, body, device_mode="0600", user_allow_other=False
    ))
    assert done.stdout.strip() == (
        f"memfs: error: can't open /dev/fuse (crw------- root:root) as uid {agent.uid}: "
        f"Permission denied; give uid {agent.uid} read-write access to it: `chmod 0666 "
        "/dev/fuse` (the usual mode) or add the user to group root; in a container, "
        "run it with `--device /dev/fuse`"
    )


def test_allow_other_without_user_allow_other_says_so(
    fuse_available: None, agents: tuple[Agent, Agent], shared_dir: Path
) -> None:
    agent, _ = agents
    _, mountpoint = _agent_dirs(agent, shared_dir)
    body = f"""
        $MEMFS store create Notes >/dev/null
        $MOUNTING mount {mountpoint} --store Notes --allow-other 2>&1 && exit 3 || true
        echo ---
        grep -c " {mountpoint} " /proc/self/mountinfo || true
    """
    done = in_namespace(_namespace_script(
        agent, shared_dir, body, device_mode="0666", user_allow_other=False
    ))
    message, _, mounted = done.stdout.partition("---\n")
    assert message.strip() == (
        "memfs: error: allow_other needs a line `user_allow_other` in /etc/fuse.conf when "
        f"a non-root user (uid {agent.uid}) mounts; add it as root (memfs does not edit "
        "/etc/fuse.conf), or mount as root"
    )
    assert mounted.strip() == "0"


def test_allow_other_with_user_allow_other_lets_a_non_root_mounter_share(
    fuse_available: None, agents: tuple[Agent, Agent], shared_dir: Path
) -> None:
    agent, other = agents
    _, mountpoint = _agent_dirs(agent, shared_dir)
    mountpoint.chmod(0o755)
    body = f"""
        $MEMFS store create Notes >/dev/null
        $MOUNTING mount {mountpoint} --store Notes --allow-other --umask 022
        $AS_AGENT sh -c 'echo shared > {mountpoint}/notes/a.md'
        runuser -u {other.name} -- cat {mountpoint}/notes/a.md
        runuser -u {other.name} -- sh -c 'echo no > {mountpoint}/notes/b.md' 2>&1 || true
        $MOUNTING umount {mountpoint}
    """
    done = in_namespace(_namespace_script(
        agent, shared_dir, body, device_mode="0666", user_allow_other=True
    ))
    mounted, shared, refused, unmounted = done.stdout.splitlines()
    assert mounted.startswith(f"mounted {mountpoint} ")
    assert shared == "shared"
    assert "Permission denied" in refused  # 0644, owned by the agent
    assert unmounted == f"unmounted {mountpoint}"
