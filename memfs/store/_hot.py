"""The hot path of the store (SPEC §4: a write through a mount commits at close): the
statements every write transaction runs.

Locking the store, checking the path, putting the blob, inserting the version, the
memory and the change go through :func:`run`, :func:`rows`, :func:`first` and
:func:`scalar`. They take a prebuilt (module-level) Core statement, compile it once per
dialect and set of parameter names, and execute it on the DB-API cursor of the caller's
transaction: SQLAlchemy's per-statement work (cache key, execution context, result
object, events) cost more than SQLite's own. The SQL is still SQLAlchemy's; a statement
that needs SQLAlchemy at execution time (expanding or literal
parameters, Python-side defaults, result processors) runs through ``conn.execute``
as before, with the same results; bind processors (a driver's binary wrapper) are
applied here. A new statement of the write transaction (an index, a queue) goes through
the same four functions.

Also owns :func:`refuse_nul`, the one check that text holds no U+0000 (PostgreSQL
can't store it), which the hot path applies itself.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, cast

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect, Result
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.base import Executable

from memfs.core.errors import InvalidInput

__all__ = ["first", "refuse_nul", "rows", "run", "scalar"]


def refuse_nul(values: Iterable[Any]) -> None:
    """Raises InvalidInput when a text value holds U+0000: PostgreSQL text can't hold it
    and psycopg raises a bare ValueError (the rules refuse NUL in every field they
    check; this catches ids and anything else)."""
    for value in values:
        if isinstance(value, str) and "\x00" in value:
            raise InvalidInput("text must not contain the NUL character (U+0000)")


class _Plan(NamedTuple):
    """How one statement runs for one dialect and set of parameter names."""

    statement: Executable  # held, so its id() (the cache key) is never reused
    sql: str | None  # None: through conn.execute (SQLAlchemy is needed at execution)
    names: tuple[str, ...] | None  # positional order (qmark); None: named (pyformat)
    defaults: dict[str, Any]  # the statement's own bound values (literals in it)
    processors: dict[str, Any]  # bind processors of the dialect's types, by name


_plans: dict[tuple[int, str, frozenset[str]], _Plan] = {}
_plans_lock = threading.Lock()
_row_types: dict[tuple[str, ...], Any] = {}


def _plan(statement: Executable, dialect: Dialect, keys: frozenset[str]) -> _Plan:
    """The plan of a prebuilt (module-level) statement: one per dialect and parameter
    names, kept for the life of the process (never pass a statement built per call)."""
    key = (id(statement), dialect.name, keys)
    plan = _plans.get(key)
    if plan is not None:
        return plan
    compiled: Any = cast(Any, statement).compile(dialect=dialect, column_keys=sorted(keys))
    needs_sqlalchemy = (
        dialect.name not in ("sqlite", "postgresql")
        or dialect.paramstyle not in ("qmark", "pyformat")
        or bool(compiled.literal_execute_params or compiled.post_compile_params)
        or bool(getattr(compiled, "insert_prefetch", None))
        or bool(getattr(compiled, "update_prefetch", None))
        or any(
            column[3]._cached_result_processor(dialect, None) is not None
            for column in compiled._result_columns
        )
    )
    if needs_sqlalchemy:
        plan = _Plan(statement, None, None, {}, {})
    else:
        bound = compiled.construct_params(_check=False)
        plan = _Plan(
            statement,
            compiled.string,
            tuple(compiled.positiontup) if dialect.positional else None,
            {name: value for name, value in bound.items() if name not in keys},
            dict(compiled._bind_processors),
        )
    with _plans_lock:  # statements are module constants: the cache stays small
        _plans[key] = plan
    return plan


def _row_type(names: tuple[str, ...]) -> Any:
    """A tuple class with the columns as attributes and ``_mapping`` (what the callers
    use of SQLAlchemy's Row)."""
    row_type = _row_types.get(names)
    if row_type is None:
        base = collections.namedtuple("Row", names)  # type: ignore[misc]
        row_type = type("Row", (base,), {"__slots__": (), "_mapping": property(base._asdict)})
        _row_types[names] = row_type
    return row_type


def _execute(conn: Connection, statement: Executable, params: Mapping[str, Any]) -> Any:
    """Runs ``statement`` with ``params`` in ``conn``'s transaction; returns the DB-API
    cursor, or SQLAlchemy's result when the statement needs SQLAlchemy (see above).
    Driver errors come out as SQLAlchemy's (``OperationalError`` …), as from
    ``conn.execute``."""
    dialect = conn.dialect
    plan = _plan(statement, dialect, frozenset(params))
    if plan.sql is None:
        return conn.execute(statement, dict(params))
    refuse_nul(params.values())
    values: Any = {**plan.defaults, **params} if plan.defaults else params
    if plan.processors:
        values = dict(values)
        for name, process in plan.processors.items():
            if name in values:
                values[name] = process(values[name])
    if plan.names is not None:
        values = [values[name] for name in plan.names]
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(plan.sql, values)
    except dialect.loaded_dbapi.Error as exc:
        cursor.close()
        raise DBAPIError.instance(
            plan.sql, values, exc, dialect.loaded_dbapi.Error, dialect=dialect
        ) from exc
    return cursor


def _fetch(result: Any, one: bool) -> Any:
    if isinstance(result, Result):
        return result.first() if one else result.all()
    try:
        fetched = result.fetchall()
        if result.description is None:
            return None if one else []
        row_type = _row_type(tuple(column[0] for column in result.description))
    finally:
        result.close()
    if one:
        return row_type._make(fetched[0]) if fetched else None
    return [row_type._make(row) for row in fetched]


def run(conn: Connection, statement: Executable, params: Mapping[str, Any]) -> int:
    """Executes a prebuilt statement on the hot path (see the module docstring);
    returns the number of rows it changed (the DB-API ``rowcount``)."""
    result = _execute(conn, statement, params)
    count = int(result.rowcount)
    result.close()
    return count


def rows(conn: Connection, statement: Executable, params: Mapping[str, Any]) -> list[Any]:
    """Every row of a prebuilt query (or DML ``RETURNING``) on the hot path; each row
    has the columns as attributes and ``_mapping``, like SQLAlchemy's."""
    return list(_fetch(_execute(conn, statement, params), one=False))


def first(conn: Connection, statement: Executable, params: Mapping[str, Any]) -> Any:
    """The first row of a prebuilt query on the hot path, or None."""
    return _fetch(_execute(conn, statement, params), one=True)


def scalar(conn: Connection, statement: Executable, params: Mapping[str, Any]) -> Any:
    """The first column of the first row of a prebuilt query on the hot path, or None."""
    row = first(conn, statement, params)
    return None if row is None else row[0]
