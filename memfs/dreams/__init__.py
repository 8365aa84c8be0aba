"""The dreamers and the job that runs them (SPEC §11).

=================  ===========================================================
``runner``         :class:`DreamRunner`: the job (a worker thread) that claims pending
                   dreams, runs them, and fails the ones a stopped server left running
``consolidate``    the ``memfs-consolidate`` dreamer: no language model, deterministic
``apply``          a completed dream's output merged into its input, with its notes
=================  ===========================================================

The language-model dreamer is :mod:`memfs.memory_tool.dreamer` (it needs the anthropic
SDK and the memory tool, floors above this one); the composition root hands it to the
runner as a :class:`memfs.dreams.runner.LanguageDreamer`.

A dream runs as its own session: every version it writes names that session, and
what it reads and writes is that session's transcript (``agent.message`` events).
"""

from memfs.dreams.runner import DreamRunner, run_dream

__all__ = ["DreamRunner", "run_dream"]
