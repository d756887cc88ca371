"""A minimal agent harness: create a run, take its lease, and call tools through Warrant.

    WARRANT_API_KEY=wk-admin-... python examples/clients/harness.py

Uses the official MCP Python SDK client over streamable HTTP. A refused call is a result with
`isError` whose `structuredContent.error.code` says why; the harness branches on that code.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

URL = os.environ.get("WARRANT_URL", "http://127.0.0.1:8700")
CONTRACT = Path(__file__).resolve().parents[1] / "contracts" / "notes-demo.json"


async def main() -> int:
    key = os.environ.get("WARRANT_API_KEY")
    if not key:
        print("set WARRANT_API_KEY to an operator or admin key (make run prints one)", file=sys.stderr)
        return 2
    async with httpx.AsyncClient(base_url=URL, headers={"Authorization": f"Bearer {key}"}) as api:
        run = (await api.post("/api/runs", content=CONTRACT.read_text())).raise_for_status().json()
        lease = (await api.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "harness"})).json()
    print("run", run["run_id"], "lease epoch", lease["epoch"])

    headers = {"Authorization": f"Bearer {lease['token']}"}
    async with httpx2.AsyncClient(headers=headers) as http:
        async with Client(streamable_http_client(f"{URL}/mcp", http_client=http), cache=None) as mcp:
            tools = await mcp.list_tools()
            print("tools:", ", ".join(t.name for t in tools.tools))
            note = await mcp.call_tool(
                "notes__append",
                {"title": "Vendor A", "body": "pricing page checked"},
                meta={"warrant/operation_id": "vendor-a-note"},
            )
            print("append:", json.dumps(note.structured_content), note.meta)
            again = await mcp.call_tool(
                "notes__append",
                {"title": "Vendor A", "body": "pricing page checked"},
                meta={"warrant/operation_id": "vendor-a-note"},
            )
            print("same operation again:", again.content[0].text)
            sent = await mcp.call_tool("notes__send", {"note_id": "note-1", "to": "partner@example.com"})
            if sent.is_error and sent.structured_content:
                error = sent.structured_content["error"]
                print(f"send refused: {error['code']} (approval {error.get('approval_id')})")
            status = await mcp.call_tool("warrant_status", {})
            print("status:", status.content[0].text)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
