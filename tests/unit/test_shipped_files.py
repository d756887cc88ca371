"""Every YAML and contract the repository ships loads and validates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.app import build_catalog
from gateway.config import load_adapter, load_settings
from gateway.domain import compiled, parse_contract
from gateway.errors import ConfigError
from gateway.policy import load_policies

ROOT = Path(__file__).resolve().parents[2]


SECRETS = {"CRM_TOKEN": "crm-test-token", "EMAIL_TOKEN": "email-test-token"}


def test_shipped_configuration_loads_with_its_adapters_and_policies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(ROOT / "warrant.yaml", {"WARRANT_ADMIN_KEY": "k", "WARRANT_LEDGER_KEY": "l"})
    catalog, _ = build_catalog(settings)
    names = {spec.name for spec in catalog}
    # The downstream MCP server's tools appear once it has been started and listed them.
    assert {"notes__search", "notes__append", "notes__send", "crm__create_contact", "email__send"} <= names
    assert {n.split("__")[0] for n in names} == {"notes", "crm", "email"}
    unnamed = [spec.name for spec in catalog if spec.policy is None]
    assert unnamed == []  # every shipped tool has a policy: none is refused for want of one
    # MCP authorization is on, and its consent page offers the demo contracts as templates.
    assert settings.oauth.enabled
    assert (
        {p.name for p in settings.oauth.contract_templates}
        == {p.name for p in (ROOT / "examples" / "contracts").glob("*.json")}
        >= {"crm-demo.json"}
    )


def test_every_shipped_policy_and_adapter_validates() -> None:
    load_policies(sorted((ROOT / "policies").glob("*.yaml")))
    for path in sorted((ROOT / "adapters").glob("*.yaml")):
        load_adapter(path, SECRETS)


def test_an_http_adapter_without_its_secret_stops_start_up_naming_it() -> None:
    with pytest.raises(ConfigError) as caught:
        load_adapter(ROOT / "adapters" / "crm.yaml", {})
    assert "CRM_TOKEN" in str(caught.value)


def test_every_example_contract_validates() -> None:
    paths = sorted((ROOT / "examples" / "contracts").glob("*.json"))
    assert len(paths) >= 2
    for path in paths:
        parse_contract(json.loads(path.read_text()))


@pytest.mark.parametrize(
    "to",
    ["attacker@evil.example, ceo@acme.example", "attacker@evil.example\nceo@acme.example", "ceo@acme.example\n"],
)
def test_the_shipped_email_send_cannot_reach_outside_the_domain_without_an_approval(
    monkeypatch: pytest.MonkeyPatch, to: str
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(ROOT / "warrant.yaml", {"WARRANT_ADMIN_KEY": "k", "WARRANT_LEDGER_KEY": "l"})
    catalog, _ = build_catalog(settings)
    spec = catalog.get("email__send")
    assert spec is not None and spec.policy is not None and spec.policy.approval is not None
    arguments = {"to": to, "subject": "hello", "body": "hi"}
    assert spec.argument_problems(arguments)  # the schema's format: email refuses it
    assert spec.policy.approval.when is not None
    assert compiled(spec.policy.approval.when).evaluate(arguments)  # and the rule asks for an approval
    assert not compiled(spec.policy.approval.when).evaluate({**arguments, "to": "ceo@acme.example"})
