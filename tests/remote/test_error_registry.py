"""The one error-code registry (memfs/core/errors.py) and the one wire table
(memfs/wire/errors.py) that both HTTP edges read: the server sends each class's row, the
remote client inverts it."""

from __future__ import annotations

import re

import pytest

from memfs.api import errors as api_errors
from memfs.core import errors
from memfs.core.errors import REGISTRY, MemfsError
from memfs.wire import errors as wire_errors
from memfs.wire.errors import WIRE_ERRORS, error_class_for, wire_error


def _classes() -> list[type[MemfsError]]:
    def walk(cls: type[MemfsError]) -> list[type[MemfsError]]:
        found = [cls]
        for sub in cls.__subclasses__():
            if sub.__module__ == errors.__name__:
                found.extend(walk(sub))
        return found

    return walk(MemfsError)


def test_every_class_of_the_tree_is_registered_under_its_own_code() -> None:
    classes = _classes()
    assert len({cls.code for cls in classes}) == len(classes), "two classes share a code"
    assert sorted(REGISTRY.values(), key=lambda c: c.__name__) == sorted(
        classes, key=lambda c: c.__name__
    )
    assert all(REGISTRY[cls.code] is cls for cls in classes)
    assert set(errors.__all__) >= {cls.__name__ for cls in classes}


def test_the_tree_drawn_in_the_docstring_is_the_class_tree() -> None:
    assert errors.__doc__ is not None
    drawn: dict[str, str | None] = {}
    stack: list[str] = []
    for line in errors.__doc__.splitlines():
        match = re.match(r"^    ((?:│   |    )*)(?:[├└]── )?([A-Z]\w+)\s", line + " ")
        if match is None or not (line.startswith("    MemfsError") or "── " in line):
            continue
        depth = len(match.group(1)) // 4 + (1 if "── " in line else 0)
        del stack[depth:]
        drawn[match.group(2)] = stack[-1] if stack else None
        stack.append(match.group(2))
    actual = {
        cls.__name__: (None if cls is MemfsError else cls.__bases__[0].__name__)
        for cls in _classes()
    }
    assert drawn == actual


def test_the_wire_table_in_the_docstring_is_what_the_classes_say() -> None:
    assert wire_errors.__doc__ is not None
    table = wire_errors.__doc__.split("The rows (→ status, ``error.type``)")[1]
    rows = re.findall(r"^    ([A-Z][\w, ]+?)\s+(\d{3}) (\w+)", table, re.MULTILINE)
    assert rows
    seen = set()
    for names, status, error_type in rows:
        for name in names.split(", "):
            cls = getattr(errors, name)
            row = wire_error(cls)
            assert (row.status, row.type) == (int(status), error_type), name
            seen.add(name)
    # Every class not in the table is sent as its parent is.
    assert {cls.__name__ for cls in WIRE_ERRORS} == seen
    for cls in _classes():
        if cls.__name__ not in seen:
            assert wire_error(cls) == wire_error(cls.__bases__[0]), cls.__name__


def test_every_class_of_the_tree_has_a_considered_row_or_inherits_one() -> None:
    """Each class of the core tree is either a row of the table or named in the
    docstring's list of the classes that inherit their parent's row."""
    assert wire_errors.__doc__ is not None
    inheriting = wire_errors.__doc__.split("The classes without a row")[1].split("\n\n")[0]
    for cls in _classes():
        if cls in WIRE_ERRORS:
            continue
        ancestors = [a.__name__ for a in cls.__mro__ if issubclass(a, MemfsError)]
        assert any(re.search(rf"\b{name}\b", inheriting) for name in ancestors[:-1]), (
            f"{cls.__name__} has no row and its parent's is not said to be inherited"
        )
        assert wire_error(cls) == WIRE_ERRORS[next(a for a in cls.__mro__ if a in WIRE_ERRORS)]


def test_a_class_added_to_the_tree_later_is_sent_as_its_nearest_parent_with_a_row() -> None:
    class DatabaseUnreachable(errors.DatabaseUnavailable):
        code = "database_unreachable"

    class SubConflict(errors.PathConflict):
        code = "sub_conflict"

    assert wire_error(DatabaseUnreachable) == wire_error(MemfsError)
    assert wire_error(SubConflict) == wire_error(errors.PathConflict)
    assert (wire_error(SubConflict).status, wire_error(SubConflict).type) == (
        409,
        "memory_path_conflict_error",
    )


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_each_class_comes_back_as_itself(cls: type[MemfsError]) -> None:
    wire = wire_error(cls)
    assert error_class_for(wire.status, wire.type, cls.code) is cls


@pytest.mark.parametrize(
    ("edge_class", "expected"),
    [
        (api_errors.RouteNotFound, errors.NotFound),
        (api_errors.MethodNotAllowed, errors.InvalidInput),
        (api_errors.RequestTooLarge, errors.ContentTooLarge),
        (api_errors.InternalError, MemfsError),
    ],
)
def test_an_error_of_the_http_edge_comes_back_as_the_most_general_class_of_its_wire(
    edge_class: type[MemfsError], expected: type[MemfsError]
) -> None:
    assert edge_class.code not in REGISTRY
    wire = wire_error(edge_class, api_errors.EDGE_ROWS)
    assert error_class_for(wire.status, wire.type, edge_class.code) is expected
