"""scripts/bench.py end to end, at a tiny size: it measures, reports, and cleans up."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _support.polling import wait_until
from benchlib.host import mounts_below
from benchlib.report import TIMED_WORKLOADS

pytestmark = pytest.mark.fuse

BENCH = Path(__file__).resolve().parents[2] / "scripts" / "bench.py"
RUN_TIMEOUT_S = 240
TINY = ["--files", "12", "--corpus-files", "8", "--meta-files", "100", "--repeats", "1"]


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


def _assert_clean(scratch: Path) -> None:
    assert mounts_below(scratch) == []
    assert list(scratch.iterdir()) == []  # the run's scratch directory is gone
    assert _processes_mentioning(str(scratch)) == []


def _bench(scratch: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH), "--scratch-dir", str(scratch), *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )


def test_tiny_run_measures_every_system_and_cleans_up(fuse_available: None, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    out = tmp_path / "results.json"
    systems = ["tmpfs", "floor", "floor_patched", "memfs"]
    systems += ["rclone"] if shutil.which("rclone") else []
    result = _bench(scratch, *TINY, "--systems", ",".join(systems), "--json", str(out))

    assert result.returncode in (0, 1), result.stderr[-3000:]
    document = json.loads(out.read_text())
    assert document["config"]["generated_files"] == 12
    assert document["config"]["metadata_files"] == 100
    rows = {row["key"]: row["results"] for row in document["workloads"]}
    for system in set(systems) - {"memfs"}:  # memfs may be failing: its column says why
        assert document["systems"][system]["failure"] is None, document["systems"][system]
        for key in TIMED_WORKLOADS:
            assert rows[key][system]["error"] is None, (system, key, rows[key][system])
            assert rows[key][system]["median"] > 0, (system, key)
            assert len(rows[key][system]["samples"]) == 1
    for system in ("floor", "floor_patched", "rclone"):
        if system in systems:
            assert rows["rss_search"][system]["median"] > 1  # MB: a live daemon was read
    any_error = any(cell["error"] for row in rows.values() for cell in row.values())
    assert result.returncode == (1 if any_error else 0)
    memfs = document["systems"]["memfs"]
    if memfs["failure"] is not None:
        assert "FAILED" in result.stdout
    # The table has a column per system, in the fixed order, and the targets.
    header = next(line for line in result.stdout.splitlines() if line.startswith("| workload"))
    columns = ("tmpfs", "rclone", "pyfuse3 floor", "patched floor", "memfs")
    order = [s for s in columns if s in header]
    assert [header.index(s) for s in order] == sorted(header.index(s) for s in order)
    assert "Targets (issues 5 and 17, for memfs):" in result.stdout
    _assert_clean(scratch)


def test_a_failing_system_reads_failed_and_the_others_still_run(
    fuse_available: None, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    out = tmp_path / "results.json"
    result = _bench(
        scratch, *TINY, "--systems", "tmpfs,memfs", "--memfs-command", "/bin/false",
        "--json", str(out),
    )  # fmt: skip

    assert result.returncode == 1, result.stderr[-3000:]
    document = json.loads(out.read_text())
    failure = document["systems"]["memfs"]["failure"]
    assert "/bin/false mount" in failure
    assert "exited with status 1" in failure
    rows = {row["key"]: row["results"] for row in document["workloads"]}
    assert rows["copy_generated"]["memfs"]["error"].startswith("not run: ")
    assert rows["copy_generated"]["tmpfs"]["median"] > 0
    assert "FAILED [" in result.stdout
    assert "memfs: FAILED, the remaining workloads were not run" in result.stdout
    _assert_clean(scratch)


@pytest.mark.parametrize("system", ["floor", "memfs"])
def test_interrupting_a_run_unmounts_everything_and_removes_scratch(
    fuse_available: None, tmp_path: Path, system: str
) -> None:
    # floorfs is the benchmark's child; memfs's daemon is not (it daemonizes): both must go.
    scratch = tmp_path / "scratch"
    process = subprocess.Popen(
        [sys.executable, str(BENCH), "--scratch-dir", str(scratch), "--systems", system,
         "--files", "300", "--corpus-files", "8", "--meta-files", "100", "--repeats", "50"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        def mounted() -> bool:  # its mount point is below scratch
            if process.poll() is not None:
                stderr = process.communicate()[1]
                if f"{system}: FAILED" in stderr:
                    pytest.skip(f"{system} cannot mount here: {stderr[-1000:]}")
                pytest.fail(f"the benchmark ended before mounting {system}: {stderr[-3000:]}")
            return any(m.endswith(f"{system}-files") for m in mounts_below(scratch))

        wait_until(mounted, f"the benchmark to mount {system}", 60, interval_s=0.01)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, stderr[-3000:]
    assert "interrupted: unmounting and cleaning up" in stderr
    _assert_clean(scratch)
