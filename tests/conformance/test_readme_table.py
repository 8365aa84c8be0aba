"""The README's "Conformance" tables are exactly what ``expectations.toml`` says (the
pjdfstest test holds that file to what the suite reports, so the README is exact too)."""

from __future__ import annotations

from conformance_helpers import README, load_expectations, render_tables


def test_readme_shows_the_conformance_tables_of_the_expectations() -> None:
    rendered = render_tables(load_expectations())
    assert rendered in README.read_text(), (
        "README.md's Conformance tables differ from tests/conformance/expectations.toml; "
        "replace them with:\n" + rendered
    )
