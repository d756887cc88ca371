"""`warrant adapters import-openapi`: reading SPEC (file or URL), writing the draft, refusing to clobber."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
import yaml

from gateway.cli import main
from gateway.cli.adapters import FETCH_TIMEOUT
from tests.unit.test_openapi_import import CRM, assert_valid_http_adapter, suggested_policies

SPEC_URL = "http://api.test/openapi.json"
SUMMARY = re.compile(r"^(\w+): (\d+) tools \((\d+) reads, (\d+) writes\)")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["adapters", "import-openapi", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _code(err: str) -> str | None:
    """The refusal's code: `warrant: [code] ...` on stderr."""
    found = re.match(r"warrant: \[(\w+)\]", err)
    return found.group(1) if found else None


def _spec_file(tmp_path: Path, spec: Any = CRM, name: str = "crm.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(spec) if name.endswith(".json") else yaml.safe_dump(spec), encoding="utf-8")
    return path


def _load_adapter(path: Path) -> Any:
    """gateway.config.load_adapter, once `kind: http` is served (gateway/adapters/http/adapter.py)."""
    pytest.importorskip("gateway.adapters.http.adapter", reason="the http adapter is not in this checkout yet")
    from gateway.config import load_adapter

    return load_adapter(path, {"CRM_TOKEN": "t"})


def test_the_draft_is_written_to_out_and_the_summary_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "adapters" / "crm.yaml"
    out.parent.mkdir()
    code, stdout, stderr = _run(capsys, str(_spec_file(tmp_path)), "--name", "crm", "--out", str(out))
    assert code == 0 and stdout == ""
    document = yaml.safe_load(out.read_text())
    assert_valid_http_adapter(document)
    summary = SUMMARY.match(stderr)
    assert summary is not None
    assert summary.groups() == ("crm", "7", "3", "4")
    assert set(suggested_policies(out.read_text())["tools"]) == {f"crm__{t}" for t in document["tools"]}


def test_without_out_the_draft_goes_to_stdout_from_a_yaml_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, stderr = _run(capsys, str(_spec_file(tmp_path, name="crm.yaml")), "--name", "crm")
    assert code == 0
    assert_valid_http_adapter(yaml.safe_load(stdout))
    assert SUMMARY.match(stderr)


def test_an_existing_out_file_is_kept_unless_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "crm.yaml"
    out.write_text("mine\n")
    spec = str(_spec_file(tmp_path))
    code, _, stderr = _run(capsys, spec, "--name", "crm", "--out", str(out))
    assert (code, _code(stderr)) == (1, "exists")
    assert out.read_text() == "mine\n"
    code, _, _ = _run(capsys, spec, "--name", "crm", "--out", str(out), "--force")
    assert code == 0
    assert_valid_http_adapter(yaml.safe_load(out.read_text()))


def test_base_url_option_overrides_the_documents_servers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = {**CRM, "servers": [{"url": "/"}]}
    code, stdout, stderr = _run(capsys, str(_spec_file(tmp_path, spec)), "--name", "crm")
    assert (code, _code(stderr)) == (1, "no_base_url")
    code, stdout, _ = _run(capsys, str(_spec_file(tmp_path, spec)), "--name", "crm", "--base-url", "http://10.1.2.3:81")
    assert code == 0 and yaml.safe_load(stdout)["base_url"] == "http://10.1.2.3:81"


def test_a_spec_url_is_fetched_within_the_timeout_and_a_relative_server_resolved_against_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = {**CRM, "servers": [{"url": "/v1"}]}
    with respx.mock(assert_all_called=True) as router:
        route = router.get(SPEC_URL).mock(return_value=httpx.Response(200, json=spec))
        code, stdout, _ = _run(capsys, SPEC_URL, "--name", "crm")
    assert code == 0
    assert yaml.safe_load(stdout)["base_url"] == "http://api.test/v1"
    timeouts = route.calls.last.request.extensions["timeout"]
    assert set(timeouts.values()) == {FETCH_TIMEOUT}


def test_a_yaml_spec_url_is_read_too(capsys: pytest.CaptureFixture[str]) -> None:
    with respx.mock() as router:
        router.get(SPEC_URL).mock(return_value=httpx.Response(200, text=yaml.safe_dump(CRM)))
        code, stdout, _ = _run(capsys, SPEC_URL, "--name", "crm")
    assert code == 0 and yaml.safe_load(stdout)["base_url"] == "http://127.0.0.1:8801"


@pytest.mark.parametrize(
    "response", [httpx.Response(404, json={}), httpx.ConnectError("refused"), httpx.ReadTimeout("slow")]
)
def test_a_spec_url_that_cannot_be_fetched_is_refused(
    response: httpx.Response | Exception, capsys: pytest.CaptureFixture[str]
) -> None:
    with respx.mock() as router:
        route = router.get(SPEC_URL)
        if isinstance(response, Exception):
            route.mock(side_effect=response)
        else:
            route.mock(return_value=response)
        code, stdout, stderr = _run(capsys, SPEC_URL, "--name", "crm")
    assert (code, stdout, _code(stderr)) == (1, "", "unreadable")


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("missing.json", None, "unreadable"),
        ("missing.yaml", None, "unreadable"),
        ("broken.json", "{not json", "unreadable"),
        ("broken.yaml", "a: [unclosed", "unreadable"),
        ("swagger.json", json.dumps({"swagger": "2.0", "paths": {}}), "not_openapi"),
    ],
)
def test_a_spec_that_cannot_be_read_or_is_not_openapi_is_refused(
    name: str, content: str | None, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    out = tmp_path / "out.yaml"
    code, stdout, stderr = _run(capsys, str(path), "--name", "crm", "--out", str(out))
    assert (code, stdout, _code(stderr)) == (1, "", expected)
    assert not out.exists()


def test_a_ref_cycle_is_refused_and_nothing_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = copy.deepcopy(CRM)
    spec["components"]["schemas"]["NewContact"]["properties"]["friend"] = {"$ref": "#/components/schemas/NewContact"}
    out = tmp_path / "out.yaml"
    code, _, stderr = _run(capsys, str(_spec_file(tmp_path, spec)), "--name", "crm", "--out", str(out))
    assert (code, _code(stderr)) == (1, "ref_cycle")
    assert not out.exists()


def test_an_adapter_name_the_catalog_refuses_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, stderr = _run(capsys, str(_spec_file(tmp_path)), "--name", "CRM-1")
    assert (code, _code(stderr)) == (1, "invalid_name")


def test_the_gateway_loads_the_draft(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "crm.yaml"
    assert _run(capsys, str(_spec_file(tmp_path)), "--name", "crm", "--out", str(out))[0] == 0
    adapter = _load_adapter(out)
    assert adapter.name == "crm"
    assert [d.name for d in adapter.definitions()] == list(yaml.safe_load(out.read_text())["tools"])


# -- the demo services: each one's own OpenAPI document, imported and loaded -------------------------

CRM_READS = {"search_contacts", "get_contact", "list_deals"}
CRM_WRITES = {"delete_contact", "create_contact", "update_contact", "create_deal", "add_note"}
SERVICES = {"crm": (CRM_READS, CRM_WRITES), "mail": ({"list_outbox", "get_message"}, {"send"})}


def _service_document(service: str, tmp_path: Path) -> dict[str, Any]:
    module = pytest.importorskip(f"examples.services.{service}", reason="the demo services are not in this checkout")
    from starlette.testclient import TestClient

    with TestClient(module.create_app(tmp_path / f"{service}.db", "token")) as client:
        response = client.get("/openapi.json")
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_a_demo_service_round_trips_to_its_operation_ids_with_keyed_writes(
    service: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, (reads, writes) = service, SERVICES[service]
    document = _service_document(service, tmp_path)
    out = tmp_path / f"{name}.yaml"
    served = "http://127.0.0.1:8801/openapi.json"
    with respx.mock() as router:
        router.get(served).mock(return_value=httpx.Response(200, json=document))
        code, _, stderr = _run(capsys, served, "--name", name, "--out", str(out))
    assert code == 0
    adapter = yaml.safe_load(out.read_text())
    assert_valid_http_adapter(adapter)
    operation_ids = {
        op["operationId"] for item in document["paths"].values() for op in item.values() if not op.get("x-internal")
    }
    assert set(adapter["tools"]) == operation_ids == reads | writes
    assert {n for n, t in adapter["tools"].items() if t["method"] in ("GET", "HEAD")} == reads
    assert adapter["base_url"] == "http://127.0.0.1:8801"
    for tool in writes:
        definition = adapter["tools"][tool]
        assert definition["idempotency_header"] == "Idempotency-Key"
        assert definition["receipt_id"] == "id"
        assert definition["lookup"] == {"method": "GET", "path": "/by-key/{idempotency_key}"}
    summary = SUMMARY.match(stderr)
    assert summary is not None
    assert summary.groups() == (name, str(len(reads | writes)), str(len(reads)), str(len(writes)))
    if importlib.util.find_spec("gateway.adapters.http.adapter") is not None:
        loaded = _load_adapter(out)
        assert {d.name for d in loaded.definitions()} == reads | writes
