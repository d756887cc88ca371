"""In-process adapter: plain async Python functions as tools.

    notes = PythonAdapter("notes")

    @notes.tool(input_schema={...}, description="Append a note.")
    async def append(args: dict, call: CallRequest) -> dict: ...

A function's return value becomes the result: a `str` is text content; a dict or list is
structured content (and its JSON as text); an `Outcome` is passed through. Raise `NotSent` when
nothing happened (safe to retry), `ToolFailed` when the tool definitely failed. Any other
exception leaves the outcome open: the gate records a write as `unknown`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.adapters.base import Adapter, CallRequest, Outcome, OutcomeKind, ToolDefinition
from gateway.canonical import canonical_json, sha256_hex
from gateway.errors import Code

ToolFunction = Callable[[dict[str, Any], CallRequest], Awaitable[Any]]


class NotSent(Exception):
    """The tool did nothing; the call may be retried."""


class ToolFailed(Exception):
    """The tool definitely failed and did nothing lasting."""

    def __init__(self, message: str, code: str = Code.UPSTREAM_FAILED) -> None:
        super().__init__(message)
        self.code = code


class PythonAdapter(Adapter):
    def __init__(self, name: str) -> None:
        self.name = name
        self._tools: dict[str, tuple[ToolDefinition, ToolFunction]] = {}

    def destination(self, tool: str, arguments: Any) -> str:
        return f"in-process tool {tool} of adapter {self.name}"

    def tool(
        self,
        *,
        input_schema: dict[str, Any],
        description: str = "",
        name: str | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> Callable[[ToolFunction], ToolFunction]:
        def register(fn: ToolFunction) -> ToolFunction:
            tool_name = name or fn.__name__
            definition = ToolDefinition(
                tool_name, description or (fn.__doc__ or "").strip(), input_schema, output_schema=output_schema
            )
            self._tools[tool_name] = (definition, fn)
            return fn

        return register

    def definitions(self) -> list[ToolDefinition]:
        return [definition for definition, _ in self._tools.values()]

    async def call(self, request: CallRequest) -> Outcome:
        entry = self._tools.get(request.tool)
        if entry is None:
            return Outcome(OutcomeKind.NOT_SENT, code=Code.TOOL_NOT_FOUND, message=f"no tool {request.tool}")
        try:
            value = await entry[1](request.arguments, request)
        except NotSent as exc:
            return Outcome(OutcomeKind.NOT_SENT, code=Code.UPSTREAM_UNAVAILABLE, message=str(exc))
        except ToolFailed as exc:
            return Outcome(OutcomeKind.FAILED, code=exc.code, message=str(exc))
        return to_outcome(value)


def to_outcome(value: Any) -> Outcome:
    if isinstance(value, Outcome):
        return value
    if isinstance(value, str):
        return Outcome(
            OutcomeKind.SUCCEEDED,
            content=[{"type": "text", "text": value}],
            receipt={"digest": sha256_hex(value.encode())},
        )
    structured = value if isinstance(value, dict) else {"result": value}
    receipt: dict[str, Any] = {"digest": sha256_hex(canonical_json(structured))}
    if isinstance(value, dict) and "id" in value:
        receipt["id"] = value["id"]
    return Outcome(
        OutcomeKind.SUCCEEDED,
        content=[{"type": "text", "text": json.dumps(value, ensure_ascii=False)}],
        structured=structured,
        receipt=receipt,
    )
