"""Every YAML and contract the repository ships loads and validates."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.app import build_catalog
from gateway.config import load_adapter, load_settings
from gateway.domain.contract import parse_contract
from gateway.policy.loader import load_policies

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_configuration_loads_with_its_adapters_and_policies() -> None:
    settings = load_settings(ROOT / "warrant.yaml", {"WARRANT_ADMIN_KEY": "k", "WARRANT_LEDGER_KEY": "l"})
    catalog, _ = build_catalog(settings)
    assert {spec.name for spec in catalog} == {"notes__search", "notes__append", "notes__send"}
    assert all(spec.policy is not None for spec in catalog)


def test_every_shipped_policy_and_adapter_validates() -> None:
    load_policies(sorted((ROOT / "policies").glob("*.yaml")))
    for path in sorted((ROOT / "adapters").glob("*.yaml")):
        load_adapter(path)


def test_every_example_contract_validates() -> None:
    paths = sorted((ROOT / "examples" / "contracts").glob("*.json"))
    assert paths
    for path in paths:
        parse_contract(json.loads(path.read_text()))
