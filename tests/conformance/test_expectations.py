"""``expectations.toml`` is consistent, and the README's "Conformance" tables are exactly
what it says (the pjdfstest test holds that file to what the suite reports, so the
README is exact too). Neither needs FUSE nor the suites' build."""

from __future__ import annotations

from conformance_helpers import README, load_expectations, render_tables


def test_every_reason_named_is_explained_and_every_explained_reason_is_named() -> None:
    expectations = load_expectations()
    named = set()
    for entry in expectations["pjdfstest"].values():
        named |= set(entry.get("fail", {}).values()) | set(entry.get("racy", {}).values())
        named |= {entry["bail_out"]} if "bail_out" in entry else set()
    assert named == set(expectations["reasons"])
    for key, reason in expectations["reasons"].items():
        assert reason["why"], key
        assert reason["spec"], key


def test_racy_tests_are_only_those_a_memfs_bug_makes_racy() -> None:
    for name, entry in load_expectations()["pjdfstest"].items():
        for number, reason in entry.get("racy", {}).items():
            assert reason.startswith("memfs-bug-"), f"{name} #{number}: {reason}"


def test_readme_shows_the_conformance_tables_of_the_expectations() -> None:
    rendered = render_tables(load_expectations())
    assert rendered in README.read_text(), (
        "README.md's Conformance tables differ from tests/conformance/expectations.toml; "
        "replace them with:\n" + rendered
    )
