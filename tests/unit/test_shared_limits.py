"""Limits shared by every run: the pure rule, the policy's shape, and how the catalog turns a
policy's limit into the caps one tool's calls count against (docs/limits.md, "Shared limits")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.catalog import Catalog
from gateway.domain.limits import CallLimits, Rate, SharedCap
from gateway.domain.shared_limits import SLOT_GRACE_S, concurrency_refusal, rate_refusal, slots_since
from gateway.errors import RETRYABLE_CODES, Code, ConfigError
from gateway.policy import ToolPolicy, parse_policy
from gateway.policy.loader import load_policy_set
from tests.unit.test_catalog import StaticAdapter, _tool

CAP = SharedCap("destination:crm", ("crm__a", "crm__b"), 3, Rate(10, 60.0), hold_s=35.0)


def test_a_cap_refuses_only_when_every_slot_is_held() -> None:
    assert concurrency_refusal(CAP, 2) is None
    refusal = concurrency_refusal(CAP, 3)
    assert refusal is not None and refusal.code is Code.SHARED_LIMIT
    assert refusal.details == {"limit": "max_concurrent", "scope": "destination:crm", "max": 3, "retry_after_s": 1.0}
    assert concurrency_refusal(SharedCap("tool:x", ("x",), None, Rate(1, 1.0), 1.0), 100) is None


def test_a_shared_rate_refusal_names_its_scope_and_wait() -> None:
    refusal = rate_refusal(CAP.rate_scope, 12.3456)
    assert refusal.details == {"limit": "rate", "scope": "destination:crm", "retry_after_s": 12.346}


def test_shared_limit_is_retryable() -> None:
    assert Code.SHARED_LIMIT in RETRYABLE_CODES


def test_a_slot_is_counted_for_its_hold_only() -> None:
    assert slots_since(CAP, 100.0) == 65.0


def test_a_calls_limits_gain_the_shared_caps_and_their_rates_after_their_own() -> None:
    own = CallLimits(4, (("tenant:acme", Rate(5, 1.0)),))
    shared = own.sharing((CAP,))
    assert shared.shared == (CAP,) and shared.run_concurrency == 4
    assert shared.rates == (("tenant:acme", Rate(5, 1.0)), ("shared:destination:crm", Rate(10, 60.0)))
    assert own.sharing(()) is own


@pytest.mark.parametrize(
    "limit",
    [
        {"max_concurrent": 3},  # no scope
        {"tool": "crm__a", "destination": "crm", "max_concurrent": 3},  # two scopes
        {"tool": "crm__a"},  # nothing limited
        {"tool": "crm__a", "max_concurrent": 0},
        {"tool": "crm__a", "rate": "often"},
        {"tool": "crm__a", "max_concurrent": 3, "queue": True},
    ],
)
def test_a_malformed_shared_limit_is_refused_at_load(limit: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        parse_policy({"shared_limits": [limit]})


def test_one_scope_limited_in_two_files_stops_loading(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text("shared_limits: [{destination: crm, max_concurrent: 2}]\n")
    with pytest.raises(ConfigError):
        load_policy_set([tmp_path / "a.yaml", tmp_path / "b.yaml"])


def catalog(*limits: dict[str, Any]) -> Catalog:
    crm = StaticAdapter("crm", _tool("a", timeout=10.0), _tool("b", timeout=20.0), _tool("c"))
    mail = StaticAdapter("mail", _tool("send"))
    policies = {name: ToolPolicy(effect="write") for name in ("crm__a", "crm__b", "crm__c", "mail__send")}
    doc = parse_policy({"shared_limits": list(limits)})
    return Catalog([crm, mail], policies, shared_limits=doc.shared_limits)


def test_a_destinations_limit_counts_its_adapters_tools_and_holds_for_the_longest_timeout() -> None:
    found = catalog({"destination": "crm", "max_concurrent": 3}, {"tool": "crm__a", "rate": "5/s"})
    (dest, tool) = found.shared_for("crm__a")
    assert (dest.scope, dest.tools, dest.max_concurrent) == ("destination:crm", ("crm__a", "crm__b", "crm__c"), 3)
    assert dest.hold_s == 30.0 + SLOT_GRACE_S  # crm__c has the default timeout, the longest
    assert (tool.scope, tool.tools, tool.rate, tool.hold_s) == ("tool:crm__a", ("crm__a",), Rate(5, 1.0), 15.0)
    assert found.shared_for("crm__b") == (dest,)
    assert found.shared_for("mail__send") == ()


@pytest.mark.parametrize("limit", [{"tool": "crm__zzz", "max_concurrent": 1}, {"destination": "erp", "rate": "1/s"}])
def test_a_shared_limit_naming_nothing_the_gateway_has_stops_start_up(limit: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        catalog(limit)
