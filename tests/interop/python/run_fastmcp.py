"""The fastmcp client, default settings, on Warrant's /mcp, driven by the script (it has no model of its own).

`python run_fastmcp.py URL` with WARRANT_TOKEN, in the venv of tests/interop/python/agents.txt.
What an agent loop built on it gets, and so passes to its model: for a result, `.data` (the
structured content) and the text blocks; for an `isError` result, the `ToolError` that
`call_tool` raises by default, whose message is the first text block.
"""

from __future__ import annotations

from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError
from mcp.types import TextContent
from scenario import Script, play


async def agent(script: Script, url: str, headers: dict[str, str]) -> None:
    # One client (one configuration, one session) for the whole run, waits included.
    async with Client(StreamableHttpTransport(url, headers=headers)) as client:
        script.offered([tool.name for tool in await client.list_tools()])
        while (call := await script.next_call()) is not None:
            tool, arguments = call
            view: Any
            try:
                result = await client.call_tool(tool, arguments)
            except ToolError as refused:
                view = str(refused)
            else:
                texts = [block.text for block in result.content if isinstance(block, TextContent)]
                view = {"data": result.data, "text": texts}
            script.saw(view)


if __name__ == "__main__":
    play(agent)
