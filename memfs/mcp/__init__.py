"""The MCP server of memfs (SPEC §5 ``memfs mcp``): the memory tool's commands
and ``list_stores`` as MCP tools, every memory as an MCP resource, over the same stores,
versions, preconditions, attribution, read-only rules and limits as a mount.

==========================  ====================================================
module                      concern
==========================  ====================================================
``server``                  the tools, the resources, refusals → MCP errors
``stdio``                   ``memfs mcp``: stdio, one service per process
``http``                    ``/mcp`` under ``memfs serve``: streamable HTTP, the
                            REST API's bearer-token authentication per request
==========================  ====================================================

The commands themselves are :class:`memfs.memory_tool.files.MemoryFiles`, shared with
the SDK memory tool.
"""
