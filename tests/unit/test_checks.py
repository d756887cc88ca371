"""A milestone's checks: parsing, the refs a worker declares, and how results combine."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain import (
    ArtifactCheck,
    ArtifactRef,
    CheckResult,
    HttpCheck,
    ReviewCheck,
    SourceRef,
    ValidatorCheck,
    milestone_status,
    parse_check,
    parse_contract,
    parse_host_entry,
)
from gateway.errors import InvalidRequest

SHA = "a" * 64


def test_each_kind_of_check_parses() -> None:
    assert parse_check({"artifact": "inv", "sha256": SHA}) == ArtifactCheck("inv", SHA)
    assert parse_check({"artifact": "inv", "schema": {"type": "array"}}) == ArtifactCheck(
        "inv", None, {"type": "array"}
    )
    assert parse_check({"http": {"url": "https://x.example/a", "status": 204, "contains": "ok"}}) == HttpCheck(
        "https://x.example/a", "GET", 204, "ok"
    )
    assert parse_check({"validator": "nonempty", "artifact": "inv"}) == ValidatorCheck("nonempty", "inv")
    assert parse_check({"validator": "nonempty"}) == ValidatorCheck("nonempty")
    assert parse_check({"review": {"reviewer": "ana"}}) == ReviewCheck("ana")


@pytest.mark.parametrize(
    ("check", "words"),
    [
        ({}, "one kind key"),
        ({"file": "x"}, "one kind key"),
        ({"artifact": "a", "http": {"url": "http://h/"}}, "artifact and http"),
        ({"validator": "v", "artifact": "a", "review": {"reviewer": "ana"}}, "validator and review"),
        ("artifact", "is an object"),
        ({"artifact": ""}, "artifact"),
        ({"artifact": "a", "sha256": "ABC"}, "sha256"),
        ({"artifact": "a", "sha256": "A" * 64}, "sha256"),
        ({"artifact": "a", "schema": {"type": "no-such-type"}}, "JSON Schema"),
        ({"artifact": "a", "schema": {"minItems": -1}}, "JSON Schema"),
        ({"artifact": "a", "schema": "array"}, "JSON Schema object"),
        ({"artifact": "a", "surprise": 1}, "unknown keys surprise"),
        ({"http": {"url": "ftp://h/x"}}, "http:// or https://"),
        ({"http": {"url": "not a url"}}, "http:// or https://"),
        ({"http": {"url": "http://h:99999/"}}, "not a URL"),
        ({"http": {"url": "http://u:p@h/"}}, "credentials"),
        ({"http": {"url": "http://h/" + "x" * 2048}}, "2048"),
        ({"http": {"url": "http://h/", "method": "POST"}}, "only GET"),
        ({"http": {"url": "http://h/", "status": 700}}, "status"),
        ({"http": {"url": "http://h/", "status": True}}, "status"),
        ({"http": {}}, "needs url"),
        ({"validator": 3}, "validator"),
        ({"review": {}}, "needs reviewer"),
        ({"review": {"reviewer": "ana"}, "extra": 1}, "unknown keys extra"),
    ],
)
def test_a_bad_check_is_refused_with_what_is_wrong(check: Any, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_check(check)


def _results(*statuses: str) -> list[CheckResult]:
    return [CheckResult("artifact", s, None if s == "verified" else f"r{i}") for i, s in enumerate(statuses)]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ((), "verified"),
        (("verified",), "verified"),
        (("verified", "verified"), "verified"),
        (("verified", "failed"), "failed"),
        (("unverified", "failed", "pending_review"), "failed"),
        (("verified", "unverified"), "unverified"),
        (("unverified", "pending_review"), "unverified"),
        (("verified", "pending_review"), "pending_review"),
        (("pending_review", "pending_review"), "pending_review"),
    ],
)
def test_a_milestone_status_follows_its_checks(statuses: tuple[str, ...], expected: str) -> None:
    status, reasons = milestone_status(_results(*statuses))
    assert status == expected
    assert reasons == [f"r{i}" for i, s in enumerate(statuses) if s != "verified"]


def test_artifact_and_source_refs_parse_from_the_wire() -> None:
    ref = ArtifactRef.from_wire({"id": "inv", "uri": "file:///d/inv.json", "sha256": SHA, "version": "4"})
    assert ref == ArtifactRef("inv", "file:///d/inv.json", SHA, "4")
    assert ArtifactRef.from_wire(ref.to_wire()) == ref
    assert SourceRef.from_wire({"uri": "http://h/v.csv", "etag": '"v7"'}) == SourceRef("http://h/v.csv", '"v7"')
    assert SourceRef.from_wire({"uri": "http://h/v.csv", "sha256": SHA}).sha256 == SHA


@pytest.mark.parametrize(
    "wire",
    [
        {"id": "inv", "uri": "file:///x", "sha256": "A" * 64},
        {"id": "inv", "uri": "file:///x", "sha256": SHA[:-1]},
        {"id": "inv", "uri": "", "sha256": SHA},
        {"id": "inv", "uri": "/" + "x" * 2048, "sha256": SHA},
        {"id": "", "uri": "/x", "sha256": SHA},
        {"uri": "/x", "sha256": SHA},
        {"id": "inv", "uri": "/x", "sha256": SHA, "version": 4},
        {"id": "inv", "uri": "/x", "sha256": SHA, "extra": 1},
        ["inv"],
    ],
)
def test_a_bad_artifact_ref_is_refused(wire: Any) -> None:
    with pytest.raises(ValueError):
        ArtifactRef.from_wire(wire)


def test_a_source_needs_an_etag_or_a_sha256() -> None:
    with pytest.raises(ValueError, match="etag or a sha256"):
        SourceRef.from_wire({"uri": "http://h/v.csv"})
    with pytest.raises(ValueError, match="sha256"):
        SourceRef.from_wire({"uri": "http://h/v.csv", "sha256": "nope"})


def test_host_entries_are_a_host_with_an_optional_port() -> None:
    assert parse_host_entry("Example.COM") == ("example.com", None)
    assert parse_host_entry("127.0.0.1:8803") == ("127.0.0.1", 8803)
    assert parse_host_entry("[::1]:8080") == ("::1", 8080)
    for bad in ("", "http://h", "h/x", "u@h", "h:port", "h:70000"):
        with pytest.raises(ValueError):
            parse_host_entry(bad)


def test_a_contract_with_bad_checks_lists_every_one_with_its_index(contract: dict[str, Any]) -> None:
    contract["milestones"] = [
        {"id": "ok", "checks": [{"review": {"reviewer": "ana"}}]},
        {
            "id": "bad",
            "checks": [
                {"artifact": "inv"},
                {"artifact": "inv", "http": {"url": "http://h/"}},
                {"http": {"url": "file:///etc/passwd"}},
                {"artifact": "inv", "schema": {"type": 12}},
            ],
        },
    ]
    contract["expires_in"] = "soon"
    with pytest.raises(InvalidRequest) as caught:
        parse_contract(contract)
    assert caught.value.code == "invalid_contract"
    problems = {p["field"]: p["problem"] for p in caught.value.details["problems"]}
    assert set(problems) == {"expires_in", "milestones.1.checks"}
    listed = problems["milestones.1.checks"]
    assert "checks[0]" not in listed
    assert all(f"checks[{i}]" in listed for i in (1, 2, 3))


def test_a_contract_keeps_its_checks_as_given(contract: dict[str, Any]) -> None:
    checks = [{"artifact": "inv", "sha256": SHA}, {"http": {"url": "http://h/x"}}]
    contract["milestones"] = [{"id": "m", "checks": checks}]
    assert parse_contract(contract).milestones[0].checks == checks
