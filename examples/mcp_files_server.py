"""A small, real downstream MCP server for Warrant's demo and tests: a notebook kept in one file.

    python examples/mcp_files_server.py --effects .warrant/effects.log              # stdio
    python examples/mcp_files_server.py --effects /tmp/e.log --http 9000            # streamable HTTP at /mcp

Every side effect it performs is one JSON line appended to the `--effects` file, and the file is
also its whole state (notes survive a restart of the process). A write that carries an
idempotency key in `_meta["warrant/idempotency_key"]` is performed at most once per key: a
repeat answers the first result and appends nothing.

Tools: `read_note {title}` (read-only), `write_note {title, body}` (appends one effect).
Test hooks, all off by default:

    --test-tools            also list `slow_write` (performs its effect, then answers only once the
                            `--release` file exists: forever without one), `hang_read` (never
                            answers; it notes when it starts and when it is cancelled in
                            `hooks.log` next to the effects file) and `fail` (an isError
                            result, no effect)
    --release FILE          see slow_write
    --describe-version FILE re-read on every tools/list: a non-empty content is appended to
                            write_note's description, so a test can change a definition at run time
    --extra-tools FILE      re-read on every tools/list: one name per line, each listed as a further
                            write tool (`<name> {title, body}`), so a test can add a tool at run time
    --pid-file FILE         the process id is written there at start (a test kills the process)
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

IDEMPOTENCY_META = "warrant/idempotency_key"
NOTE = {
    "type": "object",
    "properties": {"title": {"type": "string", "minLength": 1}, "body": {"type": "string"}},
    "required": ["title", "body"],
    "additionalProperties": False,
}
TITLE = {
    "type": "object",
    "properties": {"title": {"type": "string", "minLength": 1}},
    "required": ["title"],
    "additionalProperties": False,
}
WRITE_DESCRIPTION = "Add a note to the notebook."


class Notebook:
    def __init__(self, args: argparse.Namespace) -> None:
        self.effects = Path(args.effects)
        self.release = Path(args.release) if args.release else None
        self.describe_version = Path(args.describe_version) if args.describe_version else None
        self.extra_tools = Path(args.extra_tools) if args.extra_tools else None
        self.test_tools = bool(args.test_tools)
        self.lock = anyio.Lock()

    # -- state: the effects file ------------------------------------------------------------
    def entries(self) -> list[dict[str, Any]]:
        if not self.effects.exists():
            return []
        lines = self.effects.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    async def write(self, tool: str, args: dict[str, Any], key: str | None) -> tuple[dict[str, Any], bool]:
        """The note written (or written earlier under this key), and whether this call wrote it."""
        async with self.lock:
            entries = self.entries()
            if key is not None:
                for entry in entries:
                    if entry.get("key") == key:
                        return entry, False
            entry = {
                "id": f"note-{len(entries) + 1}",
                "tool": tool,
                "title": args["title"],
                "body": args["body"],
                "key": key,
                "pid": os.getpid(),
            }
            self.effects.parent.mkdir(parents=True, exist_ok=True)
            with self.effects.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, sort_keys=True) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            return entry, True

    def trace(self, line: str) -> None:
        """What a test hook saw, one line in `hooks.log` next to the effects file (not an effect)."""
        self.effects.parent.mkdir(parents=True, exist_ok=True)
        with (self.effects.parent / "hooks.log").open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    # -- tools/list --------------------------------------------------------------------------
    def tools(self) -> list[types.Tool]:
        description = WRITE_DESCRIPTION
        if self.describe_version is not None and self.describe_version.exists():
            version = self.describe_version.read_text(encoding="utf-8").strip()
            if version:
                description = f"{WRITE_DESCRIPTION} ({version})"
        tools = [
            types.Tool(
                name="read_note",
                description="Read a note by its title.",
                input_schema=TITLE,
                annotations=types.ToolAnnotations(read_only_hint=True),
            ),
            types.Tool(
                name="write_note",
                description=description,
                input_schema=NOTE,
                annotations=types.ToolAnnotations(read_only_hint=False, idempotent_hint=True),
            ),
        ]
        if self.test_tools:
            tools += [
                types.Tool(
                    name="slow_write",
                    description="Add a note, then answer only once released.",
                    input_schema=NOTE,
                ),
                types.Tool(
                    name="hang_read",
                    description="Never answers.",
                    input_schema={"type": "object"},
                    annotations=types.ToolAnnotations(read_only_hint=True),
                ),
                types.Tool(
                    name="fail",
                    description="Always fails, doing nothing.",
                    input_schema={"type": "object", "properties": {"reason": {"type": "string"}}},
                ),
            ]
        for name in self.extra():
            tools.append(types.Tool(name=name, description=f"Add a note ({name}).", input_schema=NOTE))
        return tools

    def extra(self) -> list[str]:
        if self.extra_tools is None or not self.extra_tools.exists():
            return []
        return [line.strip() for line in self.extra_tools.read_text(encoding="utf-8").splitlines() if line.strip()]

    # -- tools/call --------------------------------------------------------------------------
    async def call(self, name: str, args: dict[str, Any], meta: dict[str, Any]) -> types.CallToolResult:
        key = meta.get(IDEMPOTENCY_META)
        key = key if isinstance(key, str) else None
        if name == "read_note":
            for entry in reversed(self.entries()):
                if entry["title"] == args.get("title"):
                    return _result(f"{entry['title']}: {entry['body']}", {"id": entry["id"], "body": entry["body"]})
            return _error(f"no note titled {args.get('title')!r}")
        if name == "write_note" or name in self.extra():
            entry, _ = await self.write(name, args, key)
            return _result(f"noted {entry['id']}", {"id": entry["id"], "title": entry["title"]})
        if self.test_tools and name == "slow_write":
            entry, _ = await self.write(name, args, key)
            # Released by another process (a test) creating a file: polled, there is nothing to await.
            while self.release is None or not self.release.exists():  # noqa: ASYNC110
                await anyio.sleep(0.02)
            return _result(f"noted {entry['id']}", {"id": entry["id"], "title": entry["title"]})
        if self.test_tools and name == "hang_read":
            self.trace("hang_read started")
            try:
                await anyio.sleep_forever()
            finally:
                self.trace("hang_read cancelled")  # the client cancelled it (notifications/cancelled)
        if self.test_tools and name == "fail":
            return _error(f"the notebook refused: {args.get('reason') or 'no reason'}")
        return _error(f"no tool {name!r}")


def _result(text: str, structured: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def build_server(notebook: Notebook) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=notebook.tools())

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        meta = dict(ctx.meta or {})
        return await notebook.call(params.name, dict(params.arguments or {}), meta)

    def input_schema(name: str) -> dict[str, Any] | None:
        for tool in notebook.tools():
            if tool.name == name:
                return tool.input_schema
        return None

    return Server(
        "warrant-example-notebook",
        version="1",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http(server: Server[Any], port: int) -> None:
    import contextlib
    from collections.abc import AsyncIterator

    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    mcp_app = server.streamable_http_app(stateless_http=True, json_response=True)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    app = Starlette(routes=[Mount("/", mcp_app)], lifespan=lifespan)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--effects", default=".warrant/effects.log", help="the side-effect file (also the state)")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument("--test-tools", action="store_true")
    parser.add_argument("--release")
    parser.add_argument("--describe-version")
    parser.add_argument("--extra-tools")
    parser.add_argument("--pid-file")
    args = parser.parse_args(argv)
    if args.pid_file:
        Path(args.pid_file).write_text(str(os.getpid()), encoding="utf-8")
    server = build_server(Notebook(args))
    if args.http is not None:
        serve_http(server, args.http)
    else:
        anyio.run(serve_stdio, server)


if __name__ == "__main__":
    main()
