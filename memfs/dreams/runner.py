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

Which dreamer runs a dream is its ``model``: ``memfs-consolidate`` is
:mod:`memfs.dreams.consolidate`; any other id is the language-model dreamer, a
:class:`LanguageDreamer` the composition root hands in (``memfs serve`` and ``memfs
dream create --wait`` give :class:`memfs.memory_tool.dreamer.MessagesDreamer`: it needs
the anthropic SDK and the memory tool, floors above this one). It gets a
:class:`DreamJob`: the output store, the transcripts, and the dream's session to say
what it does, record usage and learn of a cancel.

Whose view a dream has (SPEC §6, §11): its creator's, :attr:`Dream.viewer`, kept with
the dream so a runner that picks it up (after a restart too) has it. Every step runs
with it: the dream's session speaks for the creator's user; the fork of ``create_new``
copies only the records the creator sees (:meth:`memfs.store.history.History.fork` with
a viewer); the consolidating dreamer lists, reads and writes through a caller bound to
it; the language-model dreamer's memory tool (and so the layout it is shown) is bound to
it (:attr:`DreamJob.viewer`); ``update_existing`` writes are checked like any write of
that viewer (nothing it could not see, :func:`memfs.core.visibility.check_writable`);
and a transcript the creator may not read is not given (the create refused it
already; it is checked again here). A bulk operation is thus no way around record
visibility.

Errors that fail a dream (``error.type``): a memfs error's ``code`` (e.g.
``store_archived``), ``model_endpoint_not_configured`` (a language model and no
endpoint: no ``ANTHROPIC_API_KEY``, no ``--dream-api-key-file``), the language-model
dreamer's own (the SDK error's class name, e.g. ``RateLimitError``; ``dream_turn_limit``,
``dream_time_limit``), ``dream_interrupted``, ``internal_error``.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from memfs.core import config
from memfs.core.dreams import USAGE_KEYS, Dream, DreamStatus, OutputBehavior, SessionEvent
from memfs.core.errors import MemfsError, NotFound
from memfs.core.model import Access, Actor, UserPrincipal
from memfs.core.visibility import Viewer, sees_transcript
from memfs.dreams.consolidate import Canceled, consolidate
from memfs.store import Engine, ResourceSpec

__all__ = [
    "Canceled",
    "DreamFailed",
    "DreamJob",
    "DreamRunner",
    "LanguageDreamer",
    "not_configured",
    "run_dream",
]

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


def not_configured(dream: Dream) -> DreamFailed:
    """The failure of a language-model dream with no Messages API endpoint configured."""
    return DreamFailed(
        "model_endpoint_not_configured",
        f"model {dream.model_id!r} runs through the Messages API, and no endpoint is "
        "configured: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint), "
        "or pass --dream-api-key-file (and --dream-base-url) to memfs serve or memfs dream "
        "create; or use "
        f"model {config.CONSOLIDATE_MODEL!r}, which needs none",
    )


@dataclass
class DreamJob:
    """What a dreamer gets to run one dream (the runner made the session and the output).

    Attributes:
        engine: the open engine.
        dream: the dream, as claimed.
        session_id: the dream's session: every version it writes names it.
        output_store_id: the store it writes (a fork of the input, or the input).
        transcripts: ``(session id, events)`` of each session it reads, in order.
        step: says a line (the progress display and the session's ``agent.message``
            events) and beats the heartbeat; False means the dream was canceled: stop.
        usage: tokens used so far, summed by :meth:`add_usage`.
        viewer: the dream's creator's view (module docstring): the dreamer reads and
            writes the output store with it. None: unrestricted.
    """

    engine: Engine
    dream: Dream
    session_id: str
    output_store_id: str
    transcripts: Sequence[tuple[str, Sequence[SessionEvent]]]
    step: Callable[[str], bool]
    usage: dict[str, int] = field(default_factory=dict)
    viewer: Viewer | None = None

    def events(self, events: Sequence[Mapping[str, Any]]) -> list[SessionEvent]:
        """Appends ``events`` (e.g. ``agent.tool_use``) to the dream session's
        transcript; returns them as stored (with their ids)."""
        return self.engine.transcripts.append(self.session_id, events)

    def add_usage(self, counts: Mapping[str, int | None]) -> bool:
        """Adds a model turn's token counts to the dream's ``usage`` (unknown keys and
        None counts are ignored) and records it; returns whether the dream still runs."""
        for key in self.usage:
            self.usage[key] += int(counts.get(key) or 0)
        self.engine.dreams.set_usage(self.dream.id, self.usage)
        return self.engine.dreams.record(self.dream.id)


class LanguageDreamer(Protocol):
    """The language-model dreamer, as the runner calls it (module docstring)."""

    def check(self, dream: Dream) -> None:
        """Raises :class:`DreamFailed` when ``dream`` can't run at all (no endpoint):
        called before anything is made for it."""

    def run(self, job: DreamJob) -> dict[str, Any]:
        """Runs the dream on ``job.output_store_id``; returns its ``result``.

        Raises:
            Canceled: ``job.step`` said stop. DreamFailed: a named failure.
        """
        ...


def run_dream(
    engine: Engine,
    dream: Dream,
    *,
    progress: Callable[[str], None] | None = None,
    decay_below: float | None = None,
    language_model: LanguageDreamer | None = None,
) -> Dream:
    """Runs a dream the caller claimed (``running``) to its end: ``completed``,
    ``failed`` (named), or stopped at the next step after a cancel. Never raises for
    the dream's own failures: they are its ``error``. Returns the dream as it ended.

    Args:
        progress: called with each line the dream says.
        decay_below: the consolidating dreamer's threshold (default: the setting).
        language_model: runs every model other than ``memfs-consolidate``; None: such a
            dream fails with ``model_endpoint_not_configured``.
    """
    threshold = config.dream_decay_below() if decay_below is None else decay_below

    def say(line: str) -> None:
        if progress is not None:
            progress(line)

    try:
        _run(engine, dream, say, threshold, language_model)
    except Canceled:
        say("canceled")
    except DreamFailed as failure:
        _failed(engine, dream, failure.error_type, failure.message, say)
    except MemfsError as exc:
        _failed(engine, dream, exc.code, exc.message, say)
    except Exception as exc:  # a bug: the dream says so, the log has the traceback
        log.exception("dream %s failed", dream.id)
        _failed(engine, dream, "internal_error", f"{type(exc).__name__}: {exc}", say)
    return engine.dreams.get(dream.id)


def _tell(engine: Engine, session_id: str, line: str) -> None:
    """Appends ``line`` to the dream session's transcript (an ``agent.message``)."""
    engine.transcripts.append(
        session_id, [{"type": "agent.message", "content": [{"type": "text", "text": line}]}]
    )


def _failed(
    engine: Engine, dream: Dream, error_type: str, message: str, say: Callable[[str], None]
) -> None:
    """Fails the dream; its session's transcript (if it got one) says why, in the same
    transaction."""
    line = f"failed: {error_type}: {message}"
    say(line)
    engine.dreams.fail(dream.id, error_type, message, say=line)


def _run(
    engine: Engine,
    dream: Dream,
    say: Callable[[str], None],
    threshold: float,
    language_model: LanguageDreamer | None,
) -> None:
    """:func:`run_dream`'s work; raises what it turns into the dream's end."""
    if dream.model_id != config.CONSOLIDATE_MODEL:
        if language_model is None:
            raise not_configured(dream)
        language_model.check(dream)
    access = (
        Access.READ_WRITE
        if dream.output_behavior is OutputBehavior.UPDATE_EXISTING
        else Access.READ_ONLY
    )
    session, _ = engine.sessions.create(
        [ResourceSpec(dream.input_store_id, access)],
        with_token=False,
        title=f"dream {dream.id}",
        principal=_speaks_for(dream.viewer),
    )
    engine.dreams.record(dream.id, session_id=session.id)
    caller = engine.for_caller(actor=Actor.session(session.id), viewer=dream.viewer)

    def step(line: str) -> bool:
        say(line)
        _tell(engine, session.id, line)
        return engine.dreams.record(dream.id)

    transcript_events = 0
    transcripts: list[tuple[str, Sequence[SessionEvent]]] = []
    for session_id in dream.session_ids or ():
        _check_transcript(engine, dream.viewer, session_id)
        events = engine.transcripts.all(session_id)
        transcript_events += len(events)
        transcripts.append((session_id, events))
        if not step(f"read the transcript of {session_id}: {len(events)} events"):
            raise Canceled
    output = _output_store(engine, caller, dream, step)
    result: dict[str, Any]
    if dream.model_id == config.CONSOLIDATE_MODEL:
        result = consolidate(
            caller, output, decay_below=threshold, step=step,
            input_store_id=dream.input_store_id, embed=engine.embed,
        )
        done = f"completed: {result['removed']}"
    else:
        assert language_model is not None
        job = DreamJob(
            engine, dream, session.id, output, transcripts, step,
            usage={key: int(dream.usage.get(key, 0)) for key in USAGE_KEYS},
            viewer=dream.viewer,
        )
        result = language_model.run(job)
        done = (
            f"completed: {result.get('tool_calls', 0)} tool calls in "
            f"{result.get('turns', 0)} turns"
        )
    result["transcript_events_read"] = transcript_events
    result["output_store_id"] = output
    say("done")
    engine.dreams.complete(dream.id, result, say=done)


def _speaks_for(viewer: Viewer | None) -> UserPrincipal | None:
    """The principal of the dream's session: its creator's user and roles (None for an
    unrestricted creator, or a restricted one without a principal)."""
    if viewer is None or viewer.user_id is None:
        return None
    return UserPrincipal(user_id=viewer.user_id, roles=tuple(sorted(viewer.roles)))


def _check_transcript(engine: Engine, viewer: Viewer | None, session_id: str) -> None:
    """Raises NotFound ``session_not_found`` for a session whose transcript ``viewer``
    may not read (as :meth:`memfs.store.dreams.Dreams.create` did)."""
    try:
        session = engine.sessions.get(session_id)
    except NotFound:  # deleted since: its transcript went with it, nothing to hide
        return
    speaks_for = None if session.principal is None else session.principal.user_id
    if not sees_transcript(viewer, speaks_for):
        raise NotFound(f"session {session_id!r} not found", code="session_not_found")


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
        language_model: runs the dreams of models other than ``memfs-consolidate``
            (:func:`run_dream`).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        stale_s: float = config.DREAM_STALE_S,
        poll_s: float = POLL_S,
        language_model: LanguageDreamer | None = None,
    ) -> None:
        self.engine = engine
        self.language_model = language_model
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
                run_dream(self.engine, dream, language_model=self.language_model)
                continue
            self._wake.wait(self.poll_s)
            self._wake.clear()
