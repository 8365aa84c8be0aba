"""The house layering rules, checked on the source with ``ast``. The floors, lowest first
(a package may import the floors below it, never one beside or above it)::

    core                          pure: model, errors, rules, ids, config, query, records,
                                  visibility (no I/O, no SQL, no HTTP, no pyfuse3)
    home, wire, metrics, logs     durable private files; the api-contract shapes; the
                                  Prometheus families; the log formats
    store                         the only SQL
    backend, dreams, transfer     the Backend port (and its embedded adapter); the dreamers
                                  and the job that runs them (SPEC §11); import and export
                                  of folders and JSON Lines (the CLI's and the console's)
    fuse, remote, api             the only pyfuse3; the remote client; the only HTTP server
    memory_tool, console          the SDK memory tool and its file service; the web console
                                  (part of the HTTP layer, over api's auth)
    mcp                           the MCP server (over memory_tool and api's auth)
    cli                           the composition root

Every ``import``/``from … import`` statement counts, wherever it is (inside functions and
``TYPE_CHECKING`` blocks too); relative imports are resolved. No module imports itself
back through a circle (``from package import submodule`` counts as importing the
submodule only).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memfs"

# The floor of each package of memfs (see the module docstring).
FLOORS = {
    "memfs.core": 0,
    "memfs.home": 1,
    "memfs.wire": 1,
    "memfs.metrics": 1,
    "memfs.logs": 1,
    "memfs.store": 2,
    "memfs.backend": 3,
    "memfs.dreams": 3,
    "memfs.transfer": 3,
    "memfs.fuse": 4,
    "memfs.remote": 4,
    "memfs.api": 4,
    "memfs.memory_tool": 5,
    "memfs.console": 5,
    "memfs.mcp": 6,
    "memfs.cli": 7,
}
CORE = ("memfs.core",)


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
    source = "from . import fsck\nfrom ..core.rules import slugify\nimport pyfuse3.x\n"
    names = set(imported_names(source, "memfs.store.engine", is_package=False))
    assert {"memfs.store", "memfs.store.fsck", "memfs.core.rules", "memfs.core.rules.slugify"} \
        <= names
    assert "pyfuse3.x" in names
    names = set(imported_names("from .engine import Engine\n", "memfs.store", is_package=True))
    assert "memfs.store.engine" in names
    nested = "def f():\n    if True:\n        from memfs.api import app\n"
    assert "memfs.api" in set(imported_names(nested, "memfs.core.rules", is_package=False))


def floor_of(module: str) -> tuple[str, int] | None:
    """The package of ``module`` in :data:`FLOORS` and its floor (None: not in memfs, or
    the top-level ``memfs`` package itself)."""
    for package, floor in FLOORS.items():
        if within(module, package):
            return package, floor
    return None


def test_every_module_of_memfs_is_on_a_floor() -> None:
    loose = [m for m in IMPORTS if m not in ("memfs", "memfs.__main__") and not floor_of(m)]
    assert loose == []


def test_no_package_imports_a_floor_beside_or_above_it() -> None:
    found = []
    for module, names in IMPORTS.items():
        here = floor_of(module)
        if here is None:
            continue
        for name in sorted(names):
            there = floor_of(name)
            if there is not None and there[0] != here[0] and there[1] >= here[1]:
                found.append((module, name))
    assert found == []


def _imported_modules(path: Path, module: str) -> set[str]:
    """The memfs modules ``path`` imports, counting ``from package import submodule``
    as an import of the submodule alone."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base = ".".join(base_parts[: len(base_parts) - (node.level - 1)])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in IMPORTS else target)
    return {name for name in found if name in IMPORTS and name != module}


def test_no_module_imports_itself_back_through_a_circle() -> None:
    graph = {
        module_name(path): _imported_modules(path, module_name(path))
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    circles = []
    for start in graph:
        # Is ``start`` reachable from what it imports?
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            module = todo.pop()
            if module == start:
                circles.append(start)
                break
            if module not in seen:
                seen.add(module)
                todo.extend(graph.get(module, ()))
    assert circles == []


@pytest.mark.parametrize(
    ("libraries", "owner"),
    [
        (("sqlalchemy", "alembic"), "memfs.store"),
        (("pyfuse3",), "memfs.fuse"),
        (("fastapi", "starlette", "hypercorn"), ("memfs.api", "memfs.console")),
        (("mcp",), "memfs.mcp"),
        (("anthropic",), "memfs.memory_tool"),
        (("prometheus_client",), "memfs.metrics"),
    ],
)
def test_only_one_layer_imports_each_library(
    libraries: tuple[str, ...], owner: str | tuple[str, ...]
) -> None:
    owners = owner if isinstance(owner, tuple) else (owner,)
    assert offenders(None, owners, *libraries) == []


def test_only_the_composition_root_mounts_the_console() -> None:
    """The console is served beside the API by ``memfs serve``; the API never imports
    it (it would import itself back through api's auth)."""
    assert offenders(None, ("memfs.console", "memfs.cli"), "memfs.console") == []


def test_the_console_renders_with_jinja2_alone() -> None:
    assert offenders(None, ("memfs.console",), "jinja2") == []


def test_core_imports_nothing_but_the_core_and_the_standard_library() -> None:
    third_party = ("sqlalchemy", "alembic", "pyfuse3", "fastapi", "starlette", "httpx",
                   "trio", "anyio", "hypercorn", "mcp", "anthropic", "typer")
    assert offenders(CORE, (), *third_party) == []


def test_fuse_and_remote_never_import_each_other() -> None:
    assert offenders(("memfs.remote",), (), "memfs.fuse") == []
    assert offenders(("memfs.fuse",), (), "memfs.remote", "memfs.api") == []


# The store's face is memfs.store's __all__; its modules are private to it.
STORE_INSIDES = (
    "memfs.store.engine",
    "memfs.store._db",
    "memfs.store._common",
    "memfs.store._hot",
    "memfs.store.credentials",
    "memfs.store.sign_ins",
    "memfs.store.caller",
    "memfs.store._facade",
    "memfs.store.memory_rows",
    "memfs.store.tombstones",
    "memfs.store.search_sql",
    "memfs.store.blobs",
    "memfs.store.feed",
    "memfs.store.notify",
    "memfs.store.listing",
    "memfs.store.memories",
    "memfs.store.search",
    "memfs.store.semantic",
    "memfs.store.embedder",
    "memfs.store.indexer",
    "memfs.store.records",
    "memfs.store.visibility",
    "memfs.store.renames",
    "memfs.store._connections",
    "memfs.store.stores",
    "memfs.store.versions",
    "memfs.store.schema",
    "memfs.store.fsck",
    "memfs.store.identities",
    "memfs.store.bindings",
    "memfs.store.embeddings",
    "memfs.store.retention",
    "memfs.store.folds",
    "memfs.store.forks",
    "memfs.store.forkdiff",
    "memfs.store.history",
    "memfs.store.snapshots",
    "memfs.store.restores",
    "memfs.store.backup",
    "memfs.store.transcripts",
    "memfs.store.dreams",
    "memfs.store.peek",
    "memfs.store._light",
    "memfs.store.migrations",
)


def test_nothing_outside_the_store_imports_its_modules() -> None:
    """Callers use the facade through ``memfs.store``; only the store's own
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
        "Caller",
        "SESSION_TOKEN_PREFIX",
        "Engine",
        "Peek",
        "PruneResult",
        "ResourceSpec",
        "WouldWait",
        "fsck_database",
        "open_engine",
        "open_peek",
        "restore_database",
    }
    namespace: dict[str, object] = {}
    exec("from memfs.store import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(memfs.store.__all__)


def test_the_backend_package_s_face_is_the_port_only() -> None:
    """``memfs.backend`` exports the port; the embedded adapter (and with it the store) is
    imported from ``memfs.backend.embedded`` by the composition root alone."""
    import memfs.backend

    assert "EmbeddedBackend" not in memfs.backend.__all__
    face = ("memfs.backend", "memfs.backend.protocol", "memfs.backend.naming")
    found = [
        (module, name)
        for module in face
        for name in sorted(IMPORTS[module])
        if within(name, "memfs.store", "memfs.backend.embedded")
    ]
    assert found == []
