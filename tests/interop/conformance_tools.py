"""The tools the official MCP conformance suite's server scenarios call, as a test adapter behind the gate.

The suite (`@modelcontextprotocol/conformance`, `conformance server --url ...`) acts as a client and
calls tools by fixed names (`test_simple_text`, `test_image_content`, ...), each with a fixed
answer. Warrant is a gateway, so those tools live in an adapter behind it, exposed under the
suite's bare names with `expose_as`, each with a read policy; every call the suite makes then
goes through the whole gate (token, authority, budget, ledger) like any other.

The scenarios whose tool talks back to the client *during* a call (`test_tool_with_logging`,
`test_tool_with_progress`, `test_sampling`, `test_elicitation`) need a server-to-client channel
that a stateless JSON front and an adapter do not have; their tools are listed here anyway, so
that those scenarios fail on the missing notifications, not on a missing tool.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.adapters import Adapter, CallRequest, Outcome, OutcomeKind, ToolDefinition

# A 1x1 red PNG and a minimal WAV, base64: the suite checks type, data and mimeType only.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA=="

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}

# The suite's own JSON Schema 2020-12 tool (scenario json-schema-2020-12): every keyword must
# come back unchanged from tools/list.
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _ok(*content: dict[str, Any]) -> Outcome:
    return Outcome(OutcomeKind.SUCCEEDED, content=list(content), receipt={"digest": "-"})


RESOURCE = {
    "type": "resource",
    "resource": {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    },
}
MIXED_RESOURCE = {
    "type": "resource",
    "resource": {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": json.dumps({"test": "data", "value": 123}),
    },
}

# name -> (description, input schema, outcome)
TOOLS: dict[str, tuple[str, dict[str, Any], Outcome]] = {
    "test_simple_text": (
        "Returns simple text content",
        NO_ARGUMENTS,
        _ok(_text("This is a simple text response for testing.")),
    ),
    "test_image_content": (
        "Returns image content",
        NO_ARGUMENTS,
        _ok({"type": "image", "data": PNG, "mimeType": "image/png"}),
    ),
    "test_audio_content": (
        "Returns audio content",
        NO_ARGUMENTS,
        _ok({"type": "audio", "data": WAV, "mimeType": "audio/wav"}),
    ),
    "test_embedded_resource": ("Returns an embedded resource", NO_ARGUMENTS, _ok(RESOURCE)),
    "test_multiple_content_types": (
        "Returns text, image and resource content",
        NO_ARGUMENTS,
        _ok(
            _text("Multiple content types test:"),
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            MIXED_RESOURCE,
        ),
    ),
    "test_error_handling": (
        "Always fails",
        NO_ARGUMENTS,
        Outcome(
            OutcomeKind.FAILED, code="upstream_failed", message="This tool intentionally returns an error for testing"
        ),
    ),
    "json_schema_2020_12_tool": ("Tool with JSON Schema 2020-12 features", JSON_SCHEMA_2020_12, _ok(_text("ok"))),
    # These need a server-to-client channel during the call; see the module docstring.
    "test_tool_with_progress": ("Reports progress (needs notifications)", NO_ARGUMENTS, _ok(_text("done"))),
    "test_tool_with_logging": ("Logs while running (needs notifications)", NO_ARGUMENTS, _ok(_text("done"))),
    "test_sampling": (
        "Asks the client's model (needs sampling)",
        {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
        _ok(_text("no sampling through a gateway")),
    ),
    "test_elicitation": (
        "Asks the user (needs elicitation)",
        {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
        _ok(_text("no elicitation through a gateway")),
    ),
}

POLICY_YAML = "".join(f"  {name}: {{effect: read}}\n" for name in TOOLS)


class ConformanceAdapter(Adapter):
    name = "conf"

    def definitions(self) -> list[ToolDefinition]:
        return [
            ToolDefinition(name, description, schema, expose_as=name)
            for name, (description, schema, _) in TOOLS.items()
        ]

    async def call(self, request: CallRequest) -> Outcome:
        entry = TOOLS.get(request.tool)
        if entry is None:
            return Outcome(OutcomeKind.NOT_SENT, code="tool_not_found", message=f"no tool {request.tool}")
        return entry[2]
