"""The official MCP conformance suite's tool scenarios, through Warrant, on both protocol revisions.

`conformance server --requirements <revision>` runs, as a client, every server scenario that
revision requires, each on that revision's wire (2025-11-25: initialize handshake; 2026-07-28:
stateless, `_meta` on every request, MCP-Protocol-Version/Mcp-Method/Mcp-Name headers), and
checks every message Warrant sends against the revision's JSON schema. It calls tools by fixed
names; tests/interop/conformance_tools.py serves them from an adapter behind the gate, so every
scenario's call passes the whole gate. The suite sends no headers of its own, so a proxy on
loopback adds the lease token (tests/interop/conftest.py: BearerProxy).

Only the tool scenarios are asserted (Warrant serves tools; no resources, prompts, completion or
logging). Those that need the server to reach the client in the middle of a call (progress and
log notifications, sampling and elicitation requests) are known gaps: a stateless gateway that
answers with JSON has no such channel, and the gate has no way for an adapter to use one. They
are asserted to still fail, so that the day they pass this test says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import Api
from tests.interop.conftest import CONFORMANCE_AUTHORITY, BearerProxy, lease_token
from tests.interop.nodejs import CONFORMANCE, run_node

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PASS = [
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "json-schema-2020-12",
]
GAPS = {
    "2025-11-25": {
        "tools-call-with-progress": "progress notifications during a call",
        "tools-call-with-logging": "logging/setLevel and log notifications during a call",
        "tools-call-sampling": "a sampling/createMessage request to the client during a call",
        "tools-call-elicitation": "an elicitation/create request to the client during a call",
    },
    "2026-07-28": {
        "tools-call-with-progress": "progress notifications during a call",
    },
}
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def results(out: Path) -> dict[str, list[dict[str, Any]]]:
    """scenario -> its checks, from the suite's `-o` folder (one `server-<scenario>-<time>/checks.json` each)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in out.glob("server-*/checks.json"):
        match = RESULT_DIR.match(checks.parent.name)
        assert match, checks
        found[match["scenario"]] = json.loads(checks.read_text())
    return found


def failing(checks: list[dict[str, Any]]) -> list[str]:
    return [
        f"{c['id']}: {c['status']} {c.get('errorMessage', '')}" for c in checks if c["status"] in ("FAILURE", "WARNING")
    ]


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_conformance_tool_scenarios_pass_through_the_gateway(
    conformance_api: Api, bearer_proxy: Callable[[str, str], Awaitable[BearerProxy]], tmp_path: Path, revision: str
) -> None:
    token = await lease_token(
        conformance_api,
        authority=CONFORMANCE_AUTHORITY,
        budgets={"spend": "1.00", "tool_calls": 1000, "writes": 10, "active_seconds": 7200},
    )
    proxy = await bearer_proxy(conformance_api.url, token)
    out = tmp_path / "results"
    ran = await run_node(
        CONFORMANCE,
        "server",
        "--url",
        f"{proxy.url}/mcp",
        "--requirements",
        revision,
        "--timeout",
        "10000",
        "-o",
        out,
        time_limit=90,
    )
    # The suite exits non-zero: Warrant fails the resource, prompt and completion scenarios by design.
    found = results(out)
    assert found, f"the suite wrote no results\n{ran.stdout}\n{ran.stderr}"

    for scenario in PASS:
        assert scenario in found, f"{scenario} did not run at {revision}"
        assert not failing(found[scenario]), f"{scenario} at {revision}: {failing(found[scenario])}"
        assert any(c["status"] == "SUCCESS" for c in found[scenario])
    for scenario, needs in GAPS[revision].items():
        assert failing(found[scenario]), f"{scenario} passes at {revision} now ({needs}): move it to PASS"

    # The calls went through the gate (an action was recorded for each), on the revision's own wire.
    (simple,) = (c for c in found["tools-call-simple-text"] if c["id"] == "tools-call-simple-text")
    assert simple["details"]["result"]["_meta"]["warrant/action_id"].startswith("act_")
    other = {"2025-11-25", "2026-07-28"} - {revision}
    assert revision in proxy.protocol_versions and not other & proxy.protocol_versions, proxy.protocol_versions
