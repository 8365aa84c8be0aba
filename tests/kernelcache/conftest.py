"""Fixtures of the tests of third_party/pyfuse3's patch (kernel caching).

- ``cachefs``: factory mounting tests/kernelcache/cachefs.py (a minimal pyfuse3
  filesystem) for real, with the patch's flags or, with ``stock=True``, as stock pyfuse3
  replies; unmounted at teardown, which also checks the process exited 0.

Every test here gets the ``fuse`` marker and needs the patched pyfuse3 that
scripts/setup builds (they fail, not skip, without it: CI must test the patched path).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _support.polling import wait_until

_HERE = Path(__file__).parent
MOUNT_TIMEOUT_S = 30.0
FUSERMOUNT = shutil.which("fusermount3") or "fusermount3"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.fuse)


@pytest.fixture
def cachefs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    started: list[tuple[Path, subprocess.Popen[bytes], Path]] = []

    def mount(*, stock: bool = False) -> Path:
        index = len(started)
        mount_point = tmp_path / f"mnt{index}"
        mount_point.mkdir()
        log_path = tmp_path / f"cachefs{index}.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, str(_HERE / "cachefs.py"), str(mount_point)]
                + (["--stock"] if stock else []),
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        started.append((mount_point, process, log_path))

        def mounted() -> bool:
            assert process.poll() is None, log_path.read_text()
            return os.path.ismount(mount_point)

        wait_until(mounted, "cachefs to mount", MOUNT_TIMEOUT_S, interval_s=0.01)
        return mount_point

    yield mount
    for mount_point, process, log_path in started:
        subprocess.run([FUSERMOUNT, "-u", str(mount_point)], check=False)
        try:
            status = process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
        assert status == 0, log_path.read_text()
