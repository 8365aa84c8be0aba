"""The memfs MCP server: the memory commands as MCP tools, memories as MCP resources.

One low-level ``mcp.server.lowlevel.Server`` serves both transports (stdio in
:mod:`memfs.mcp.stdio`, streamable HTTP in :mod:`memfs.mcp.http`). It asks a
*files provider* for the :class:`~memfs.memory_tool.files.MemoryFiles` of the request
being served: the process's one service on stdio, the caller's (its credential's stores
and access modes) on HTTP.

Tools (:data:`TOOLS`): ``view``, ``create``, ``str_replace``, ``insert``, ``delete``,
``rename`` take the arguments of the ``memory_20250818`` tool's commands and answer its
texts (paths under ``/memories``); ``list_stores`` answers the attached stores as JSON.
``search`` answers ranked full-text hits of the attached stores as JSON (SPEC §7).

Resources: every memory is ``memfs://<slug>/<path>`` (``<path>`` percent-encoded as a URI
path); a store may also be named by its id (``memfs://memstore_…/<path>``).

Errors, in one table each way (the errno-table shape): a refused tool call is a tool
result with ``isError: true`` and the memory tool's text (the model can act on it); a
refused resource read is a JSON-RPC error whose code :data:`JSONRPC_CODE_BY_REFUSAL`
picks from the refusal's kind, so a store the credential can't reach is an MCP error,
never data.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.shared.exceptions import McpError

from memfs.core.query import DEFAULT_SEARCH_LIMIT
from memfs.memory_tool.access import Attachment
from memfs.memory_tool.files import MemoryFiles
from memfs.memory_tool.refusals import RefusalKind, Refused

__all__ = [
    "JSONRPC_CODE_BY_REFUSAL",
    "RESOURCE_SCHEME",
    "SERVER_NAME",
    "TOOLS",
    "FilesProvider",
    "ToolSpec",
    "build_server",
    "resource_uri",
]

SERVER_NAME = "memfs"
RESOURCE_SCHEME = "memfs"
# MCP specification, "Resources › Error handling": resource not found is -32002.
RESOURCE_NOT_FOUND = -32002

# JSON-RPC error codes of refused resource reads, by refusal kind (JSON-RPC 2.0 §5.1 and
# the MCP specification's resource error codes).
JSONRPC_CODE_BY_REFUSAL: dict[RefusalKind, int] = {
    RefusalKind.INVALID: types.INVALID_PARAMS,
    RefusalKind.NOT_FOUND: RESOURCE_NOT_FOUND,
    RefusalKind.EXISTS: types.INVALID_PARAMS,
    RefusalKind.READ_ONLY: types.INVALID_REQUEST,
    RefusalKind.CONFLICT: types.INVALID_REQUEST,
    RefusalKind.FULL: types.INVALID_REQUEST,
    RefusalKind.DENIED: types.INVALID_REQUEST,
    RefusalKind.UNAVAILABLE: types.INTERNAL_ERROR,
    RefusalKind.INTERNAL: types.INTERNAL_ERROR,
}

FilesProvider = Callable[[], Awaitable[MemoryFiles]]

_PATH = {"type": "string", "description": "A path under /memories, e.g. /memories/notes.md"}


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: its schema and what it does.

    Attributes:
        name: the tool's name.
        description: what the model reads about it.
        properties: JSON Schema properties of its arguments.
        required: the required argument names.
        run: ``(files, arguments) -> text`` answering the call; raises Refused.
    """

    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    run: Callable[[MemoryFiles, dict[str, Any]], Awaitable[str]]

    def to_tool(self) -> types.Tool:
        schema = {
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
            "additionalProperties": False,
        }
        return types.Tool(name=self.name, description=self.description, inputSchema=schema)


async def _list_stores(files: MemoryFiles, _arguments: dict[str, Any]) -> str:
    return json.dumps(
        [
            {
                "name": a.name,
                "memory_store_id": a.store_id,
                "directory": files.tool_path(a, "/"),
                "access": a.access.value,
                "description": a.description,
                "instructions": a.instructions,
            }
            for a in files.attachments
        ],
        indent=2,
    )


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "view",
            "Show a memory directory (two levels deep) or a memory file with line numbers.",
            {
                "path": _PATH,
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "minItems": 2,
                    "maxItems": 2,
                    "description": "[first, last] line numbers of a file; last -1 = to the end",
                },
            },
            ("path",),
            lambda f, a: f.view(a["path"], a.get("view_range")),
        ),
        ToolSpec(
            "create",
            "Create a new memory file (UTF-8 text, at most 100 KB). Never overwrites.",
            {"path": _PATH, "file_text": {"type": "string"}},
            ("path", "file_text"),
            lambda f, a: f.create(a["path"], a["file_text"]),
        ),
        ToolSpec(
            "str_replace",
            "Replace the one occurrence of old_str in a memory file by new_str.",
            {"path": _PATH, "old_str": {"type": "string"}, "new_str": {"type": "string"}},
            ("path", "old_str", "new_str"),
            lambda f, a: f.str_replace(a["path"], a["old_str"], a["new_str"]),
        ),
        ToolSpec(
            "insert",
            "Insert text after line insert_line of a memory file (0 = at the top).",
            {"path": _PATH, "insert_line": {"type": "integer"}, "insert_text": {"type": "string"}},
            ("path", "insert_line", "insert_text"),
            lambda f, a: f.insert(a["path"], a["insert_line"], a["insert_text"]),
        ),
        ToolSpec(
            "delete",
            "Delete a memory file, or a directory and every file below it.",
            {"path": _PATH},
            ("path",),
            lambda f, a: f.delete(a["path"]),
        ),
        ToolSpec(
            "rename",
            "Rename or move a memory file or directory within its memory store.",
            {"old_path": _PATH, "new_path": _PATH},
            ("old_path", "new_path"),
            lambda f, a: f.rename(a["old_path"], a["new_path"]),
        ),
        ToolSpec(
            "search",
            'Find memory files by words, best first: every word must match; "a phrase", '
            "prefix*, -excluded; Japanese and other text without spaces matches as a "
            "substring. Answers JSON hits: path, memory_store_id, score, snippet.",
            {
                "query": {"type": "string", "description": "The words to find."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            },
            ("query",),
            lambda f, a: f.search(a["query"], a.get("limit", DEFAULT_SEARCH_LIMIT)),
        ),
        ToolSpec(
            "list_stores",
            "List the attached memory stores: name, id, directory under /memories, access "
            "(read_write or read_only), description and instructions.",
            {},
            (),
            _list_stores,
        ),
    )
}


def resource_uri(attachment: Attachment, memory_path: str) -> str:
    """``memfs://<slug>/<path>``, the path percent-encoded (``/`` kept)."""
    return f"{RESOURCE_SCHEME}://{attachment.slug}{quote(memory_path, safe='/')}"


def _mime_type(path: str) -> str:
    return "text/markdown" if path.endswith(".md") else "text/plain"


def _resource_error(refused: Refused) -> McpError:
    code = JSONRPC_CODE_BY_REFUSAL[refused.kind]
    return McpError(types.ErrorData(code=code, message=refused.text))


def _parse_uri(files: MemoryFiles, uri: str) -> tuple[Attachment, str]:
    """The store and memory path a resource URI names.

    Raises:
        McpError: not a memfs URI, or a store the caller has no attachment of.
    """
    prefix = f"{RESOURCE_SCHEME}://"
    if not uri.startswith(prefix):
        raise _resource_error(Refused(f"{uri} is not a {prefix}<store>/<path> URI"))
    store, _, path = uri[len(prefix) :].partition("/")
    for attachment in files.attachments:
        if store in (attachment.slug, attachment.store_id):
            return attachment, "/" + unquote(path)
    # The same answer whether the store exists or not (SPEC §3: existence not revealed).
    raise _resource_error(
        Refused(f"No attached memory store is named {store!r}", RefusalKind.NOT_FOUND)
    )


def build_server(files_provider: FilesProvider) -> Server[Any, Any]:
    """The MCP server over the memory files ``files_provider`` gives each request.

    Args:
        files_provider: returns the service of the request being handled.
    """
    server: Server[Any, Any] = Server(
        SERVER_NAME,
        instructions=(
            "Memory files of memfs stores under /memories: view, create, str_replace, "
            "insert, delete, rename; list_stores names the stores and their access. Every "
            "change is a new version of the memory, attributed to this session (or API key)."
        ),
    )

    @server.list_tools()  # type: ignore[no-untyped-call,untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return [spec.to_tool() for spec in TOOLS.values()]

    @server.call_tool()  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        spec = TOOLS.get(name)
        if spec is None:
            text, error = f"Unknown tool: {name}", True
        else:
            files = await files_provider()
            try:
                text, error = await spec.run(files, arguments), False
            except Refused as refused:
                text, error = refused.text, True
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], isError=error
        )

    @server.list_resources()  # type: ignore[no-untyped-call,untyped-decorator]
    async def list_resources() -> list[types.Resource]:
        files = await files_provider()
        try:
            every = await files.every_file()
        except Refused as refused:
            raise _resource_error(refused) from refused
        return [
            types.Resource(
                uri=resource_uri(attachment, info.path),  # type: ignore[arg-type]
                name=files.tool_path(attachment, info.path),
                mimeType=_mime_type(info.path),
                size=info.size_bytes,
            )
            for attachment, info in every
        ]

    @server.list_resource_templates()  # type: ignore[no-untyped-call,untyped-decorator]
    async def list_resource_templates() -> list[types.ResourceTemplate]:
        return [
            types.ResourceTemplate(
                uriTemplate=f"{RESOURCE_SCHEME}://{{store}}/{{+path}}",
                name="memory",
                description="A memory of an attached store (store: its directory name or id)",
            )
        ]

    @server.read_resource()  # type: ignore[no-untyped-call,untyped-decorator]
    async def read_resource(uri: Any) -> Iterable[ReadResourceContents]:
        files = await files_provider()
        attachment, memory_path = _parse_uri(files, str(uri))
        try:
            found = await files.read(attachment, memory_path)
        except Refused as refused:
            raise _resource_error(refused) from refused
        return [ReadResourceContents(content=found.content, mime_type=_mime_type(memory_path))]

    return server
