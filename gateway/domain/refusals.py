"""What a refused call's record keeps: bounded, whatever the caller sent. Pure.

A refused call is recorded for the audit (its code, time, worker and the hash of its payload),
but a caller can make a refusal out of anything: a tool name of a megabyte, arguments of half a
megabyte that a refusal's message would quote. The record keeps a name that could be a tool's as
it is, and anything longer as its size and SHA-256; a refusal's message is cut at MAX_REASON.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from gateway.domain.limits import Rate

MAX_TOOL = 48  # an exposed tool name's limit (DESIGN.md "Tool names"); a gateway tool's too
MAX_REASON = 512  # characters of a refusal's message kept in its record


def recorded_tool(tool: str) -> str:
    """`tool` as its refusal records it: itself when it could name a tool, else its size and hash."""
    if len(tool) <= MAX_TOOL:
        return tool
    data = tool.encode("utf-8", "surrogatepass")
    return f"<{len(data)} bytes sha256:{hashlib.sha256(data).hexdigest()}>"


def recorded_reason(message: str) -> str:
    """A refusal's message as its record keeps it: at most MAX_REASON characters."""
    if len(message) <= MAX_REASON:
        return message
    cut = len(message) - MAX_REASON
    return f"{message[:MAX_REASON]}... ({cut} more characters not recorded)"


@dataclass(frozen=True)
class RefusalLimits:
    """`limits.refusals` in warrant.yaml: how many refusals one lease token may have recorded
    (`rate`, per run and epoch: one lease) and how many one run may keep in all (`max_per_run`).
    None turns either off. On by default, at 600 a minute: a refusal's record is small (bounded
    above), so the rate bounds how fast a token can grow the store, while an honest burst (a
    hundred parallel calls meeting an exhausted budget) is still answered with its own code."""

    rate: Rate | None = field(default_factory=lambda: Rate(600, 60.0))
    max_per_run: int | None = 10_000


def refusal_scope(run_id: str, epoch: int | None) -> str:
    """The rate scope of one lease token's refusals (a token is one run's lease at one epoch)."""
    return f"refusals:{run_id}:{'-' if epoch is None else epoch}"
