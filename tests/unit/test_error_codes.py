"""One enum of codes (gateway.errors.Code): every member documented, retryable defined once, the
wire strings unchanged, and no code compared as a free string inside gateway/ (docs/errors.md)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from pathlib import Path

import pytest

import gateway
from gateway.errors import CALL_CODES, RETRYABLE_CODES, Code, ErrorBody, Refusal, WarrantError

ROOT = Path(__file__).resolve().parents[2]
REFUSALS = ROOT / "docs" / "refusals.md"
ERRORS = ROOT / "docs" / "errors.md"


def table_codes(path: Path) -> set[str]:
    """The codes in the first cell of every table row of a page (`` `a`, `b` `` counts both)."""
    cells = re.findall(r"^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \|", path.read_text(), flags=re.M)
    return {code for cell in cells for code in re.findall(r"`([a-z_]+)`", cell)}


def test_the_refusal_catalogue_is_exactly_the_call_codes() -> None:
    assert table_codes(REFUSALS) == set(CALL_CODES)


def test_every_other_code_is_in_the_error_tables_and_every_code_there_is_a_member() -> None:
    documented = table_codes(ERRORS)
    assert set(Code) - CALL_CODES <= documented, sorted(set(Code) - CALL_CODES - documented)
    assert documented <= set(Code), sorted(documented - set(Code))


def test_the_call_codes_and_the_retryable_codes_are_members() -> None:
    assert all(isinstance(code, Code) for code in CALL_CODES | RETRYABLE_CODES)


def test_the_documented_retryable_codes_are_the_definition() -> None:
    section = ERRORS.read_text().split("## Retryable", 1)[1].split("\n## ", 1)[0]
    listed = re.search(r"The\s+retryable\s+codes\s+are\s+exactly:\n\n(.+?)\n\n", section, flags=re.S)
    assert listed is not None
    assert set(re.findall(r"`([a-z_]+)`", listed.group(1))) == RETRYABLE_CODES


def _error_classes() -> list[type[WarrantError]]:
    """Every WarrantError subclass the gateway defines (all of its modules imported)."""
    for module in pkgutil.walk_packages(gateway.__path__, "gateway."):
        if ".drill.cases" not in module.name and not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: list[type[WarrantError]] = []
    todo: list[type[WarrantError]] = [WarrantError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_no_error_class_decides_retryable_itself() -> None:
    classes = _error_classes()
    assert {c.__name__ for c in classes} >= {"StoreError", "RateLimited", "OAuthRefused", "DroppedRefusal"}
    overriding = [c.__qualname__ for c in classes if c.__dict__.get("retryable") and c is not WarrantError]
    assert overriding == []
    assert [c.__qualname__ for c in classes if not isinstance(c.code, Code)] == []


@pytest.mark.parametrize("code", list(Code))
def test_retryable_follows_from_the_code_alone(code: Code) -> None:
    expected = code in RETRYABLE_CODES
    assert WarrantError("x", code=code).retryable is expected
    assert ErrorBody(code, "x").retryable is expected
    assert WarrantError("x", code=code).to_dict()["retryable"] is expected
    if code in CALL_CODES:
        assert Refusal(code, "x").retryable is expected


@pytest.mark.parametrize("code", list(Code))
def test_a_member_is_its_wire_string(code: Code) -> None:
    wire = code.value
    assert code == wire and str(code) == wire and f"[{code}]" == f"[{wire}]" and hash(code) == hash(wire)
    assert Code(wire) is code
    assert json.dumps({"code": code}) == json.dumps({"code": wire})


def test_an_error_answers_the_same_json_as_with_a_plain_string() -> None:
    refusal = Refusal(Code.BUDGET_EXHAUSTED, "not executed", echo="spend", dimension="spend")
    assert json.dumps(refusal.to_dict()) == (
        '{"code": "budget_exhausted", "message": "not executed (spend)", "retryable": false, "dimension": "spend"}'
    )
    assert refusal.body == ErrorBody(Code.BUDGET_EXHAUSTED, "not executed (spend)", {"dimension": "spend"})
    assert repr(refusal) == "Refusal(code='budget_exhausted', message='not executed')"


def test_a_code_given_as_a_string_is_the_member() -> None:
    assert WarrantError("x", code="lease_held").code is Code.LEASE_HELD  # type: ignore[arg-type]
    assert Refusal("run_paused", "x").code is Code.RUN_PAUSED  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        WarrantError("x", code="not_a_code")  # type: ignore[arg-type]


# A code written as a string where the gateway compares or makes one. Not scanned: the drill (a
# client of the public surfaces: it checks the wire strings themselves, beside its own markers
# `transport` and `error`) and the OpenAPI import (its findings' own codes, never answered).
FREE_CODE = re.compile(
    r"""\bcode\)?\s*(?:==|!=|\bis\b|\bis\s+not\b)\s*["']"""
    r"""|["']\s*(?:==|!=)\s*\w*\.?code\b"""
    r"""|\bcode\)?\s+(?:not\s+)?in\s+[({\[]\s*["']"""
    r"""|\bcode\s*=\s*"[a-z]"""  # (SQL's single quotes pass: one UPDATE sets `outcome_unknown`)
    r"""|["']code["']:\s*["'][a-z]"""
    r"""|\b(?:Refusal|DroppedRefusal|ApiFailed|failed|_uncertain)\(\s*(?:\w+,\s*)?["'][a-z_]+["']"""
)
NOT_SCANNED = ("drill/", "adapters/http/openapi_import.py")


def test_no_code_is_a_free_string_in_the_gateway() -> None:
    found = []
    for path in sorted((ROOT / "gateway").rglob("*.py")):
        rel = path.relative_to(ROOT / "gateway").as_posix()
        if rel.startswith(NOT_SCANNED):
            continue
        text = path.read_text()
        for match in FREE_CODE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"gateway/{rel}:{line}: {text.splitlines()[line - 1].strip()}")
    assert found == []


@pytest.mark.parametrize(
    "line",
    [
        'if exc.code != "invalid_transition":',
        'if refusal.code == "run_paused":',
        'if decided.code in ("approval_required", "approval_expired"):',
        'raise Conflict("x", code="lease_held")',
        '    code = "rate_limited"',
        'body = {"error": {"code": "invalid_host"}}',
        'return Refusal("run_waiting", "x")',
        'return Refusal(\n        "run_waiting", "x")',
        'return failed("upstream_failed", text, receipt)',
    ],
)
def test_the_free_string_guard_sees_each_way_of_writing_one(line: str) -> None:
    assert FREE_CODE.search(line)
