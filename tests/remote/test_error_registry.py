"""The one error-code registry (memfs/errors.py) that both HTTP edges read: the server
sends each class's ``wire``, the remote client inverts it."""

from __future__ import annotations

import re

import pytest

from memfs.api import errors as api_errors
from memfs.core import errors
from memfs.core.errors import REGISTRY, MemfsError, error_class_for


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
    assert errors.__doc__ is not None
    table = errors.__doc__.split("The wire of each class")[1]
    rows = re.findall(r"^    ([A-Z][\w, ]+?)\s+(\d{3}) (\w+)", table, re.MULTILINE)
    assert rows
    seen = set()
    for names, status, error_type in rows:
        for name in names.split(", "):
            cls = getattr(errors, name)
            assert (cls.wire.status, cls.wire.type) == (int(status), error_type), name
            seen.add(name)
    # Every class not in the table is sent as its parent is.
    for cls in _classes():
        if cls.__name__ not in seen:
            assert "wire" not in vars(cls), f"{cls.__name__} declares a wire the table omits"


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_each_class_comes_back_as_itself(cls: type[MemfsError]) -> None:
    assert error_class_for(cls.wire.status, cls.wire.type, cls.code) is cls


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
    wire = edge_class.wire
    assert error_class_for(wire.status, wire.type, edge_class.code) is expected
