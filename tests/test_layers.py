"""The house layering rules, checked on the source with ``ast``:

    model/rules/errors/config/ids/wire  ←  store (only SQL)  ←  backend  ←  fuse (only pyfuse3),
                                                                           remote,
                                                               api (only HTTP)  ←  cli

``fuse`` and ``remote`` both point down at ``backend`` and never at each other.

Every ``import``/``from … import`` statement counts, wherever it is (inside functions and
``TYPE_CHECKING`` blocks too); relative imports are resolved.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memfs"

CORE = (
    "memfs.core.model",
    "memfs.core.rules",
    "memfs.core.errors",
    "memfs.core.config",
    "memfs.core.ids",
    "memfs.wire",
    "memfs.core.query",
    "memfs.core.records",
    "memfs.cli.records_seed",
    "memfs.core.visibility",
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(source: str, module: str, is_package: bool) -> Iterator[str]:
    """Every module ``source`` imports, as absolute dotted names.

    ``from X import a`` yields ``X`` and ``X.a`` (``a`` may be a submodule).
    """
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts)
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            yield target
            for alias in node.names:
                if alias.name != "*":
                    yield f"{target}.{alias.name}"


def source_imports(directory: Path = PACKAGE) -> dict[str, set[str]]:
    """``{module: imported module names}`` for every module under ``directory`` (the
    memfs package unless told)."""
    result: dict[str, set[str]] = {}
    for path in sorted(directory.rglob("*.py")):
        module = module_name(path)
        result[module] = set(
            imported_names(path.read_text(), module, is_package=path.name == "__init__.py")
        )
    return result


IMPORTS = source_imports()
TEST_IMPORTS = source_imports(ROOT / "tests")


def within(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def offenders(importers: tuple[str, ...] | None, exempt: tuple[str, ...], *targets: str) -> list:
    """``(module, imported)`` pairs where a module (under ``importers``, or any module when
    None) that is not under ``exempt`` imports something under ``targets``."""
    found = []
    for module, names in IMPORTS.items():
        if importers is not None and not within(module, *importers):
            continue
        if exempt and within(module, *exempt):
            continue
        found.extend((module, name) for name in sorted(names) if within(name, *targets))
    return found


def test_the_scan_sees_the_package() -> None:
    assert "memfs.store.engine" in IMPORTS
    assert "memfs.core.rules" in IMPORTS
    assert "sqlalchemy" in IMPORTS["memfs.store._connections"]
    assert "memfs.core.rules" in IMPORTS["memfs.store.memories"]


def test_relative_imports_are_resolved() -> None:
    source = "from . import fsck\nfrom ..rules import slugify\nimport pyfuse3.x\n"
    names = set(imported_names(source, "memfs.store.engine", is_package=False))
    assert {"memfs.store", "memfs.store.fsck", "memfs.core.rules", "memfs.core.rules.slugify"} <= names
    assert "pyfuse3.x" in names
    names = set(imported_names("from .engine import Engine\n", "memfs.store", is_package=True))
    assert "memfs.store.engine" in names
    nested = "def f():\n    if True:\n        from memfs.api import app\n"
    assert "memfs.api" in set(imported_names(nested, "memfs.core.rules", is_package=False))


@pytest.mark.parametrize(
    ("libraries", "owner"),
    [
        (("sqlalchemy", "alembic"), "memfs.store"),
        (("pyfuse3",), "memfs.fuse"),
        (("fastapi", "starlette", "hypercorn"), "memfs.api"),
        (("mcp",), "memfs.mcp"),
        (("anthropic",), "memfs.memory_tool"),
    ],
)
def test_only_one_layer_imports_each_library(libraries: tuple[str, ...], owner: str) -> None:
    assert offenders(None, (owner,), *libraries) == []


def test_core_imports_no_upper_layer() -> None:
    upper = ("memfs.store", "memfs.fuse", "memfs.api", "memfs.cli")
    assert offenders(CORE, (), *upper) == []


def test_store_imports_neither_fuse_nor_api_nor_cli() -> None:
    assert offenders(("memfs.store",), (), "memfs.fuse", "memfs.api", "memfs.cli") == []


def test_fuse_and_api_never_import_cli() -> None:
    assert offenders(("memfs.fuse", "memfs.api"), (), "memfs.cli") == []


def test_remote_never_imports_fuse() -> None:
    assert offenders(("memfs.remote",), (), "memfs.fuse") == []


def test_fuse_imports_neither_api_nor_remote() -> None:
    assert offenders(("memfs.fuse",), (), "memfs.api", "memfs.remote") == []


def test_backend_imports_no_layer_above_it() -> None:
    above = ("memfs.fuse", "memfs.remote", "memfs.api", "memfs.cli")
    assert offenders(("memfs.backend",), (), *above) == []


def test_the_memory_front_ends_sit_on_one_core() -> None:
    """memfs.memory_tool (the SDK tool and the memory file service) is the core of both
    front ends; memfs.mcp is above it, and neither reaches into a mount or the CLI."""
    front_ends = ("memfs.memory_tool", "memfs.mcp")
    assert offenders(front_ends, (), "memfs.cli", "memfs.fuse") == []
    assert offenders(("memfs.memory_tool",), (), "memfs.mcp", "memfs.api") == []


# The store's face is memfs.store's __all__; its modules are private to it.
STORE_INSIDES = (
    "memfs.store.engine",
    "memfs.store._db",
    "memfs.store._common",
    "memfs.store._hot",
    "memfs.store.access",
    "memfs.store.blobs",
    "memfs.store.feed",
    "memfs.store.notify",
    "memfs.store.listing",
    "memfs.store.memories",
    "memfs.store.search",
    "memfs.store.semantic",
    "memfs.store.embedder",
    "memfs.store.records",
    "memfs.store.visibility",
    "memfs.store.renames",
    "memfs.store._connections",
    "memfs.store.stores",
    "memfs.store.versions",
    "memfs.store.schema",
    "memfs.store.fsck",
    "memfs.store.identities",
    "memfs.store.retention",
    "memfs.store.migrations",
)


def test_nothing_outside_the_store_imports_its_modules() -> None:
    """Callers use the facade through ``memfs.store`` (issue 9); only the store's own
    modules and its own tests (tests/store) reach inside."""
    assert offenders(None, ("memfs.store",), *STORE_INSIDES) == []
    outside_tests = [
        (module, name)
        for module, names in TEST_IMPORTS.items()
        if not within(module, "tests.store")
        for name in sorted(names)
        if within(name, *STORE_INSIDES)
    ]
    assert outside_tests == []
    assert "memfs.store" in TEST_IMPORTS["tests.conftest"]


def test_every_module_of_the_store_is_listed() -> None:
    store_modules = {m for m in IMPORTS if m.startswith("memfs.store.")}
    assert {m for m in store_modules if not within(m, "memfs.store.migrations")} == set(
        STORE_INSIDES
    ) - {"memfs.store.migrations"}


def test_the_store_exports_exactly_its_face() -> None:
    import memfs.store

    assert set(memfs.store.__all__) == {
        "API_KEY_SECRET_PREFIX",
        "SESSION_TOKEN_PREFIX",
        "Engine",
        "PruneResult",
        "ResourceSpec",
        "fsck_database",
        "open_engine",
    }
    namespace: dict[str, object] = {}
    exec("from memfs.store import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(memfs.store.__all__)
