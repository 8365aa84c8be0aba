"""Fixtures of the CLI tests (the runner itself is in cli_runner.py)."""

from __future__ import annotations

import warnings

import pytest
from cli_runner import cli, store  # noqa: F401  (fixtures)


@pytest.fixture(scope="session", autouse=True)
def _import_schemathesis_quietly() -> None:
    """schemathesis' pytest plugin imports ``schemathesis._hypothesis`` inside the first
    test, where jsonschema's DeprecationWarning would be an error (warnings are errors):
    import it once, quietly, as tests/api and tests/fuse do, so this directory also runs
    on its own."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "jsonschema.exceptions.RefResolutionError", DeprecationWarning
        )
        import schemathesis._hypothesis  # noqa: F401
