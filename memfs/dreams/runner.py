"""The job that runs dreams (SPEC §11): :class:`DreamRunner`, a worker thread beside the
server (``memfs serve`` starts one with the API), and :func:`run_dream`, one dream from
``running`` to its end (the CLI calls it in-process for an embedded database).

What survives a restart: nothing half-done is resumed. A running dream beats a
heartbeat (:data:`memfs.core.config.DREAM_HEARTBEAT_S`) at every step; a runner that
starts, and every later poll, marks ``failed`` with ``dream_interrupted`` each running
dream whose heartbeat is older than :data:`memfs.core.config.DREAM_STALE_S` (its
server stopped). Its changes so far stay in the output store (and, for
``update_existing``, its automatic snapshot undoes them). Pending dreams wait for a
runner and are claimed by exactly one.

Errors that fail a dream (``error.type``): a memfs error's ``code`` (e.g.
``store_archived``), ``model_endpoint_not_configured`` (a language model without
``ANTHROPIC_API_KEY``), ``model_dreamer_unavailable`` (one with it: this build has no
language-model dreamer yet),
``dream_interrupted``, ``internal_error``.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from memfs.core import config
from memfs.core.dreams import Dream, DreamStatus, OutputBehavior
from memfs.core.errors import MemfsError
from memfs.core.model import Access, Actor
from memfs.dreams.consolidate import Canceled, consolidate
from memfs.store import Engine, ResourceSpec

__all__ = ["DreamFailed", "DreamRunner", "run_dream"]

log = logging.getLogger(__name__)

# How often an idle runner looks for pending dreams made by other processes (seconds);
# dreams created through this server wake it at once.
POLL_S = 2.0


class DreamFailed(Exception):
    """Raised inside a dream's run to fail it with a named ``error.type``."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


def _language_model(dream: Dream) -> None:
    """The language-model dreamer's entry: fails at once, naming why."""
    if config.dream_endpoint() is None:
        raise DreamFailed(
            "model_endpoint_not_configured",
            f"model {dream.model_id!r} runs through the Messages API, and no endpoint is "
            "configured: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another "
            f"endpoint), or use model {config.CONSOLIDATE_MODEL!r}, which needs none",
        )
    raise DreamFailed(
        "model_dreamer_unavailable",
        f"this memfs has no language-model dreamer yet; use model "
        f"{config.CONSOLIDATE_MODEL!r}",
    )


def run_dream(
    engine: Engine,
    dream: Dream,
    *,
    progress: Callable[[str], None] | None = None,
    decay_below: float | None = None,
) -> Dream:
    """Runs a dream the caller claimed (``running``) to its end: ``completed``,
    ``failed`` (named), or stopped at the next step after a cancel. Never raises for
    the dream's own failures: they are its ``error``. Returns the dream as it ended."""
    threshold = config.dream_decay_below() if decay_below is None else decay_below

    def say(line: str) -> None:
        if progress is not None:
            progress(line)

    try:
        if dream.model_id != config.CONSOLIDATE_MODEL:
            _language_model(dream)
        access = (
            Access.READ_WRITE
            if dream.output_behavior is OutputBehavior.UPDATE_EXISTING
            else Access.READ_ONLY
        )
        session, _ = engine.sessions.create(
            [ResourceSpec(dream.input_store_id, access)],
            with_token=False,
            title=f"dream {dream.id}",
        )
        engine.dreams.record(dream.id, session_id=session.id)
        caller = engine.for_caller(actor=Actor.session(session.id))

        def step(line: str) -> bool:
            say(line)
            engine.transcripts.append(
                session.id, [{"type": "agent.message", "content": [{"type": "text", "text": line}]}]
            )
            return engine.dreams.record(dream.id)

        transcript_events = 0
        for session_id in dream.session_ids or ():
            events = engine.transcripts.all(session_id)
            transcript_events += len(events)
            if not step(f"read the transcript of {session_id}: {len(events)} events"):
                raise Canceled
        output = _output_store(engine, caller, dream, step)
        result: dict[str, Any] = consolidate(
            caller, output, decay_below=threshold, step=step
        )
        result["transcript_events_read"] = transcript_events
        result["output_store_id"] = output
        say("done")
        if engine.dreams.complete(dream.id, result):
            step_line = f"completed: {result['removed']}"
            engine.transcripts.append(
                session.id,
                [{"type": "agent.message", "content": [{"type": "text", "text": step_line}]}],
            )
    except Canceled:
        say("canceled")
    except DreamFailed as failure:
        say(f"failed: {failure.error_type}: {failure.message}")
        engine.dreams.fail(dream.id, failure.error_type, failure.message)
    except MemfsError as exc:
        say(f"failed: {exc.code}: {exc.message}")
        engine.dreams.fail(dream.id, exc.code, exc.message)
    except Exception as exc:  # a bug: the dream says so, the log has the traceback
        log.exception("dream %s failed", dream.id)
        engine.dreams.fail(dream.id, "internal_error", f"{type(exc).__name__}: {exc}")
    return engine.dreams.get(dream.id)


def _output_store(engine: Engine, caller: Any, dream: Dream, step: Callable[[str], bool]) -> str:
    """The store the dream writes: the input after an automatic snapshot
    (``update_existing``), or a fork of it (``create_new``), recorded on the dream."""
    if dream.output_behavior is OutputBehavior.UPDATE_EXISTING:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        name = f"auto-dream-{stamp}"
        if not step(f"snapshot {name} of {dream.input_store_id} before changing it"):
            raise Canceled
        caller.snapshots.create(
            dream.input_store_id, name, description=f"before dream {dream.id}", automatic=True
        )
        return dream.input_store_id
    # create_new: the output is a fork of the input (SPEC §10, §11); the input is never
    # modified. Its name says whose output it is.
    store = engine.stores.get(dream.input_store_id)
    name = f"{store.name[:200]} (dream {dream.id})"
    if not step(f"fork {dream.input_store_id} as {name!r}"):
        raise Canceled
    output = caller.history.fork(
        dream.input_store_id, name=name, description=f"output of dream {dream.id}"
    )
    engine.dreams.record(dream.id, output_store_id=output.id)
    return str(output.id)


class DreamRunner:
    """A worker thread that runs pending dreams one at a time (module docstring).

    Args:
        engine: the open engine (the caller closes it after :meth:`stop`).
        stale_s: a running dream whose heartbeat is older than this lost its job.
        poll_s: how often to look for pending dreams made by other processes.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        stale_s: float = config.DREAM_STALE_S,
        poll_s: float = POLL_S,
    ) -> None:
        self.engine = engine
        self.stale_s = stale_s
        self.poll_s = poll_s
        self.runner_id = f"runner-{uuid.uuid4().hex[:12]}"
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> list[str]:
        """Fails the dreams a stopped server left running, then starts the thread.
        Returns the ids of the dreams it failed."""
        failed = self.engine.dreams.fail_stale(self.stale_s)
        for dream_id in failed:
            log.warning("dream %s was left running by a stopped server: marked failed", dream_id)
        self._thread = threading.Thread(target=self._loop, name="memfs-dreams", daemon=True)
        self._thread.start()
        return failed

    def wake(self) -> None:
        """Looks for pending dreams now (a dream was just created)."""
        self._wake.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stops the thread once the dream it runs (if any) has ended, waiting at most
        ``timeout_s`` (the thread is a daemon: a dream cut off is failed by the next
        runner to start)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                dream = None
                if self.engine.dreams.has_work(self.stale_s):  # a read; idle writes nothing
                    self.engine.dreams.fail_stale(self.stale_s)
                    dream = self.engine.dreams.claim(self.runner_id)
            except MemfsError as exc:  # the database away for a moment: try again later
                log.warning("dream runner: %s", exc)
                dream = None
            if dream is not None and dream.status is DreamStatus.RUNNING:
                run_dream(self.engine, dream)
                continue
            self._wake.wait(self.poll_s)
            self._wake.clear()
