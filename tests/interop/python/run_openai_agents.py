"""The OpenAI Agents SDK, default settings, `MCPServerStreamableHttp` on Warrant's /mcp, a scripted `Model`.

`python run_openai_agents.py URL` with WARRANT_TOKEN, in the venv of tests/interop/python/agents.txt.
The scripted model implements the SDK's `Model` interface (no OpenAI client, tracing off): what it
reads is the `function_call_output` item the SDK built from each tool result, as a real model would.
"""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from scenario import TASK, Script, play


class ScriptedModel(Model):
    def __init__(self, script: Script) -> None:
        self.script = script

    async def get_response(
        self, system_instructions: Any, input: Any, model_settings: Any, tools: list[Any], *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.script.offered([tool.name for tool in tools])
        if isinstance(input, list) and input:
            last = input[-1]
            item = last if isinstance(last, dict) else last.model_dump()
            if item.get("type") == "function_call_output":
                self.script.saw(item["output"])
        call = await self.script.next_call()
        position = self.script.position
        if call is None:
            text = ResponseOutputText(type="output_text", text="Done.", annotations=[])
            message = ResponseOutputMessage(
                id=f"msg_{position}", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)
        tool, arguments = call
        output = ResponseFunctionToolCall(
            id=f"fc_{position}",
            call_id=f"call_{position}",
            type="function_call",
            name=tool,
            arguments=json.dumps(arguments),
        )
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model does not stream")


async def agent(script: Script, url: str, headers: dict[str, str]) -> None:
    set_tracing_disabled(True)
    # One server object (one client, one configuration) for the whole run, waits included.
    async with MCPServerStreamableHttp({"url": url, "headers": headers}, name="warrant") as server:
        clerk = Agent(name="clerk", instructions="Do the job.", mcp_servers=[server])
        await Runner.run(clerk, TASK, run_config=RunConfig(model=ScriptedModel(script), tracing_disabled=True))


if __name__ == "__main__":
    play(agent)
