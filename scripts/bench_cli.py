"""CLI start benchmark (issue 29: ``memfs store list`` and ``memfs memory cat`` under
0.3 s): how long the commands an operator types most take from exec to exit, side by
side with references measured in the same run.

Columns:

- **python**: the interpreter's bare start (``python -c pass``), the floor of any
  Python command;
- **engine**: the same command forced onto the store engine (the path every command
  took before the SQLite peek: ``memfs/store/peek.py``), by pointing ``--database`` at
  the same file through a URL the peek leaves to the engine (``sqlite+pysqlite:///FILE``);
- **memfs**: the command as a user runs it;
- **compare** (``--compare TREE``): the same command from another checkout of memfs
  (e.g. an older commit), run with ``PYTHONPATH=TREE``.

Each command runs ``--runs`` times (default 9), the columns alternating, in a home
with ``--stores`` stores and one memory of 4 KiB; the figures are the best and the
median wall time and the best CPU time (user + system, ``getrusage`` of the child), with
memfs's ratio to each reference. Commands run as the installed console script does
(``python -c 'from memfs.cli import main; main()'``) with the bytecode cache as an
installed package has it (it is compiled first).

    scripts/bench-cli                        # the table
    scripts/bench-cli --compare /tmp/old     # and a checkout of another commit
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
ENTRY = "from memfs.cli import main; main()"


@dataclass
class Samples:
    """Wall and CPU seconds of each run of one command in one column."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def best(self) -> float:
        return min(self.wall)

    def median(self) -> float:
        return statistics.median(self.wall)

    def best_cpu(self) -> float:
        return min(self.cpu)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``argv``; raises if it fails. Runs in the root
    directory: ``python -c`` puts its working directory first on ``sys.path``, where a
    checkout would shadow the one ``PYTHONPATH`` names."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        argv, env=env, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode().strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def prepare_home(home: Path, stores: int) -> Path:
    """A home with ``stores`` stores (the first, ``notes``, holding ``/a.md``)."""
    env = dict(os.environ, MEMFS_HOME=str(home), PYTHONPATH=str(REPO))
    memfs = [PYTHON, "-c", ENTRY]
    for command in [
        ["store", "create", "notes"],
        *(["store", "create", f"store {index}"] for index in range(1, stores)),
        ["memory", "put", "notes", "/a.md", "--content", "x" * 4096],
    ]:
        subprocess.run([*memfs, *command], env=env, cwd="/", check=True, capture_output=True)
    return home / "memfs.db"


Columns = dict[str, dict[str, tuple[list[str], dict[str, str]]]]
COMMANDS = {
    "memfs store list": ["store", "list"],
    "memfs store show notes": ["store", "show", "notes"],
    "memfs memory cat notes /a.md": ["memory", "cat", "notes", "/a.md"],
    "memfs --help": ["--help"],
}
ORDER = ["python", "engine", "compare", "memfs"]


def columns_of(home: Path, database: Path, compare: Path | None) -> Columns:
    """command → column → (argv, environment)."""
    env = dict(os.environ, MEMFS_HOME=str(home), PYTHONDONTWRITEBYTECODE="1")
    ours = dict(env, PYTHONPATH=str(REPO))
    engine_url = f"sqlite+pysqlite:///{database}"
    columns: Columns = {}
    for name, command in COMMANDS.items():
        by_column = columns[name] = {
            "python": ([PYTHON, "-c", "pass"], env),
            "memfs": ([PYTHON, "-c", ENTRY, *command], ours),
        }
        if command != ["--help"]:
            by_column["engine"] = ([PYTHON, "-c", ENTRY, *command, "--database", engine_url], ours)
        if compare is not None:
            by_column["compare"] = (
                [PYTHON, "-c", ENTRY, *command],
                dict(env, PYTHONPATH=str(compare)),
            )
    return columns


def run(columns: Columns, runs: int) -> dict[tuple[str, str], Samples]:
    """Every command in every column ``runs`` times, alternating."""
    results: dict[tuple[str, str], Samples] = {}
    for _ in range(runs):
        for name, by_column in columns.items():
            for column, (argv, env) in by_column.items():
                wall, cpu = timed(argv, env)
                sample = results.setdefault((name, column), Samples())
                sample.wall.append(wall)
                sample.cpu.append(cpu)
    return results


def print_table(results: dict[tuple[str, str], Samples]) -> None:
    """One row per command: each column's figures, then memfs's ratio to each."""
    header = [c for c in ORDER if any(key[1] == c for key in results)]
    references = [c for c in header if c != "memfs"]
    print("| command | " + " | ".join(header) + " | " + " | ".join(
        f"memfs ÷ {c}" for c in references) + " |")
    print("|---|" + "---:|" * (len(header) + len(references)))
    for name in COMMANDS:
        memfs = results[(name, "memfs")]
        cells, ratios = [], []
        for column in header:
            sample = results.get((name, column))
            cells.append(
                "—" if sample is None else
                f"{sample.best():.3f} s ({sample.median():.3f}), CPU {sample.best_cpu():.3f} s"
            )
            if column != "memfs":
                ratios.append("—" if sample is None else f"{memfs.best() / sample.best():.2f}×")
        print(f"| {name} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per command and column")
    parser.add_argument("--stores", type=int, default=3, help="stores in the home")
    parser.add_argument("--compare", type=Path, help="another memfs checkout to run too")
    args = parser.parse_args(argv)
    compare = args.compare.resolve() if args.compare is not None else None
    for tree in [REPO] + ([compare] if compare is not None else []):
        compileall.compile_dir(tree / "memfs", quiet=1)
    with tempfile.TemporaryDirectory(prefix="memfs-bench-cli-") as scratch:
        home = Path(scratch) / "home"
        database = prepare_home(home, args.stores)
        load_start = os.getloadavg()[0]
        results = run(columns_of(home, database, compare), args.runs)
        load_end = os.getloadavg()[0]
    print(
        f"CLI start: best (median) wall of {args.runs} runs and best CPU; load average "
        f"{load_start:.2f} at start, {load_end:.2f} at end; {args.stores} stores, one memory"
    )
    print_table(results)
    if compare is not None:
        print(f"compare = {compare}")


if __name__ == "__main__":
    main()
