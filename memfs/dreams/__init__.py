"""The dreamers and the job that runs them (SPEC §11).

=================  ===========================================================
``runner``         :class:`DreamRunner`: the job (a worker thread) that claims pending
                   dreams, runs them, and fails the ones a stopped server left running
``consolidate``    the ``memfs-consolidate`` dreamer: no language model, deterministic
=================  ===========================================================

A dream runs as its own session: every version it writes names that session, and
what it reads and writes is that session's transcript (``agent.message`` events).
"""

from memfs.dreams.runner import DreamRunner, run_dream

__all__ = ["DreamRunner", "run_dream"]
