"""Fixtures of the CLI tests (the runner itself is in cli_runner.py)."""

from __future__ import annotations

from cli_runner import cli, store  # noqa: F401  (fixtures)
