"""A scripted Messages API endpoint: it STANDS IN FOR A LANGUAGE MODEL in the tests of
the language-model dreamer. Nothing here thinks: each ``POST /v1/messages`` gets the
next reply of a script the test wrote (assistant turns with ``tool_use`` blocks, or an
API error), and every request is recorded (headers and JSON body) for the test to
check. The plumbing on memfs's side (the SDK call, the memory tool's commands, versions,
attribution, usage, failure) is real.

Usage::

    with ScriptedModel([turn(tool("view", path="/memories")), turn(text("done"))]) as m:
        ...  # point the dreamer at m.url
    assert len(m.requests) == 2
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["Error", "Recorded", "ScriptedModel", "text", "tool", "turn"]

_ids = itertools.count(1)


def text(value: str) -> dict[str, Any]:
    """A text block of an assistant turn."""
    return {"type": "text", "text": value}


def tool(command: str, **arguments: Any) -> dict[str, Any]:
    """A ``tool_use`` block calling the memory tool's ``command``."""
    return {
        "type": "tool_use",
        "id": f"toolu_{next(_ids):04d}",
        "name": "memory",
        "input": {"command": command, **arguments},
    }


def turn(
    *blocks: dict[str, Any], input_tokens: int = 100, output_tokens: int = 20,
    cache_read: int = 0, cache_creation: int = 0,
    before: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """One assistant turn: ``tool_use`` as its stop reason when it calls a tool, else
    ``end_turn``; its usage as given. ``before`` runs when the request arrives, before
    the reply (e.g. a cancel "while the model thinks")."""
    calls = any(b["type"] == "tool_use" for b in blocks)
    return {
        "message": {
            "id": f"msg_{next(_ids):04d}",
            "type": "message",
            "role": "assistant",
            "content": list(blocks),
            "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_creation,
            },
        },
        "before": before,
    }


@dataclass
class Error:
    """An API error reply (the Messages API's error body)."""

    status: int
    type: str
    message: str
    before: Callable[[], None] | None = None


@dataclass
class Recorded:
    """One request the endpoint got."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ScriptedModel:
    """The endpoint (module docstring), serving on ``url`` in a thread while open.

    Args:
        script: the replies, in order; a request past its end gets a 500 saying so
            (a test that sees it wrote too short a script).
    """

    script: Sequence[dict[str, Any] | Error]
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""

    def __post_init__(self) -> None:
        self._replies: Iterator[dict[str, Any] | Error] = iter(self.script)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with scripted._lock:
                    scripted.requests.append(
                        Recorded(self.path, {k.lower(): v for k, v in self.headers.items()},
                                 body)
                    )
                    reply = next(scripted._replies, None)
                if reply is None:
                    self._send(500, {"type": "error", "error": {
                        "type": "api_error", "message": "the scripted model's script ended"}})
                    return
                before = reply.before if isinstance(reply, Error) else reply["before"]
                if before is not None:
                    before()
                if isinstance(reply, Error):
                    self._send(reply.status, {"type": "error", "error": {
                        "type": reply.type, "message": reply.message}})
                    return
                self._send(200, {**reply["message"], "model": body.get("model", "")})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None  # quiet: the test reads self.requests

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._server is not None
        assert self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
