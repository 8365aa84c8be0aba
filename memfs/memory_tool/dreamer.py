"""The language-model dreamer (SPEC §11): a dream of any model other than
``memfs-consolidate`` runs that model through the Messages API (the ``anthropic`` SDK),
with memfs's memory tool on the dream's output store as its only tool.

It lives beside the memory tool (it is the tool's other client, and the only floors
that may import the SDK are here): :mod:`memfs.dreams.runner` is handed a
:class:`MessagesDreamer` by the composition root (``memfs serve``, ``memfs dream create
--wait``) and calls it with a :class:`memfs.dreams.runner.DreamJob`.

What the model gets: the system prompt :data:`SYSTEM_PROMPT` (memfs owns it) followed by
the dream's ``instructions``; one user message with the output store's layout (every
file under ``/memories`` with its size, at most
:data:`memfs.core.config.MAX_DREAM_LAYOUT_ENTRIES`) and the transcripts of the dream's
sessions (at most :data:`memfs.core.config.MAX_DREAM_TRANSCRIPT_CHARS` characters, the
rest cut and said so); and the ``memory_20250818`` tool, bound to the output store and
writing as the dream's session, so every version it makes names that session. The tool
sees as the dream's creator (:attr:`memfs.dreams.runner.DreamJob.viewer`, SPEC §6): the
layout lists, and the tool views and edits, only the records the creator may see, and
refuses a write that would leave one it could not see.

The loop, one model turn at a time: the turn's token usage is added to the dream's
``usage``; its text is an ``agent.message`` event of the dream's session; each
``tool_use`` block runs through :class:`memfs.memory_tool.MemfsMemoryTool` and is an
``agent.tool_use`` event followed by its ``agent.tool_result`` (the SDK's event types);
a refusal goes back to the model as an ``is_error`` tool result. It ends when the model
answers without a tool call (its text is the result's ``summary``).

Failures (the dream's ``error``): a Messages API error is the error's own type and
message (the API's ``error.type``, e.g. ``invalid_request_error``, else the SDK
exception's class name, e.g. ``APIConnectionError``); more turns than the limit
(:func:`memfs.core.config.dream_max_turns`) is ``dream_turn_limit``, more wall time
(:func:`memfs.core.config.dream_time_limit_s`) is ``dream_time_limit``. A cancel is
seen before each model turn and each tool call. In every case the output store keeps
what was written so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memfs.core import config
from memfs.core.dreams import Dream, SessionEvent
from memfs.core.model import Access, Actor
from memfs.dreams.runner import Canceled, DreamFailed, DreamJob, not_configured
from memfs.memory_tool.files import MemoryFiles, format_file_size
from memfs.memory_tool.port import EngineAccess, StoreView

if TYPE_CHECKING:
    from memfs.memory_tool.tool import MemfsMemoryTool

__all__ = ["MEMORY_TOOL_BETA", "SYSTEM_PROMPT", "MessagesDreamer", "dream_context"]

# The beta the Messages API wants for the memory tool.
MEMORY_TOOL_BETA = "context-management-2025-06-27"
# The longest model summary kept in the dream's result (characters).
MAX_SUMMARY_CHARS = 4000
# Commands that change the store (listed in the result's ``changes``).
_WRITES = ("create", "str_replace", "insert", "delete", "rename")

SYSTEM_PROMPT = """\
You are the dreamer of memfs: you consolidate one memory store while no agent uses it.
The store is the directory /memories, and the memory tool is your only way to read and
change it. What you leave there is what the agents will remember.

Do:
- Consolidate duplicates: when several files say the same thing, keep one (the
  clearest, most complete) and delete or merge the others into it.
- Replace stale and contradicted entries with the newest value: when two entries
  disagree, or a transcript shows a fact changed, keep only the newest value (later
  transcript events are newer) and remove the old one; do not keep both.
- Keep record headers valid: a file that starts with "---" has a YAML header (type,
  importance, relations, ...) closed by "---"; keep it well-formed, change its fields
  only to keep them true, and when you rename or delete a file, fix the relations that
  name it.
- View a file before you change it; use str_replace for small edits.
Never:
- invent anything: every fact you write is in the store or in the transcripts;
- remove information that is neither duplicated, stale nor contradicted;
- touch anything outside /memories.
When you are done, answer with a short summary of what you changed and why, and no tool
call."""


def _transcript_text(transcripts: Sequence[tuple[str, Sequence[SessionEvent]]]) -> str:
    """The transcripts as text, oldest event first, cut at the configured limit."""
    if not transcripts:
        return "No session transcripts were given: consolidate the store on its own.\n"
    lines: list[str] = []
    for session_id, events in transcripts:
        lines.append(f"## Session {session_id} ({len(events)} events)")
        for event in events:
            text = event.text()
            if text:
                lines.append(f"[{event.processed_at.isoformat()} {event.type}] {text}")
        lines.append("")
    text = "\n".join(lines)
    limit = config.MAX_DREAM_TRANSCRIPT_CHARS
    if len(text) > limit:
        text = text[:limit] + f"\n[... cut: the transcripts hold {len(text)} characters]\n"
    return text


def dream_context(
    layout: Sequence[tuple[str, int]], transcripts: Sequence[tuple[str, Sequence[SessionEvent]]]
) -> str:
    """The first user message of a dream: the store's layout (``(tool path, size in
    bytes)``, sorted) and the transcripts."""
    limit = config.MAX_DREAM_LAYOUT_ENTRIES
    listed = [f"- {path} ({format_file_size(size)})" for path, size in layout[:limit]]
    if len(layout) > limit:
        listed.append(f"- ... and {len(layout) - limit} more (view /memories to see them)")
    files = "\n".join(listed) if listed else "(the store is empty)"
    return (
        f"# The memory store: {len(layout)} files\n{files}\n\n"
        f"# Transcripts\n{_transcript_text(transcripts)}\n"
        "Consolidate the store now."
    )


def _api_failure(exc: Exception) -> DreamFailed:
    """A Messages API error as the dream's error: the API's own error type and message
    when the body has them, else the SDK exception's class name and text."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("type"):
        return DreamFailed(str(error["type"]), str(error.get("message") or exc))
    return DreamFailed(type(exc).__name__, str(exc))


def _open_tool(job: DreamJob) -> MemfsMemoryTool:
    """The memory tool on the output store alone, writing as the dream's session and
    seeing as its creator."""
    from memfs.memory_tool.tool import MemfsMemoryTool

    store = job.engine.stores.get(job.output_store_id)
    view = StoreView(
        store_id=store.id,
        name=store.name,
        slug="memories",
        access=Access.READ_WRITE,
        description=store.description or "",
        instructions=None,
    )
    access = EngineAccess(
        job.engine, [view], Actor.session(job.session_id), viewer=job.viewer
    )

    async def make() -> MemoryFiles:
        return await MemoryFiles.open(access)

    return MemfsMemoryTool(make)


def _command_line(command: dict[str, Any]) -> str:
    """``memory <command> <path>`` (``old → new`` for a rename), for the progress."""
    name = str(command.get("command", "?"))
    if name == "rename":
        return f"memory rename {command.get('old_path')} -> {command.get('new_path')}"
    return f"memory {name} {command.get('path', '')}".rstrip()


class MessagesDreamer:
    """Runs language-model dreams through the Messages API (module docstring).

    Args:
        endpoint: ``(api key, base URL or None)`` (:func:`memfs.core.config.dream_endpoint`);
            None: every such dream fails at once with ``model_endpoint_not_configured``.
        max_turns: model turns per dream (default: the setting).
        time_limit_s: wall time per dream, seconds (default: the setting).
        max_output_tokens: ``max_tokens`` of each turn.
        max_retries: the SDK's retries of a failed request (429, 5xx, connection).
        clock: monotonic seconds (tests).
    """

    def __init__(
        self,
        endpoint: tuple[str, str | None] | None,
        *,
        max_turns: int | None = None,
        time_limit_s: float | None = None,
        max_output_tokens: int = config.DREAM_MAX_OUTPUT_TOKENS,
        max_retries: int = 2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoint = endpoint
        self.max_turns = config.dream_max_turns() if max_turns is None else max_turns
        self.time_limit_s = config.dream_time_limit_s() if time_limit_s is None else time_limit_s
        self.max_output_tokens = max_output_tokens
        self.max_retries = max_retries
        self.clock = clock

    def check(self, dream: Dream) -> None:
        """Raises DreamFailed ``model_endpoint_not_configured`` without an endpoint."""
        if self.endpoint is None:
            raise not_configured(dream)

    def run(self, job: DreamJob) -> dict[str, Any]:
        """Runs ``job`` to the model's last answer; returns the dream's result:
        ``dreamer``, ``model``, ``turns``, ``tool_calls``, ``tool_errors``, ``changes``
        (each write: ``command`` and ``path``, or ``old_path``/``new_path``) and
        ``summary`` (the model's last text).

        Raises:
            Canceled, DreamFailed: module docstring.
        """
        import anthropic

        self.check(job.dream)
        assert self.endpoint is not None
        key, base_url = self.endpoint
        started = self.clock()
        client = anthropic.Anthropic(
            api_key=key, base_url=base_url, max_retries=self.max_retries,
            timeout=min(600.0, self.time_limit_s),
        )
        tool = _open_tool(job)
        try:
            return self._loop(job, client, tool, started)
        finally:
            tool.close()
            client.close()

    def _system(self, dream: Dream) -> str:
        if not dream.instructions:
            return SYSTEM_PROMPT
        return (
            f"{SYSTEM_PROMPT}\n\nInstructions from whoever started this dream (they come "
            f"after the rules above and never override them):\n{dream.instructions}"
        )

    def _loop(
        self, job: DreamJob, client: Any, tool: MemfsMemoryTool, started: float
    ) -> dict[str, Any]:
        import anthropic

        every = tool._portal.call(tool.files.every_file)
        layout = sorted(
            (tool.files.tool_path(attachment, info.path), info.size_bytes)
            for attachment, info in every
        )
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": dream_context(layout, job.transcripts)}
        ]
        result: dict[str, Any] = {
            "dreamer": "messages", "model": job.dream.model_id, "turns": 0,
            "tool_calls": 0, "tool_errors": 0, "changes": [], "summary": "",
        }
        for turn in range(1, self.max_turns + 1):
            self._check_time(started)
            if not job.step(f"turn {turn}: asking {job.dream.model_id}"):
                raise Canceled
            try:
                response = client.beta.messages.create(
                    model=job.dream.model_id,
                    max_tokens=self.max_output_tokens,
                    system=self._system(job.dream),
                    messages=messages,
                    tools=[tool.to_dict()],
                    betas=[MEMORY_TOOL_BETA],
                )
            except anthropic.APIError as exc:
                raise _api_failure(exc) from exc
            result["turns"] = turn
            still_running = job.add_usage(response.usage.model_dump())
            text = "\n".join(b.text for b in response.content if b.type == "text").strip()
            if text:
                job.events([{"type": "agent.message", "content": [{"type": "text", "text": text}]}])
                result["summary"] = text[:MAX_SUMMARY_CHARS]
            if not still_running:
                raise Canceled
            calls = [b for b in response.content if b.type == "tool_use"]
            messages.append(
                {"role": "assistant",
                 "content": [b.model_dump(exclude_none=True) for b in response.content]}
            )
            if not calls:
                return result
            answers = []
            for call in calls:
                self._check_time(started)
                answers.append(_tool_call(job, tool, call, result))
            messages.append({"role": "user", "content": answers})
        raise DreamFailed(
            "dream_turn_limit",
            f"the model still wanted to use the memory tool after {self.max_turns} turns "
            "(MEMFS_DREAM_MAX_TURNS); the output store keeps what it wrote so far",
        )

    def _check_time(self, started: float) -> None:
        """Raises DreamFailed ``dream_time_limit`` past the wall-time limit."""
        if self.clock() - started > self.time_limit_s:
            raise DreamFailed(
                "dream_time_limit",
                f"the dream ran longer than {self.time_limit_s:g} s (MEMFS_DREAM_TIME_LIMIT); "
                "the output store keeps what it wrote so far",
            )


def _tool_call(
    job: DreamJob, tool: MemfsMemoryTool, call: Any, result: dict[str, Any]
) -> dict[str, Any]:
    """Runs one ``tool_use`` block (after checking for a cancel), records it as the
    session's ``agent.tool_use`` and ``agent.tool_result`` events and in ``result``;
    returns the ``tool_result`` block for the model.

    Raises:
        Canceled: the dream was canceled.
    """
    from anthropic.lib.tools import ToolError

    command = dict(call.input) if isinstance(call.input, dict) else {}
    if not job.step(_command_line(command)):
        raise Canceled
    [used] = job.events([{"type": "agent.tool_use", "name": call.name, "input": command}])
    is_error = True
    output: Any
    if call.name != "memory":
        output = f"Error: unknown tool {call.name!r}; the only tool is memory"
    else:
        try:
            output = tool.call(command)
            is_error = False
        except ToolError as refused:
            output = refused.content
        except (ValueError, TypeError, NotImplementedError) as bad:  # a malformed command
            output = f"Error: {bad}"
    text = output if isinstance(output, str) else str(output)
    job.events([{"type": "agent.tool_result", "tool_use_id": used.id,
                 "content": [{"type": "text", "text": text}], "is_error": is_error}])
    result["tool_calls"] += 1
    result["tool_errors"] += int(is_error)
    if not is_error and command.get("command") in _WRITES:
        change = {"command": str(command["command"])}
        for key in ("path", "old_path", "new_path"):
            if key in command:
                change[key] = str(command[key])
        result["changes"].append(change)
    return {"type": "tool_result", "tool_use_id": call.id, "content": text,
            "is_error": is_error}
