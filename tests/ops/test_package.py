"""The package (README "Installing"): its distribution name, licence and one version."""

from __future__ import annotations

import importlib.metadata
import tomllib

from _support.cli import REPO_ROOT, run_memfs

import memfs


def test_the_distribution_is_agent_memfs_with_the_memfs_command() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "agent-memfs"  # "memfs" is taken on PyPI
    assert project["scripts"]["memfs"] == "memfs.cli:main"
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert (REPO_ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert project["dynamic"] == ["version"]  # memfs.__version__, the one place


def test_one_version_everywhere() -> None:
    assert importlib.metadata.version("agent-memfs") == memfs.__version__
    printed = run_memfs("--version")
    assert printed.returncode == 0
    assert printed.stdout == f"memfs {memfs.__version__}\n"
