"""The example contracts' windows agree with the shipped policy's approval windows: no example run
strands its agent, or cries wolf, while it waits on a person.

The lease itself never strands a waiting holder (docs/leases.md: a waiting run's lease does not
lapse, a lapsed one is re-established by the holder's next call; tests/e2e/test_day_one.py shows it
through the demo); what the numbers here must get right is the rest of the wait:

- the run outlives a decision taken at the last moment and the use of it: decide_within +
  valid_for within expires_in;
- the wait does not use up the run: waiting counts no active time, or active_seconds covers it;
- the README's day-one wait (ten minutes before the approval) raises no `lease_missed` in the
  demo: the watchdog alerts a holder silent past lease_ttl, waiting or not, and an agent that
  waits on a person is silent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.domain import ApprovalRule, Contract, parse_contract, parse_duration
from gateway.policy import load_policies

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = sorted((ROOT / "examples" / "contracts").glob("*.json"))
DAY_ONE_WAIT = 600  # seconds: the README's "Day one with Claude Code" approves after ten minutes


def approval_rules(contract: Contract) -> list[tuple[str, ApprovalRule]]:
    """(tool, rule) for every approval rule, the policy's and the contract's, of a tool the contract allows."""
    _currency, policy = load_policies(sorted((ROOT / "policies").glob("*.yaml")))
    terms = contract.terms()
    rules = []
    for tool, tool_policy in sorted(policy.items()):
        if not terms.allows(tool):
            continue
        if tool_policy.approval is not None:
            rules.append((tool, tool_policy.approval))
        rules += [(tool, rule) for rule in terms.approval_rules(tool)]
    return rules


def contract_at(path: Path) -> Contract:
    return parse_contract(json.loads(path.read_text()))


@pytest.mark.parametrize("path", CONTRACTS, ids=lambda p: p.stem)
def test_an_example_run_outlives_its_approvals_and_their_use(path: Path) -> None:
    contract = contract_at(path)
    for tool, rule in approval_rules(contract):
        window = parse_duration(rule.decide_within) + parse_duration(rule.valid_for)
        assert window <= parse_duration(contract.expires_in), (tool, rule)


@pytest.mark.parametrize("path", CONTRACTS, ids=lambda p: p.stem)
def test_waiting_on_an_approval_does_not_use_up_an_example_run(path: Path) -> None:
    contract = contract_at(path)
    if not contract.budgets.count_waiting:
        return
    for tool, rule in approval_rules(contract):
        assert parse_duration(rule.decide_within) <= contract.budgets.active_seconds, (tool, rule)


def test_the_day_one_wait_raises_no_lease_missed_in_the_demo() -> None:
    contract = contract_at(ROOT / "examples" / "contracts" / "crm-demo.json")
    tools = [tool for tool, _rule in approval_rules(contract)]
    assert "email__send" in tools  # the README's email needs an approval under this contract
    assert parse_duration(contract.lease_ttl) > DAY_ONE_WAIT
