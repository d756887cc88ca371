"""langchain-mcp-adapters' tools under LangChain's `create_agent`, default settings, a scripted chat model.

`python run_langchain.py URL` with WARRANT_TOKEN, in the venv of tests/interop/python/langchain.txt
(mcp 1.x: langchain-mcp-adapters 0.3.2 requires `mcp<2`). `MultiServerMCPClient` builds the tools;
the agent graph's tool node calls them and hands the model a `ToolMessage` for each, which is what
the scripted model reads (its content blocks, as a provider integration would send them).
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_mcp_adapters.client import MultiServerMCPClient
from scenario import TASK, Script, play


class ScriptedChatModel(BaseChatModel):
    script: Any

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.script.offered([tool.name for tool in tools])
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("the agent runs asynchronously")

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            self.script.saw(last.content)
        call = await self.script.next_call()
        if call is None:
            message = AIMessage(content="Done.")
        else:
            tool, arguments = call
            tool_call = {"name": tool, "args": arguments, "id": f"call_{self.script.position}", "type": "tool_call"}
            message = AIMessage(content="", tool_calls=[tool_call])
        return ChatResult(generations=[ChatGeneration(message=message)])


async def agent(script: Script, url: str, headers: dict[str, str]) -> None:
    # One client (one configuration) for the whole run, waits included.
    client = MultiServerMCPClient({"warrant": {"transport": "streamable_http", "url": url, "headers": headers}})
    clerk = create_agent(ScriptedChatModel(script=script), await client.get_tools())
    await clerk.ainvoke({"messages": [("user", TASK)]})


if __name__ == "__main__":
    play(agent)
