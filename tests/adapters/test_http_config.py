"""Loading `kind: http` adapter documents: validation before any secret is resolved, `${...}`
references, definitions, and the rules a lookup depends on."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.adapters.http import HttpAdapter
from gateway.config import load_adapter
from gateway.errors import ConfigError
from tests.adapters.http_world import DOCUMENT

SECRET = "a-secret-value-9"


def _write(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "adapters" / "crm.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return path


def _document(**changes: Any) -> dict[str, Any]:
    document = copy.deepcopy(DOCUMENT)
    document["headers"] = {"Authorization": "Bearer ${CRM_TOKEN}"}
    document.update(changes)
    return document


def _tool_change(**changes: Any) -> dict[str, Any]:
    document = _document()
    document["tools"]["create_contact"].update(changes)
    return document


def test_the_design_example_loads_with_headers_from_the_environment_and_files(tmp_path: Path) -> None:
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "version").write_text("2024-01\n")
    document = _document(base_url="http://${CRM_HOST}")
    document["tools"]["create_contact"]["headers"] = {"X-Version": "${file:version}"}
    adapter = load_adapter(_write(tmp_path, document), {"CRM_TOKEN": SECRET, "CRM_HOST": "127.0.0.1:8801"})
    assert isinstance(adapter, HttpAdapter)
    config = adapter._config
    assert config.base_url == "http://127.0.0.1:8801"
    assert config.headers == {"Authorization": f"Bearer {SECRET}"}
    assert config.tools["create_contact"].headers == {"X-Version": "2024-01"}
    assert config.key_retention == 24 * 3600
    assert adapter.pin is None


def test_definitions_carry_the_timeout_annotations_and_alias(tmp_path: Path) -> None:
    document = _document(timeout=20)
    document["tools"]["log_call"].pop("timeout")
    document["tools"]["log_call"]["expose_as"] = "crm_log"
    adapter = load_adapter(_write(tmp_path, document), {"CRM_TOKEN": SECRET})
    definitions = {d.name: d for d in adapter.definitions()}
    assert definitions["create_contact"].timeout == 10
    assert definitions["log_call"].timeout == 20 and definitions["log_call"].expose_as == "crm_log"
    assert definitions["get_contact"].annotations == {"readOnlyHint": True}
    assert definitions["create_contact"].annotations is None


def test_a_missing_secret_stops_start_up_naming_it_and_no_value(tmp_path: Path) -> None:
    document = _document(headers={"Authorization": "Bearer ${CRM_TOKEN}", "X-Other": "${OTHER}"})
    with pytest.raises(ConfigError) as stopped:
        load_adapter(_write(tmp_path, document), {"OTHER": SECRET})
    assert "CRM_TOKEN" in str(stopped.value) and SECRET not in str(stopped.value)


def test_a_missing_secret_file_stops_start_up(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as stopped:
        load_adapter(_write(tmp_path, _document(headers={"Authorization": "${file:nope}"})), {})
    assert "nope" in str(stopped.value)


def test_an_invalid_document_is_reported_before_any_reference_is_resolved(tmp_path: Path) -> None:
    document = _document(timeout=-1)
    with pytest.raises(ConfigError) as stopped:
        load_adapter(_write(tmp_path, document), {"CRM_TOKEN": SECRET})
    assert SECRET not in str(stopped.value)


@pytest.mark.parametrize(
    "url", ["http://user:${CRM_TOKEN}@crm.test", "http://crm.test/?key=${CRM_TOKEN}", "${CRM_TOKEN}"]
)
def test_a_base_url_is_checked_once_resolved_without_repeating_it(tmp_path: Path, url: str) -> None:
    with pytest.raises(ConfigError) as stopped:
        load_adapter(_write(tmp_path, _document(base_url=url)), {"CRM_TOKEN": SECRET})
    assert SECRET not in str(stopped.value)


def test_a_secret_that_spans_lines_is_refused_without_its_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as stopped:
        load_adapter(_write(tmp_path, _document()), {"CRM_TOKEN": f"{SECRET}\nX-Injected: 1"})
    assert SECRET not in str(stopped.value) and "Authorization" in str(stopped.value)


@pytest.mark.parametrize(
    "document",
    [
        _document(base_url="ftp://crm.test"),
        _document(key_retention="soon"),
        _document(key_retention=None),  # create_contact has a lookup
        _document(key_retention="5s"),  # shorter than the tool's timeout
        _document(tools={}),
        _document(headers={"Bad Header": "x"}),
        _document(pin="first_use"),  # a field of kind mcp
        _tool_change(method="TRACE"),
        _tool_change(path="contacts"),
        _tool_change(path="/contacts?x=1"),
        _tool_change(path="/contacts/{bad-name}"),
        _tool_change(path="/contacts/{missing}"),  # not in input_schema.properties
        _tool_change(receipt_id=None),  # a lookup needs it
        _tool_change(idempotency_header=None),  # the lookup is by key
        _tool_change(query=["email"], body=["email"]),
        _tool_change(retries=3),
        _tool_change(description=""),
        _tool_change(cost={"field": "a..b"}),
        _tool_change(receipt_status={"field": "status", "succeeded": []}),
        _tool_change(receipt_status={"field": "a..b", "succeeded": ["sent"]}),
        _tool_change(receipt_status={"field": "status", "succeeded": ["sent"], "failed": ["failed"]}),
        _tool_change(input_schema={"type": "object", "properties": {"idempotency_key": {"type": "string"}}}),
    ],
)
def test_an_invalid_http_adapter_stops_start_up(tmp_path: Path, document: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        load_adapter(_write(tmp_path, document), {"CRM_TOKEN": SECRET})


def test_a_get_has_no_body(tmp_path: Path) -> None:
    document = _document()
    document["tools"]["get_contact"]["body"] = ["email"]
    with pytest.raises(ConfigError):
        load_adapter(_write(tmp_path, document), {"CRM_TOKEN": SECRET})
