"""Shell completion (README "Installing", shell completion): the script typer's
``memfs --show-completion`` prints for bash, sourced into a real bash and run the way
bash runs it on a TAB (``COMP_WORDS``/``COMP_CWORD``), and zsh's protocol."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from _support.cli import MEMFS, RUN_TIMEOUT_S, memfs_env


def _bash(script: str, home: Path) -> str:
    """Runs ``script`` in a non-interactive bash with the environment's ``memfs`` first
    on PATH (bash is the parent, so typer detects bash); returns its stdout."""
    env = memfs_env(home)
    env["PATH"] = os.pathsep.join([str(Path(MEMFS).parent), env.get("PATH", "")])
    done = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True,
        timeout=RUN_TIMEOUT_S, check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _tab(words: list[str], home: Path) -> list[str]:
    """What bash offers on a TAB after ``words`` (the last one being completed)."""
    line = " ".join(shlex.quote(word) for word in words)
    return _bash(
        f"""
        eval "$(memfs --show-completion)"
        COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}
        _memfs_completion memfs
        printf '%s\\n' "${{COMPREPLY[@]}}"
        """,
        home,
    ).split()


def test_bash_completes_commands_and_their_subcommands(tmp_path: Path) -> None:
    script = _bash("memfs --show-completion", tmp_path)
    assert "complete -o default -F _memfs_completion memfs" in script
    assert "_MEMFS_COMPLETE=complete_bash" in script
    assert _tab(["memfs", "st"], tmp_path) == ["store", "status"]
    assert _tab(["memfs", "snap"], tmp_path) == ["snapshot"]
    assert _tab(["memfs", "store", "cr"], tmp_path) == ["create"]
    assert _tab(["memfs", "--vers"], tmp_path) == ["--version"]
    assert "--json" in _tab(["memfs", "store", "list", "--"], tmp_path)


def test_zsh_gets_a_script_and_the_same_commands(tmp_path: Path) -> None:
    # zsh's script, asked for by name (typer otherwise detects the calling shell).
    script = _bash(
        "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION=1 memfs --show-completion zsh", tmp_path
    )
    assert "compdef _memfs_completion memfs" in script
    assert "_MEMFS_COMPLETE=complete_zsh" in script
    # What the script's function runs on a TAB after `memfs sto`.
    offered = _bash("_MEMFS_COMPLETE=complete_zsh _TYPER_COMPLETE_ARGS='memfs sto' memfs", tmp_path)
    assert '"store":"Create, inspect, change, archive and delete memory stores."' in offered
