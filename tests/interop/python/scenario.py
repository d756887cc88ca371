"""The scripted agent every framework's runner plays: the same tool calls, in the same order.

Imported by the runners (tests/interop/python/run_*.py), which run in the frameworks' own venvs,
so this module uses the standard library only and nothing of the gateway. The runner's "model" asks
`Script.next_call()` what to call next, hands each result to `Script.saw()` as the framework gave it
to the model, and the test (tests/interop/test_python_agents.py) reads the transcript.

Protocol with the test, one JSON object a line on stdout:
- `{"event": "waiting"}` when the agent starts waiting on a person; it goes on after the test
  writes a line to its stdin (the approval having been decided, past the lease's TTL);
- `{"event": "done", "tools": [...], "views": [{"step", "tool", "arguments", "view"}, ...], "error"}`
  last, `error` saying why the framework stopped the run early (None when it ran to the end).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

RECIPIENT = "ana@acme.example"
TASK = f"Find lamps, charge the visa card, then order for {RECIPIENT}."
WAIT = "wait"

# (step, tool, arguments); WAIT is a pause with no call, while a person decides.
STEPS: list[tuple[str, str, dict[str, Any]]] = [
    ("read", "shop__find", {"q": "lamps"}),
    ("write", "shop__charge", {"card": "visa"}),
    ("replay", "shop__charge", {"card": "visa"}),
    ("constraint", "shop__charge", {"card": "amex"}),
    ("approval", "shop__order", {"to": RECIPIENT}),
    # Asking again before anyone decided: what an impatient model does (pydantic-ai's retry limit).
    ("approval_again", "shop__order", {"to": RECIPIENT}),
    (WAIT, "", {}),
    ("status", "warrant_status", {}),
    ("approved", "shop__order", {"to": RECIPIENT}),
]


AgentLoop = Callable[["Script", str, dict[str, str]], Awaitable[None]]


def play(agent: AgentLoop) -> None:
    """Runs `agent(script, url, headers)` on the gateway's MCP URL (argv[1]) with the headers that carry
    the lease token (WARRANT_TOKEN), then prints the transcript, with the error if the framework gave up."""
    url, headers = sys.argv[1], {"Authorization": f"Bearer {os.environ['WARRANT_TOKEN']}"}
    script = Script()
    try:
        asyncio.run(agent(script, url, headers))
    except Exception as error:  # the framework stopped the run (a retry limit, say): what the model saw so far
        script.done(error)
    else:
        script.done()


@dataclass
class Script:
    tools: list[str] | None = None
    views: list[dict[str, Any]] = field(default_factory=list)
    position: int = 0

    def offered(self, names: list[str]) -> None:
        """The tool names the framework offers its model (recorded the first time)."""
        if self.tools is None:
            self.tools = sorted(names)

    async def next_call(self) -> tuple[str, dict[str, Any]] | None:
        """The next (tool, arguments) the model asks for, or None when it is done; waits where told."""
        while self.position < len(STEPS):
            step, tool, arguments = STEPS[self.position]
            self.position += 1
            if step != WAIT:
                self.views.append({"step": step, "tool": tool, "arguments": arguments, "view": None})
                return tool, dict(arguments)
            emit({"event": "waiting"})
            # A thread, not the loop: the framework's own tasks (its MCP session) keep running meanwhile.
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line:
                raise SystemExit("the test closed stdin while the agent waited")
        return None

    def saw(self, view: Any) -> None:
        """What the framework handed its model for the last call (a string, or JSON-able parts)."""
        current = self.views[-1]
        if current["view"] is not None:
            raise AssertionError(f"two results for one call of {current['tool']}: {current['view']!r}, {view!r}")
        current["view"] = view if isinstance(view, str) else json.dumps(view, default=str)

    def done(self, error: BaseException | None = None) -> None:
        """The transcript; `error` when the framework gave up on the run (e.g. a retry limit)."""
        failed = None if error is None else f"{type(error).__name__}: {error}"
        emit({"event": "done", "tools": self.tools, "views": self.views, "error": failed})


def emit(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
