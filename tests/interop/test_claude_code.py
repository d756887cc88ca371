"""The Claude Code CLI (pinned, tests/interop/claude_code.py) as an agent through Warrant.

Claude Code runs headless (`claude -p ... --output-format stream-json`) against a loopback
stand-in for its model API (tests/interop/model_standin.py) that plays a scripted model, with
Warrant as its one MCP server. The assertions are on what Claude Code hands its model: the tool
list and the `tool_result` blocks the stand-in receives. Every connection Claude Code makes is
recorded; one beyond the test's own loopback servers fails the test. Time is the gateway's
ManualClock: the model "waits" by moving it, so a 20 s lease is outlived in no time at all.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import CONTRACT, Api
from tests.harness import free_port
from tests.interop.claude_code import Claude, Ran, destinations
from tests.interop.conftest import _serve
from tests.interop.model_standin import Block, ModelStandIn, Script, ToolResult, Turn, text, use

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RULE = "args.card != 'stolen'"
SERVER = "warrant"  # the name Claude Code knows Warrant by: its tools are mcp__warrant__<tool>
PROMPT = "Charge the card, then order for ada@example.com."


def tool(name: str) -> str:
    return f"mcp__{SERVER}__{name}"


async def new_run(api: Api, *, lease: bool = True, **changes: Any) -> tuple[str, str]:
    """A run of tests/api's contract with `changes`, and (`lease`) a lease on it -> (run_id, token)."""
    async with api.client("op") as c:
        created = await c.post("/api/runs", json={**CONTRACT, **changes})
        assert created.status_code == 201, created.text
        run_id = created.json()["run_id"]
        if not lease:
            return run_id, ""
        grant = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "claude-code"})
        assert grant.status_code in (200, 201), grant.text
    return run_id, grant.json()["token"]


async def approve_pending(api: Api, tool_name: str) -> None:
    """What the person does: the one pending approval, approved by the approver key, bound to its hash."""
    async with api.client("appr") as c:
        pending = (await c.get("/api/approvals", params={"status": "pending"})).json()["items"]
        assert [a["tool"] for a in pending] == [tool_name], pending
        decided = await c.post(
            f"/api/approvals/{pending[0]['approval_id']}/approve",
            json={"note": "fine", "expected_sha256": pending[0]["payload_sha256"]},
        )
        assert decided.status_code == 200, decided.text


@dataclass
class Session:
    """What one headless Claude Code session showed: its output, and every request its model got."""

    ran: Ran
    model: ModelStandIn

    @property
    def init(self) -> dict[str, Any]:
        """Claude Code's first event: the session as it starts, its MCP servers' state included."""
        first: dict[str, Any] = json.loads(self.ran.stdout.splitlines()[0])
        assert (first["type"], first["subtype"]) == ("system", "init"), first
        return first

    @property
    def outcome(self) -> dict[str, Any]:
        last: dict[str, Any] = json.loads(self.ran.stdout.splitlines()[-1])
        return last


def mcp_config(path: Path, url: str, token: str) -> Path:
    server = {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}
    path.write_text(json.dumps({"mcpServers": {SERVER: server}}))
    return path


@dataclass
class Agent:
    """Claude Code and its model: the stand-in, served on loopback for the whole test."""

    claude: Claude
    model: ModelStandIn


@pytest.fixture
async def agent(api: Api, tmp_path: Path) -> AsyncIterator[Agent]:
    """Served for every Claude Code command, `claude mcp add` too: without a loopback
    ANTHROPIC_BASE_URL even that one looks up api.anthropic.com (the connection record caught it)."""
    model = ModelStandIn(_no_model)
    port = free_port()
    stop = await _serve(model.app, port, lifespan="off")
    gateway_port = int(api.url.rsplit(":", 1)[1])
    try:
        yield Agent(Claude(tmp_path / "claude", f"http://127.0.0.1:{port}", {port, gateway_port}), model)
    finally:
        await stop()


async def _no_model(turn: Turn) -> list[Block]:
    raise AssertionError("Claude Code asked its model before the test gave it a script")


async def headless(agent: Agent, script: Script, *, mcp: tuple[str, str] | None = None) -> Session:
    """`claude -p PROMPT` with the stand-in playing `script`; with `mcp` (URL, bearer token) Warrant is
    the one MCP server (`--strict-mcp-config`), else the servers Claude Code was configured with."""
    agent.model.play(script)
    extra: list[str] = []
    if mcp:
        config = mcp_config(agent.claude.root / "mcp.json", *mcp)
        extra = ["--strict-mcp-config", "--mcp-config", str(config)]
    ran = await agent.claude.run(
        "-p",
        PROMPT,
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        f"mcp__{SERVER}",
        "--tools",
        "",  # no built-in tools: the model sees Warrant's only
        "--max-turns",
        "20",
        *extra,
    )
    model = agent.model
    for failure in model.failures:
        raise failure
    assert model.unexpected == [], model.unexpected
    assert ran.returncode == 0, ran
    assert model.turns, f"the stand-in was never asked: {ran}"
    session = Session(ran, model)
    # Connected before the model's first turn, so its tools were in that turn's list.
    servers = {server["name"]: server["status"] for server in session.init["mcp_servers"]}
    assert servers == {SERVER: "connected"}, session.init["mcp_servers"]
    assert session.outcome["subtype"] == "success", session.outcome
    return session


async def test_claude_code_waits_past_its_lease_for_a_person_and_carries_on(
    api: Api, agent: Agent, tmp_path: Path
) -> None:
    _, token = await new_run(api, lease_ttl="20s")
    seen: dict[str, Any] = {}

    async def script(turn: Turn) -> list[Block]:
        match turn.number:
            case 1:  # what Claude Code listed from Warrant reached the model, schemas included
                seen["tools"] = {t["name"]: t for t in turn.body["tools"]}
                return [use(tool("shop__find"), {"q": "ada"})]
            case 2:
                seen["read"] = turn.result
                return [use(tool("shop__charge"), {"card": "visa"})]
            case 3:
                seen["write"] = turn.result
                return [use(tool("shop__order"), {"to": "ada@example.com"})]
            case 4:  # a person must approve: the model waits past the lease's TTL, then looks
                seen["approval_required"] = turn.result
                api.clock.advance(30)
                return [use(tool("warrant_status"), {})]
            case 5:  # still pending; a person approves through the API; later the model retries
                seen["status"] = turn.result
                api.clock.advance(15)
                await approve_pending(api, "shop__order")
                api.clock.advance(15)
                return [use(tool("shop__order"), {"to": "ada@example.com"})]
            case 6:
                seen["approved"] = turn.result
                return [text("Charged, and the order went out once approved.")]
        raise AssertionError(f"turn {turn.number} is not in the script")

    session = await headless(agent, script, mcp=(f"{api.url}/mcp", token))

    assert len(session.model.turns) == 6
    listed = seen["tools"]
    assert {tool("shop__find"), tool("shop__order"), tool("shop__charge"), tool("warrant_status")} <= set(listed)
    assert listed[tool("shop__find")]["input_schema"]["required"] == ["q"]
    assert not seen["read"].is_error and not seen["write"].is_error, (seen["read"].text, seen["write"].text)
    waiting: ToolResult = seen["approval_required"]
    # Whether an error or not (a wait need not spend a framework's retries), the model reads why
    # and which approval it waits on.
    assert "approval_required" in waiting.text and "apr_" in waiting.text, waiting.text
    # Idle 30 s past a 20 s lease, the same client and token carry on: the status, then the write.
    assert not seen["status"].is_error, seen["status"].text
    assert "lease_expired" not in seen["status"].text, seen["status"].text
    assert not seen["approved"].is_error, seen["approved"].text
    assert api.effects == [{"card": "visa"}, {"to": "ada@example.com"}]


async def test_claude_code_superseded_after_an_idle_expiry_sends_nothing(api: Api, agent: Agent) -> None:
    run_id, token = await new_run(api, lease_ttl="20s")
    seen: dict[str, ToolResult] = {}

    async def script(turn: Turn) -> list[Block]:
        match turn.number:
            case 1:
                return [use(tool("shop__charge"), {"card": "visa"})]
            case 2:  # idle past the TTL; meanwhile another worker acquires the run (no takeover needed)
                seen["write"] = turn.result
                api.clock.advance(30)
                async with api.client("op") as c:
                    replaced = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "replacement"})
                    assert replaced.status_code in (200, 201), replaced.text
                return [use(tool("shop__charge"), {"card": "amex"})]
            case 3:
                seen["late"] = turn.result
                return [text("Another worker holds this run now; stopping.")]
        raise AssertionError(f"turn {turn.number} is not in the script")

    await headless(agent, script, mcp=(f"{api.url}/mcp", token))
    assert not seen["write"].is_error, seen["write"].text
    late = seen["late"]
    assert late.is_error and "lease_superseded" in late.text, late.text  # fencing: the old token is dead
    assert api.effects == [{"card": "visa"}]  # the late write was not sent


async def test_claude_code_shows_its_model_a_replay_and_the_broken_rule(api: Api, agent: Agent) -> None:
    run_id, token = await new_run(api, authority={"allow": ["shop__*"], "constraints": {"shop__charge": RULE}})
    seen: dict[str, ToolResult] = {}

    async def script(turn: Turn) -> list[Block]:
        match turn.number:
            case 1:
                return [use(tool("shop__charge"), {"card": "visa"})]
            case 2:  # the same write again: answered from the record, not sent
                seen["write"] = turn.result
                return [use(tool("shop__charge"), {"card": "visa"})]
            case 3:  # outside the run's constraint
                seen["replay"] = turn.result
                return [use(tool("shop__charge"), {"card": "stolen"})]
            case 4:
                seen["constraint"] = turn.result
                return [text("The first charge stands; the stolen card is not allowed.")]
        raise AssertionError(f"turn {turn.number} is not in the script")

    await headless(agent, script, mcp=(f"{api.url}/mcp", token))

    assert api.effects == [{"card": "visa"}]  # once
    async with api.client("op") as c:
        actions = (await c.get(f"/api/runs/{run_id}/actions")).json()["items"]
    [original] = [a for a in actions if a["tool"] == "shop__charge" and a["status"] == "succeeded"]
    assert not seen["write"].is_error, seen["write"].text
    replay = seen["replay"]
    assert not replay.is_error, replay.text
    assert "not executed again" in replay.text, replay.text  # else the model believes it charged twice
    assert original["action_id"] in replay.text, replay.text
    constraint = seen["constraint"]
    assert constraint.is_error and "[constraint_violated]" in constraint.text, constraint.text
    assert RULE in constraint.text, constraint.text  # which rule, so the model knows what to change


async def warrant(*args: str, env: dict[str, str]) -> str:
    """`warrant args...` (this checkout's CLI) -> its stdout; fails on a non-zero exit."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[2]), **env},
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, f"warrant {' '.join(args)}: exit {process.returncode}\n{stdout!r}\n{stderr!r}"
    return stdout.decode()


async def test_warrant_connect_configures_claude_code_once_for_a_worker(api: Api, agent: Agent) -> None:
    run_id, _ = await new_run(api, lease=False)
    printed = await warrant(
        "connect",
        "--client",
        "claude-code",
        "--run",
        run_id,
        "--name",
        SERVER,
        env={"WARRANT_URL": api.url, "WARRANT_API_KEY": "key-wrk"},
    )
    [command] = [line.strip() for line in printed.splitlines() if line.strip().startswith("claude mcp add")]
    assert run_id in command and "wl_" not in command, command  # the worker key names the run: no token

    claude = agent.claude
    added = await claude.shell(command, env={"WARRANT_API_KEY": "key-wrk"})  # pasted into a shell
    assert added.returncode == 0, added
    listed = await claude.run("mcp", "list")
    assert listed.returncode == 0, listed
    [entry] = [line for line in listed.stdout.splitlines() if line.startswith(f"{SERVER}:")]
    assert f"{api.url}/mcp/runs/{run_id}" in entry and "Connected" in entry, listed.stdout

    # The configuration as added, with no --mcp-config: the agent reads and sees its run's state.
    async def script(turn: Turn) -> list[Block]:
        match turn.number:
            case 1:
                return [use(tool("shop__find"), {"q": "ada"})]
            case 2:
                assert not turn.result.is_error, turn.result.text
                return [use(tool("warrant_status"), {})]
            case 3:
                assert not turn.result.is_error, turn.result.text
                assert run_id in turn.result.text, turn.result.text
                return [text("Nothing to do yet.")]
        raise AssertionError(f"turn {turn.number} is not in the script")

    session = await headless(agent, script)
    assert len(session.model.turns) == 3


def test_the_connection_record_names_every_destination() -> None:
    trace = "\n".join(
        [
            '7 connect(3, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1",'
            " &sin6_addr), sin6_scope_id=0}, 28) = 0",
            '7 connect(4, {sa_family=AF_INET, sin_port=htons(8700), sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
            '8 sendto(5, ""..., 40, MSG_NOSIGNAL, {sa_family=AF_INET, sin_port=htons(53), '
            'sin_addr=inet_addr("10.255.255.53")}, 16) = 40',
            '8 connect(6, {sa_family=AF_UNIX, sun_path="/tmp/x.sock"}, 110) = 0',
            '8 sendto(4, ""..., 12, 0, NULL, 0) = 12',
        ]
    )
    assert destinations(trace) == [("::1", 443), ("127.0.0.1", 8700), ("10.255.255.53", 53)]


async def test_a_run_that_reaches_a_port_the_test_does_not_serve_fails(tmp_path: Path) -> None:
    """The negative control: the stand-in answers, but its port is not among the allowed ones."""

    async def script(turn: Turn) -> list[Block]:
        return [text("hello")]

    model = ModelStandIn(script)
    port = free_port()
    stop = await _serve(model.app, port, lifespan="off")
    try:
        claude = Claude(tmp_path / "claude", f"http://127.0.0.1:{port}", allowed_ports=set())
        with pytest.raises(AssertionError, match=rf"reached beyond the test's servers: \[\('127.0.0.1', {port}\)\]"):
            await claude.run("-p", "hello", "--tools", "")
    finally:
        await stop()
    assert model.side or model.turns  # it did reach the stand-in: the record is of a real connection


async def test_claude_code_added_by_url_alone_finds_it_needs_a_sign_in(api: Api, agent: Agent) -> None:
    """The README's first step: `claude mcp add --transport http warrant URL`, nothing else. Claude
    Code meets the 401, reads the protected resource metadata it names and reports that the
    server needs authentication (the sign-in itself is its interactive `/mcp` menu, with a browser:
    not driven here; the Python and TypeScript SDK clients' whole flow is, in tests/oauth and
    tests/interop/test_typescript_oauth.py)."""
    claude = agent.claude
    added = await claude.run("mcp", "add", "--transport", "http", SERVER, f"{api.url}/mcp")
    assert added.returncode == 0, added
    listed = await claude.run("mcp", "list")
    assert listed.returncode == 0, listed
    [entry] = [line for line in listed.stdout.splitlines() if line.startswith(f"{SERVER}:")]
    assert f"{api.url}/mcp" in entry and "Needs authentication" in entry, listed.stdout
