"""The calls counter's tool label follows the catalog as it is at each call."""

from __future__ import annotations

from gateway.observe import Metrics
from gateway.observe.metrics import OTHER_TOOL


def _count(metrics: Metrics, tool: str, outcome: str) -> float:
    value = metrics.registry.get_sample_value("warrant_calls_total", {"tool": tool, "outcome": outcome})
    return value or 0.0


def test_a_tool_that_leaves_the_catalog_is_counted_as_other_from_then_on() -> None:
    catalog = {"shop__find"}
    metrics = Metrics(known_tool=lambda name: name in catalog)
    metrics.observe_call("shop__find", "succeeded")
    metrics.observe_call("shop__find", "succeeded")
    catalog.clear()  # a downstream stopped listing it
    metrics.observe_call("shop__find", "succeeded")
    assert _count(metrics, "shop__find", "succeeded") == 2
    assert _count(metrics, OTHER_TOOL, "succeeded") == 1
    catalog.add("shop__find")  # and lists it again
    metrics.observe_call("shop__find", "succeeded")
    assert _count(metrics, "shop__find", "succeeded") == 3
