"""pjdfstest on a real embedded mount, held to ``expectations.toml`` exactly (README
"Conformance").

Every applicable pjdfstest file runs from inside the store directory of one mount (the
mount root itself is read-only, SPEC §4 Layouts). The test fails on a failure the
expectations don't name, on a named failure that passes, and on a changed test count or
description, so the expectations file and the README table rendered from it stay exact.
"""

from __future__ import annotations

import re
import subprocess
import time

import pytest
from conformance_helpers import (
    APPLICABLE_LIST,
    Build,
    StoreMount,
    compare,
    load_expectations,
    parse_tap,
)

pytestmark = pytest.mark.fuse

# The slowest file (utimensat/01.t) sleeps 1 s; the rest take well under a second alone.
FILE_TIMEOUT_S = 120.0
_DESC = re.compile(r'^desc="(.*)"$', re.MULTILINE)


def test_expectations_name_exactly_the_applicable_files(conformance_build: Build) -> None:
    applicable = APPLICABLE_LIST.read_text().split()
    assert list(load_expectations()["pjdfstest"]) == applicable


def test_expectations_describe_each_file_as_pjdfstest_does(conformance_build: Build) -> None:
    for name, entry in load_expectations()["pjdfstest"].items():
        source = (conformance_build.pjdfstest_tests / name).read_text()
        found = _DESC.search(source)
        assert found is not None, f"{name} has no desc= line"
        assert entry["desc"] == found.group(1), name


def test_pjdfstest_reports_exactly_the_expected_results(
    conformance_build: Build, store_mount: StoreMount
) -> None:
    # The zero-filling truncates of */02.t are refused with EILSEQ (reason zero-fill);
    # the mount logs each refusal and keeps its bytes in rejected/.
    store_mount.mount.expect_log("refused (EILSEQ")
    store_dir = store_mount.directory
    problems: list[str] = []
    started = time.monotonic()
    for name, entry in load_expectations()["pjdfstest"].items():
        completed = subprocess.run(
            ["sh", str(conformance_build.pjdfstest_tests / name)], cwd=store_dir,
            capture_output=True, text=True, timeout=FILE_TIMEOUT_S, check=False,
            stdin=subprocess.DEVNULL,
        )
        output = completed.stdout + completed.stderr
        problems += compare(name, entry, parse_tap(completed.stdout), output)
    elapsed = time.monotonic() - started
    assert not problems, f"pjdfstest differs from expectations.toml ({elapsed:.0f} s):\n" + (
        "\n".join(problems)
    )
