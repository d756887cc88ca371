"""A refused call's record is bounded whatever the caller sent (gateway/domain/refusals.py)."""

from __future__ import annotations

import hashlib

from gateway.domain import recorded_reason, recorded_tool
from gateway.domain.refusals import MAX_REASON, MAX_TOOL


def test_a_name_that_could_be_a_tools_is_recorded_as_it_is() -> None:
    assert recorded_tool("shop__find") == "shop__find"
    assert recorded_tool("x" * MAX_TOOL) == "x" * MAX_TOOL


def test_a_longer_name_is_recorded_as_its_size_and_hash_only() -> None:
    name = "y" * 1_000_000
    recorded = recorded_tool(name)
    assert recorded == f"<1000000 bytes sha256:{hashlib.sha256(name.encode()).hexdigest()}>"
    assert len(recorded) < 100


def test_a_long_message_is_cut_and_says_how_much_was_left_out() -> None:
    assert recorded_reason("short") == "short"
    cut = recorded_reason("z" * (MAX_REASON + 10_000))
    assert cut.startswith("z" * MAX_REASON) and "10000 more characters" in cut and len(cut) < MAX_REASON + 60
