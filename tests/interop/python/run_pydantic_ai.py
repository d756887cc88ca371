"""pydantic-ai, default settings, its `MCPToolset` on Warrant's /mcp, a `FunctionModel` playing the script.

`python run_pydantic_ai.py URL` with WARRANT_TOKEN, in the venv of tests/interop/python/agents.txt.
The model function sees exactly what pydantic-ai would send a real model: each tool's result as
`ToolReturnPart.model_response_str()`, each refusal as `RetryPromptPart.model_response()` (the
toolset raises `ModelRetry` for an `isError` result).
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from scenario import TASK, Script, play


async def agent(script: Script, url: str, headers: dict[str, str]) -> None:
    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        script.offered([tool.name for tool in info.function_tools])
        last = messages[-1]
        if isinstance(last, ModelRequest):
            for part in last.parts:
                if isinstance(part, ToolReturnPart):
                    script.saw(part.model_response_str())
                elif isinstance(part, RetryPromptPart):
                    script.saw(part.model_response())
        call = await script.next_call()
        if call is None:
            return ModelResponse(parts=[TextPart("Charged, refused where I had to be, and ordered once approved.")])
        tool, arguments = call
        return ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id=f"call_{script.position}")])

    # One toolset (one client, one configuration) for the whole run, waits included.
    clerk = Agent(FunctionModel(model), toolsets=[MCPToolset(url, headers=headers)])
    async with clerk:
        await clerk.run(TASK)


if __name__ == "__main__":
    play(agent)
