"""The container image and the Kubernetes manifests (README "Containers", "Kubernetes").

- ``Dockerfile``: parsed and checked (pinned base, non-root user, health check, port,
  entrypoint, no secret, the patched pyfuse3 of scripts/setup); built and run when a
  container runtime answers here (else skipped, saying why).
- ``deploy/container-entrypoint.sh`` run for real outside a container: ``serve`` until
  the image's own HEALTHCHECK command passes, and ``mount``, the sidecar's mode, until
  SIGTERM commits and unmounts.
- ``deploy/kubernetes/*.yaml``: validated against the Kubernetes JSON schema
  (``kubernetes-validate``, which bundles it: no download), then the fields that matter.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from _support.cli import MEMFS, REPO_ROOT, memfs_env
from _support.mount import wait_until
from _support.serve import SERVER_START_TIMEOUT_S, SERVER_STOP_TIMEOUT_S, read_ready_url

from memfs.core.config import DEFAULT_API_PORT
from memfs.core.model import MemoryStore
from memfs.store import Engine

DOCKERFILE = REPO_ROOT / "Dockerfile"
ENTRYPOINT = REPO_ROOT / "deploy" / "container-entrypoint.sh"
KUBERNETES = REPO_ROOT / "deploy" / "kubernetes"
IMAGE_USER = "10001:10001"

# ------------------------------------------------------------------ the Dockerfile


def instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of a Dockerfile, continuation lines joined, comments
    and blank lines dropped."""
    found: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).partition(" ")
        found.append((keyword.upper(), arguments.strip()))
        pending = ""
    return found


def stages(parsed: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The instructions of each build stage (the global ARGs before the first FROM are
    the first element's)."""
    result: list[list[tuple[str, str]]] = [[]]
    for keyword, arguments in parsed:
        if keyword == "FROM":
            result.append([])
        result[-1].append((keyword, arguments))
    return result


def _setup_value(name: str) -> str:
    match = re.search(rf"^{name}=(\S+)$", (REPO_ROOT / "scripts" / "setup").read_text(), re.M)
    assert match, name
    return match.group(1)


def test_the_dockerfile_serves_as_a_non_root_user_with_a_health_check() -> None:
    parsed = instructions(DOCKERFILE.read_text())
    global_args, build, final = stages(parsed)
    # The base: pinned to a Python patch release and a Debian release, the project's.
    (base_arg,) = [a for k, a in global_args if k == "ARG" and a.startswith("PYTHON_IMAGE=")]
    base = base_arg.removeprefix("PYTHON_IMAGE=")
    match = re.fullmatch(
        r"python:(3\.\d+)\.\d+-slim-(bookworm|trixie)(@sha256:[0-9a-f]{64})?", base
    )
    assert match, f"base image {base!r} is not pinned to a release"
    requires = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert requires["requires-python"] == f">={match.group(1)}"
    assert build[0] == ("FROM", "${PYTHON_IMAGE} AS build")
    assert final[0] == ("FROM", "${PYTHON_IMAGE}")
    # The Debian packages FUSE needs: libfuse3's headers to build pyfuse3, fuse3 to run.
    assert "libfuse3-dev" in " ".join(a for k, a in build if k == "RUN")
    assert any(k == "RUN" and " fuse3 " in a for k, a in final)
    # pyfuse3 patched as scripts/setup patches it, from the same checksummed sdist.
    build_args = dict(a.split("=", 1) for k, a in build if k == "ARG")
    assert build_args["PYFUSE3_VERSION"] == _setup_value("PYFUSE3_VERSION")
    assert build_args["PYFUSE3_SHA256"] == _setup_value("PYFUSE3_SHA256")
    # The final stage: non-root, a volume, the port, a health check, the entrypoint.
    final_dict = {k: a for k, a in final}  # the last of each
    assert final_dict["USER"] == IMAGE_USER
    assert "useradd --system --uid 10001" in " ".join(a for k, a in final if k == "RUN")
    assert final_dict["VOLUME"] == "/var/lib/memfs"
    assert final_dict["EXPOSE"] == str(DEFAULT_API_PORT)
    assert "MEMFS_HOME=/var/lib/memfs" in final_dict["ENV"]
    health = final_dict["HEALTHCHECK"]
    assert "/healthz" in health
    assert json.loads(final_dict["ENTRYPOINT"]) == ["/usr/local/bin/memfs-container"]
    assert json.loads(final_dict["CMD"]) == ["serve"]
    assert ("COPY", "deploy/container-entrypoint.sh /usr/local/bin/memfs-container") in final


def test_the_image_carries_no_secret() -> None:
    text = DOCKERFILE.read_text()
    for keyword, arguments in instructions(text):
        if keyword in ("ENV", "ARG"):
            names = re.findall(r"(\w+)=", arguments) or [arguments.split()[0]]
            for name in names:
                assert not re.search(r"TOKEN|SECRET|PASSWORD|KEY|DATABASE", name), name
    assert not re.search(r"memfs_(sk|st)_\w", text)  # an API key or a session token
    assert not re.search(r"postgres(ql)?://[^\s/@]+:[^\s/@]+@", text)  # a password in a URL
    # The build context: only what the image installs (no .venv, no home, no key).
    ignore = [
        line.strip() for line in (REPO_ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert ignore[0] == "*"  # everything is left out but what is named
    copied = [a.split()[0] for k, a in instructions(text) if k == "COPY" and "--from" not in a]
    for source in copied:
        assert f"!{source}" in ignore or f"!{source.rstrip('/')}/" in ignore, source


def _health_command() -> list[str]:
    """The image's HEALTHCHECK command, with this environment's Python."""
    health = dict(instructions(DOCKERFILE.read_text()))["HEALTHCHECK"]
    command = json.loads(health[health.index("CMD ") + 4:])
    assert command[0] == "/opt/memfs/bin/python"
    return [sys.executable, *command[1:]]


def _entrypoint_env(home: Path, **extra: str) -> dict[str, str]:
    env = memfs_env(home, **extra)
    env["PATH"] = os.pathsep.join([str(Path(MEMFS).parent), env.get("PATH", "")])
    return env


def test_the_entrypoint_serves_until_the_health_check_passes(memfs_home: Path) -> None:
    env = _entrypoint_env(memfs_home, MEMFS_HOST="127.0.0.1", MEMFS_PORT="0")
    process = subprocess.Popen(
        ["sh", str(ENTRYPOINT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = read_ready_url(process.stdout, time.monotonic() + SERVER_START_TIMEOUT_S)
        assert url is not None, "memfs serve did not start"
        port = url.rsplit(":", 1)[1]
        health_env = {**env, "MEMFS_PORT": port}

        def healthy() -> bool:
            return subprocess.run(_health_command(), env=health_env, check=False,
                                  capture_output=True, timeout=10).returncode == 0

        wait_until(healthy, "the image's health check to pass")
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=SERVER_STOP_TIMEOUT_S)
    assert process.returncode == 0, stderr
    # Its logs are JSON lines (--log-format json, the entrypoint's default).
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines
    records = [json.loads(line) for line in lines]
    assert any(r.get("route") == "/healthz" and r.get("status") == 200 for r in records)


def test_the_entrypoint_passes_other_commands_through(memfs_home: Path) -> None:
    env = _entrypoint_env(memfs_home)
    done = subprocess.run(["sh", str(ENTRYPOINT), "memfs", "--version"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("memfs ")


@pytest.fixture
def as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the sidecar mode mounts as root (the entrypoint refuses other uids)")


def test_the_entrypoint_mounts_as_the_sidecar_until_sigterm(
    as_root: None, fuse_available: None, memfs_home: Path, tmp_path: Path,
    store_engine: Engine, make_store: Callable[..., MemoryStore],
) -> None:
    store = make_store("Notes", {"/a.md": "a\n"})
    mountpoint = tmp_path / "memory"  # the emptyDir; made by the entrypoint
    env = _entrypoint_env(memfs_home, MEMFS_MOUNT=str(mountpoint),
                          MEMFS_AGENT_UID=str(os.getuid()), MEMFS_AGENT_GID=str(os.getgid()))
    process = subprocess.Popen(["sh", str(ENTRYPOINT), "mount", "--store", "Notes"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (mountpoint / "notes" / "a.md").exists() or process.poll() is not None,
                   "the sidecar's mount")
        assert process.poll() is None, process.communicate()
        assert (mountpoint / "notes" / "a.md").read_text() == "a\n"
        (mountpoint / "notes" / "agent.md").write_text("written by the agent\n")
        mode = (mountpoint / "notes" / "agent.md").stat().st_mode & 0o777
        assert mode == 0o600  # --umask 077: the agent's alone
    finally:
        process.send_signal(signal.SIGTERM)  # what the kubelet sends after preStop
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert not os.path.ismount(mountpoint)
    memory = store_engine.memories.get_by_path(store.id, "/agent.md")
    assert memory.content == "written by the agent\n"
    for line in filter(str.strip, stderr.splitlines()):
        json.loads(line)  # --log-format json


def test_the_image_builds_and_runs_when_a_container_runtime_answers(tmp_path: Path) -> None:
    runtime = _container_runtime()
    tag = "memfs-test:deploy"
    subprocess.run([runtime, "build", "-t", tag, str(REPO_ROOT)], check=True, timeout=1800)
    name = f"memfs-test-{os.getpid()}"
    subprocess.run([runtime, "run", "-d", "--name", name, tag], check=True, timeout=120)
    try:
        def health() -> str | None:
            status = subprocess.run(
                [runtime, "inspect", "--format", "{{.State.Health.Status}}", name],
                capture_output=True, text=True, check=True, timeout=30,
            ).stdout.strip()
            return status if status in ("healthy", "unhealthy") else None

        assert wait_until(health, "the container's health", timeout_s=120) == "healthy"
        uid = subprocess.run([runtime, "exec", name, "id", "-u"], capture_output=True,
                             text=True, check=True, timeout=30).stdout.strip()
        assert uid == "10001"
    finally:
        subprocess.run([runtime, "rm", "-f", name], check=False, timeout=120)


def _container_runtime() -> str:
    """docker or podman when one answers; else the test is skipped with the reason."""
    reasons = []
    for runtime in ("docker", "podman"):
        if shutil.which(runtime) is None:
            reasons.append(f"no {runtime} on PATH")
            continue
        info = subprocess.run([runtime, "info"], capture_output=True, text=True,
                              check=False, timeout=60)
        if info.returncode == 0:
            return runtime
        last = (info.stderr.strip().splitlines() or ["no output"])[-1]
        reasons.append(f"`{runtime} info` failed: {last}")
    pytest.skip("no container runtime answers here: " + "; ".join(reasons))


# ------------------------------------------------------------------ Kubernetes


def _documents(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((KUBERNETES / name).read_text()) if doc]


@pytest.mark.parametrize("name", ["sidecar-pod.yaml", "server-postgres.yaml"])
def test_the_manifests_follow_the_kubernetes_schema(name: str) -> None:
    version = kubernetes_validate.utils.latest_version()
    for document in _documents(name):
        kubernetes_validate.validate(document, version, strict=True)  # raises when invalid


def test_the_schema_check_catches_a_mistake() -> None:
    (pod,) = _documents("sidecar-pod.yaml")
    pod["spec"]["containers"][0]["volumeMounts"][0]["mountPropgation"] = "Bidirectional"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(pod, kubernetes_validate.utils.latest_version(), strict=True)


def _containers(pod_spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in pod_spec["containers"]}


def _secret_refs(container: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        e["name"]: (e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
        for e in container.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})
    }


def test_the_sidecar_pod_shares_the_mount_by_propagation() -> None:
    (pod,) = _documents("sidecar-pod.yaml")
    assert pod["kind"] == "Pod"
    spec = pod["spec"]
    containers = _containers(spec)
    memfs, agent = containers["memfs"], containers["agent"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    # The mount's volume is an emptyDir: memfs mounts into it Bidirectional, the agent
    # sees it HostToContainer.
    (memory_mount,) = [m for m in memfs["volumeMounts"] if m["mountPath"] == "/mnt/memory"]
    assert "emptyDir" in volumes[memory_mount["name"]]
    assert memory_mount["mountPropagation"] == "Bidirectional"
    (agent_mount,) = agent["volumeMounts"]
    assert agent_mount["name"] == memory_mount["name"]
    assert agent_mount["mountPropagation"] == "HostToContainer"
    # Privileged: memfs only; the agent runs as the uid the mount is made for.
    assert memfs["securityContext"]["privileged"] is True
    assert memfs["securityContext"]["runAsUser"] == 0
    assert agent["securityContext"]["privileged"] is False
    assert agent["securityContext"]["allowPrivilegeEscalation"] is False
    assert agent["securityContext"]["runAsNonRoot"] is True
    env = {e["name"]: e.get("value") for e in memfs["env"]}
    assert env["MEMFS_AGENT_UID"] == str(agent["securityContext"]["runAsUser"])
    assert env["MEMFS_AGENT_GID"] == str(agent["securityContext"]["runAsGroup"])
    assert env["MEMFS_MOUNT"] == memory_mount["mountPath"]
    # /dev/fuse from the node.
    (fuse,) = [m for m in memfs["volumeMounts"] if m["mountPath"] == "/dev/fuse"]
    assert volumes[fuse["name"]]["hostPath"] == {"path": "/dev/fuse", "type": "CharDevice"}
    # The entrypoint's sidecar mode, from a server; the token from a Secret, agent-free.
    assert memfs["args"][0] == "mount"
    assert "--api" in memfs["args"]
    assert _secret_refs(memfs) == {"MEMFS_TOKEN": ("agent-1-memfs", "token")}
    assert not any("TOKEN" in e["name"] for e in agent.get("env", []))
    assert memfs["lifecycle"]["preStop"]["exec"]["command"] == ["memfs", "umount", "/mnt/memory"]
    assert spec["terminationGracePeriodSeconds"] >= 30


def test_the_server_deployment_runs_on_postgresql_behind_probes() -> None:
    deployment, service = _documents("server-postgres.yaml")
    assert (deployment["kind"], service["kind"]) == ("Deployment", "Service")
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    (memfs,) = pod["spec"]["containers"]
    assert memfs["args"] == ["serve"]
    assert ":" in memfs["image"]
    assert not memfs["image"].endswith(":latest")
    (port,) = memfs["ports"]
    assert port["containerPort"] == DEFAULT_API_PORT
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]
    assert _secret_refs(memfs) == {"MEMFS_DATABASE": ("memfs-database", "url")}
    for probe in ("readinessProbe", "livenessProbe"):
        assert memfs[probe]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    pod_security = pod["spec"]["securityContext"]
    assert pod_security["runAsNonRoot"] is True
    assert f'{pod_security["runAsUser"]}:{pod_security["runAsGroup"]}' == IMAGE_USER
    assert memfs["securityContext"]["allowPrivilegeEscalation"] is False
    assert memfs["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert "privileged" not in memfs["securityContext"]
    resources = memfs["resources"]
    assert resources["requests"]["cpu"]
    assert resources["requests"]["memory"]
    assert resources["limits"]["memory"]
    # $MEMFS_HOME is writable under a read-only root filesystem.
    assert memfs["securityContext"]["readOnlyRootFilesystem"] is True
    assert {m["mountPath"] for m in memfs["volumeMounts"]} >= {"/var/lib/memfs", "/tmp"}


def test_the_readme_shows_the_manifests() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    for name in ("sidecar-pod.yaml", "server-postgres.yaml"):
        assert f"deploy/kubernetes/{name}" in readme

