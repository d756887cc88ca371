"""The downstream MCP adapter against the real example server, as a subprocess over stdio and HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import mcp.types as types
import pytest

from gateway.adapters import CallRequest, OutcomeKind
from gateway.adapters.mcp import McpAdapter, McpAdapterConfig
from gateway.adapters.mcp.adapter import IDEMPOTENCY_META, to_outcome
from tests.adapters.conftest import WAIT, HttpServer, Notebook, stdio_config, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def request(tool: str, arguments: dict[str, Any], *, write: bool, timeout: float = 5.0, key: str = "") -> CallRequest:
    return CallRequest(
        tool=tool,
        arguments=arguments,
        run_id="run_test",
        action_id="act_test",
        idempotency_key=(key or f"wk_{tool}_{sorted(arguments.items())}") if write else None,
        timeout=timeout,
        write=write,
    )


def note(title: str) -> dict[str, str]:
    return {"title": title, "body": f"body of {title}"}


def has_reserved_meta(value: Any) -> bool:
    if isinstance(value, dict):
        meta = value.get("_meta")
        if isinstance(meta, dict) and any(k.startswith("io.modelcontextprotocol/") for k in meta):
            return True
        return any(has_reserved_meta(v) for v in value.values())
    if isinstance(value, list):
        return any(has_reserved_meta(v) for v in value)
    return False


async def test_a_write_and_a_read_pass_over_stdio(shared_adapter: McpAdapter, shared_notebook: Notebook) -> None:
    assert {d.name for d in shared_adapter.definitions()} >= {"read_note", "write_note"}
    written = await shared_adapter.call(request("write_note", note("a"), write=True, key="wk_one"))
    assert written.kind is OutcomeKind.SUCCEEDED
    [effect] = [e for e in shared_notebook.effect_lines() if e["key"] == "wk_one"]
    assert written.receipt is not None and written.receipt["id"] == effect["id"]

    read = await shared_adapter.call(request("read_note", {"title": "a"}, write=False))
    assert read.kind is OutcomeKind.SUCCEEDED
    assert read.structured == {"id": effect["id"], "body": "body of a"}
    assert not has_reserved_meta(read.content) and not has_reserved_meta(read.structured)


async def test_the_idempotency_key_travels_in_meta_and_the_server_honours_it(
    shared_adapter: McpAdapter, shared_notebook: Notebook
) -> None:
    for _ in range(2):
        outcome = await shared_adapter.call(request("write_note", note("once"), write=True, key="wk_same"))
        assert outcome.kind is OutcomeKind.SUCCEEDED
    assert len([e for e in shared_notebook.effect_lines() if e["key"] == "wk_same"]) == 1


async def test_a_write_and_a_read_pass_over_http(http_server: HttpServer, notebook: Notebook) -> None:
    adapter = McpAdapter(McpAdapterConfig(name="files", url=http_server.url, timeout=5.0, start_wait=WAIT))
    await adapter.start()
    try:
        written = await adapter.call(request("write_note", note("h"), write=True))
        assert written.kind is OutcomeKind.SUCCEEDED
        read = await adapter.call(request("read_note", {"title": "h"}, write=False))
        assert read.kind is OutcomeKind.SUCCEEDED
        assert not has_reserved_meta(read.content)
        assert len(notebook.effect_lines()) == 1
    finally:
        await adapter.close()


async def test_a_killed_child_is_replaced_and_the_next_calls_pass(
    stdio_adapter: McpAdapter, notebook: Notebook
) -> None:
    first = notebook.kill()
    read = await stdio_adapter.call(request("read_note", {"title": "none"}, write=False))
    assert read.kind is OutcomeKind.FAILED and read.code == "upstream_failed"  # an answer: no such note
    written = await stdio_adapter.call(request("write_note", note("after"), write=True))
    assert written.kind is OutcomeKind.SUCCEEDED
    assert stdio_adapter.connections == 2
    assert notebook.pid() != first
    assert [e["pid"] for e in notebook.effect_lines()] == [notebook.pid()]


async def test_a_write_to_a_hanging_server_is_unknown(shared_adapter: McpAdapter, shared_notebook: Notebook) -> None:
    outcome = await shared_adapter.call(request("slow_write", note("stuck"), write=True, timeout=1.0))
    assert outcome.kind is OutcomeKind.UNKNOWN and outcome.code == "outcome_unknown"
    # It did happen: that is why it is unknown, not failed.
    assert len([e for e in shared_notebook.effect_lines() if e["title"] == "stuck"]) == 1
    # The connection survives a hung request.
    assert (await shared_adapter.call(request("read_note", {"title": "stuck"}, write=False))).kind is (
        OutcomeKind.SUCCEEDED
    )


async def test_a_read_of_a_hanging_server_is_retried_then_fails_unavailable(shared_adapter: McpAdapter) -> None:
    with anyio.fail_after(WAIT):
        outcome = await shared_adapter.call(request("hang_read", {}, write=False, timeout=1.0))
    assert outcome.kind is OutcomeKind.FAILED and outcome.code == "upstream_unavailable"


async def test_an_is_error_result_is_a_failure_that_passes_its_text_on(shared_adapter: McpAdapter) -> None:
    outcome = await shared_adapter.call(request("fail", {"reason": "quota"}, write=True))
    assert outcome.kind is OutcomeKind.FAILED and outcome.code == "upstream_failed"
    assert outcome.message and outcome.message == outcome.content[0]["text"]


async def test_cancelling_a_read_cancels_the_downstream_request(
    shared_adapter: McpAdapter, shared_notebook: Notebook
) -> None:
    hooks = shared_notebook.folder / "hooks.log"

    def seen(line: str) -> int:
        return hooks.read_text().splitlines().count(line) if hooks.exists() else 0

    started, cancelled = seen("hang_read started"), seen("hang_read cancelled")
    task = asyncio.create_task(shared_adapter.call(request("hang_read", {}, write=False, timeout=60.0)))
    await wait_until(lambda: seen("hang_read started") > started)
    task.cancel()
    with anyio.fail_after(WAIT), pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: seen("hang_read cancelled") > cancelled)
    assert (await shared_adapter.call(request("read_note", {"title": "x"}, write=False))).code == "upstream_failed"


async def test_a_server_that_is_down_answers_not_sent(notebook: Notebook) -> None:
    from tests.adapters.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/mcp"
    adapter = McpAdapter(McpAdapterConfig(name="files", url=url, start_wait=0.2, connect_wait=0.2))
    await adapter.start()
    try:
        outcome = await adapter.call(request("write_note", note("x"), write=True))
        assert outcome.kind is OutcomeKind.NOT_SENT and outcome.code == "upstream_unavailable"
        assert adapter.definitions() == []
    finally:
        await adapter.close()
    assert notebook.effect_lines() == []


async def test_a_write_whose_request_cannot_connect_is_not_sent(http_server: HttpServer, notebook: Notebook) -> None:
    adapter = McpAdapter(McpAdapterConfig(name="files", url=http_server.url, timeout=5.0, connect_wait=WAIT))
    await adapter.start()
    try:
        await http_server.stop()
        outcome = await adapter.call(request("write_note", note("lost"), write=True))
        assert outcome.kind is OutcomeKind.NOT_SENT and outcome.code == "upstream_unavailable"
        # The server comes back on the same port: the adapter reconnects and reads pass again.
        await http_server.start()
        read = await adapter.call(request("read_note", {"title": "lost"}, write=False, timeout=WAIT))
        assert read.code == "upstream_failed"  # an answer: the lost write never happened
    finally:
        await adapter.close()
    assert notebook.effect_lines() == []


async def test_a_changed_definition_is_listed_on_refresh_and_heard_by_listeners(
    shared_adapter: McpAdapter, shared_notebook: Notebook
) -> None:
    heard: list[str] = []

    async def listener(adapter: Any) -> None:
        heard.append(next(d.sha256() for d in adapter.definitions() if d.name == "write_note"))

    before = next(d.sha256() for d in shared_adapter.definitions() if d.name == "write_note")
    shared_adapter.watch(listener)
    (shared_notebook.folder / "version").write_text("v2")
    with anyio.fail_after(WAIT):
        await shared_adapter.refresh()
    assert len(heard) == 1 and heard[0] != before
    with anyio.fail_after(WAIT):
        await shared_adapter.refresh()  # unchanged: nobody is told again
    assert len(heard) == 1


def test_stamps_are_stripped_from_a_result_and_its_content() -> None:
    stamp = {"io.modelcontextprotocol/serverInfo": {"name": "x", "version": "1"}}
    result = types.CallToolResult.model_validate(
        {
            "_meta": stamp,
            "content": [{"type": "text", "text": "hi", "_meta": {**stamp, "mine": 1}}],
            "structuredContent": {"id": "o-1"},
        }
    )
    outcome = to_outcome(result)
    assert outcome.kind is OutcomeKind.SUCCEEDED
    assert outcome.content == [{"type": "text", "text": "hi", "_meta": {"mine": 1}}]
    assert outcome.receipt is not None and outcome.receipt["id"] == "o-1"


def test_the_idempotency_meta_key_is_the_one_the_example_server_reads() -> None:
    from examples.mcp_files_server import IDEMPOTENCY_META as SERVER_KEY

    assert SERVER_KEY == IDEMPOTENCY_META


def test_a_stdio_config_takes_no_headers_and_a_url_takes_no_env(notebook: Notebook) -> None:
    with pytest.raises(ValueError):
        stdio_config(notebook, headers={"Authorization": "Bearer x"})
    with pytest.raises(ValueError):
        McpAdapterConfig(name="files", url="http://127.0.0.1:1/mcp", env={"A": "b"})
    with pytest.raises(ValueError):
        McpAdapterConfig(name="files")
