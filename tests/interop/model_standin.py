"""A loopback stand-in for the Anthropic Messages API, playing a scripted model.

Claude Code (tests/interop/test_claude_code.py) is pointed at it with `ANTHROPIC_BASE_URL`. It
serves `POST /v1/messages` as the real API does, streamed as Server-Sent Events
(`message_start`, `content_block_*`, `message_delta`, `message_stop`) when the request says
`stream: true`, one JSON message otherwise, and `POST /v1/messages/count_tokens`. Each request
body is kept, so a test asserts on exactly what the client handed its model: the tool list and
the `tool_result` blocks.

The model is a `Script`: an async function from the conversation so far (`Turn`) to the next
reply, a list of `text(...)` and `use(...)` blocks. Anything else the client asks for is answered
404 and recorded in `unexpected`, for the test to fail on.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass
class ToolResult:
    """One `tool_result` block as the client sent it, with the name of the tool it answers."""

    tool: str
    arguments: dict[str, Any]
    is_error: bool
    text: str  # every text part, joined by newlines
    block: dict[str, Any]


@dataclass
class Turn:
    """One main-loop request: `number` counts from 1; `results` answer the previous turn's calls."""

    number: int
    body: dict[str, Any]
    results: list[ToolResult]

    @property
    def tools(self) -> list[str]:
        return [tool["name"] for tool in self.body.get("tools", [])]

    @property
    def result(self) -> ToolResult:
        """The one result a one-call turn got back."""
        assert len(self.results) == 1, f"expected one tool_result, got {self.results}"
        return self.results[0]


Block = dict[str, Any]
Script = Callable[[Turn], Awaitable[list[Block]]]


def text(words: str) -> Block:
    return {"type": "text", "text": words}


def use(tool: str, arguments: dict[str, Any]) -> Block:
    return {"type": "tool_use", "name": tool, "input": arguments}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if part.get("type") == "text")


def tool_results(body: dict[str, Any]) -> list[ToolResult]:
    """The tool_result blocks of the request's last user message, matched to the tool_use they answer."""
    uses: dict[str, Block] = {}
    for message in body["messages"]:
        if message["role"] == "assistant" and isinstance(message["content"], list):
            uses.update({b["id"]: b for b in message["content"] if b.get("type") == "tool_use"})
    # The last message from the user's side; Claude Code may append `system` reminders after it.
    last = next(m for m in reversed(body["messages"]) if m["role"] != "system")
    if last["role"] != "user" or isinstance(last["content"], str):
        return []
    found = []
    for block in last["content"]:
        if block.get("type") == "tool_result":
            called = uses.get(block["tool_use_id"], {})
            found.append(
                ToolResult(
                    tool=called.get("name", "?"),
                    arguments=called.get("input", {}),
                    is_error=bool(block.get("is_error")),
                    text=_text_of(block.get("content")),
                    block=block,
                )
            )
    return found


@dataclass
class ModelStandIn:
    """The ASGI app (`app`) and what it saw: `turns` (the main loop), `side` (requests without tools)."""

    script: Script
    turns: list[Turn] = field(default_factory=list)
    side: list[dict[str, Any]] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)

    def play(self, script: Script) -> None:
        """From now on, play `script`, from its first turn."""
        self.script = script
        for seen in (self.turns, self.side, self.unexpected, self.failures):
            seen.clear()

    @property
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/{path:path}", self._other, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]),
            ]
        )

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        if not body.get("tools"):
            # Not the agent's loop (a title, a summary): a short answer, kept apart.
            self.side.append(body)
            blocks = [text("ok")]
        else:
            turn = Turn(len(self.turns) + 1, body, tool_results(body))
            self.turns.append(turn)
            try:
                blocks = await self.script(turn)
            except BaseException as exc:  # the test re-raises it; the client is told to stop
                self.failures.append(exc)
                blocks = [text(f"the scripted model failed: {exc!r}")]
        for n, block in enumerate(blocks):
            if block["type"] == "tool_use":
                block.setdefault("id", f"toolu_{len(self.turns):02d}_{n}")
        message = {
            "id": f"msg_{len(self.turns) + len(self.side):04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "stand-in"),
            "content": blocks,
            "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }
        if body.get("stream"):
            return StreamingResponse(_events(message), media_type="text/event-stream")
        return JSONResponse(message)

    async def _count_tokens(self, request: Request) -> Response:
        return JSONResponse({"input_tokens": 10})

    async def _other(self, request: Request) -> Response:
        self.unexpected.append(f"{request.method} {request.url.path}")
        return JSONResponse({"type": "error", "error": {"type": "not_found_error", "message": "stand-in"}}, 404)


def _sse(kind: str, data: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n"


async def _events(message: dict[str, Any]) -> AsyncIterator[str]:
    """The message as the Messages API streams it: each block opened, filled by one delta, closed."""
    opening = {**message, "content": [], "stop_reason": None}
    yield _sse("message_start", {"type": "message_start", "message": opening})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield _sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        yield _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield _sse("message_delta", {"type": "message_delta", "delta": stop, "usage": {"output_tokens": 10}})
    yield _sse("message_stop", {"type": "message_stop"})
