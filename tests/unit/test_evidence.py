"""The guarded fetcher and the milestone checks, on real temporary directories (HTTP through respx)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from gateway.config import load_settings
from gateway.domain.checks import ArtifactRef, CheckResult, SourceRef, milestone_status
from gateway.errors import ConfigError
from gateway.tools.evidence import (
    ArtifactSettings,
    Fetcher,
    ReadResult,
    build_fetcher,
    recheck_artifact,
    recheck_source,
    run_checks,
)

pytestmark = pytest.mark.anyio

INVENTORY = json.dumps([{"vendor": "a"}, {"vendor": "b"}]).encode()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Tree:
    root: Path
    outside: Path
    secret: Path  # a file outside the root; never to be opened


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    root, outside = tmp_path / "data" / "root", tmp_path / "outside"
    root.mkdir(parents=True)
    outside.mkdir()
    (root / "inventory.json").write_bytes(INVENTORY)
    secret = outside / "secret.json"
    secret.write_bytes(INVENTORY)
    return Tree(root, outside, secret)


@pytest.fixture
async def fetcher(tree: Tree) -> AsyncIterator[Fetcher]:
    f = Fetcher([tree.root], ["allowed.example", "127.0.0.1:8803"], max_bytes=1024, timeout=2.0)
    try:
        yield f
    finally:
        await f.aclose()


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path passed to os.open from now on (the fetcher opens files only through it)."""
    paths: list[str] = []
    real_open = os.open

    def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        paths.append(os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    return paths


def ref(uri: str | Path, body: bytes = INVENTORY, id: str = "inventory") -> ArtifactRef:
    return ArtifactRef(id, str(uri), sha(body))


# -- reading files ------------------------------------------------------------------------------


async def test_a_file_under_a_root_is_read_by_path_and_by_file_uri(fetcher: Fetcher, tree: Tree) -> None:
    path = tree.root / "inventory.json"
    for uri in (str(path), path.as_uri(), f"file://localhost{path}"):
        read = await fetcher.read(uri)
        assert (read.ok, read.body, read.sha256, read.reason) == (True, INVENTORY, sha(INVENTORY), None)


async def test_a_percent_encoded_file_uri_names_the_decoded_path(fetcher: Fetcher, tree: Tree) -> None:
    (tree.root / "a b.json").write_bytes(b"[]")
    assert (await fetcher.read((tree.root / "a b.json").as_uri())).body == b"[]"


async def test_a_symlink_out_of_a_root_is_unverified_and_its_target_never_opened(
    fetcher: Fetcher, tree: Tree, opened: list[str]
) -> None:
    link = tree.root / "escape.json"
    link.symlink_to(tree.secret)
    dir_link = tree.root / "outside"
    dir_link.symlink_to(tree.outside, target_is_directory=True)

    for uri in (str(link), link.as_uri(), str(dir_link / "secret.json")):
        read = await fetcher.read(uri)
        assert not read.ok and read.body is None and "outside the artifact roots" in (read.reason or "")

    results = await run_checks([{"artifact": "inventory"}], {"inventory": ref(link)}, None, fetcher, {})
    assert results[0].status == "unverified"
    assert opened == []  # neither the link, nor its target, nor anything else


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="the open descriptor is checked through /proc")
async def test_a_directory_swapped_for_a_symlink_after_the_check_is_refused(
    fetcher: Fetcher, tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree.root / "sub").symlink_to(tree.outside, target_is_directory=True)
    # As if the path had been resolved before `sub` became a link: the check passes, the open does not.
    monkeypatch.setattr(os.path, "realpath", os.path.normpath)
    read = await fetcher.read(str(tree.root / "sub" / "secret.json"))
    assert not read.ok and read.body is None and "moved outside" in (read.reason or "")


async def test_a_symlink_inside_a_root_is_followed(fetcher: Fetcher, tree: Tree) -> None:
    (tree.root / "latest.json").symlink_to(tree.root / "inventory.json")
    assert (await fetcher.read(str(tree.root / "latest.json"))).body == INVENTORY


async def test_dot_dot_cannot_climb_out_of_a_root(fetcher: Fetcher, tree: Tree, opened: list[str]) -> None:
    climbing = f"{tree.root}/../../outside/secret.json"
    assert tree.secret.samefile(climbing)
    for uri in (climbing, "file://" + climbing):
        read = await fetcher.read(uri)
        assert not read.ok and "outside the artifact roots" in (read.reason or "")
    assert opened == []


async def test_a_sibling_directory_sharing_the_roots_prefix_is_outside(
    fetcher: Fetcher, tree: Tree, opened: list[str]
) -> None:
    sibling = tree.root.parent / (tree.root.name + "2")
    sibling.mkdir()
    (sibling / "inventory.json").write_bytes(INVENTORY)
    read = await fetcher.read(str(sibling / "inventory.json"))
    assert not read.ok and "outside the artifact roots" in (read.reason or "")
    assert opened == []


async def test_a_root_given_through_a_symlink_still_admits_its_files(tree: Tree, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(tree.root, target_is_directory=True)
    f = Fetcher([alias], [])
    try:
        assert (await f.read(str(alias / "inventory.json"))).ok
        assert (await f.read(str(tree.root / "inventory.json"))).ok
    finally:
        await f.aclose()


@pytest.mark.parametrize(
    "uri",
    [
        "inventory.json",
        "data/root/inventory.json",
        "ftp://allowed.example/x",
        "data:text/plain,hello",
        "s3://bucket/key",
        "file://otherhost/etc/passwd",
        "file:relative.json",
        "",
    ],
)
async def test_any_other_uri_is_refused_without_opening_anything(fetcher: Fetcher, uri: str, opened: list[str]) -> None:
    read = await fetcher.read(uri)
    assert not read.ok and read.reason
    assert opened == []


async def test_nothing_is_read_without_roots(tree: Tree, opened: list[str]) -> None:
    f = Fetcher([], [])
    try:
        read = await f.read(str(tree.root / "inventory.json"))
    finally:
        await f.aclose()
    assert not read.ok and "artifact_roots" in (read.reason or "")
    assert opened == []


async def test_a_file_past_max_bytes_is_refused_and_one_at_the_cap_is_read(tree: Tree) -> None:
    f = Fetcher([tree.root], [], max_bytes=10)
    try:
        (tree.root / "ten").write_bytes(b"x" * 10)
        (tree.root / "eleven").write_bytes(b"x" * 11)
        assert (await f.read(str(tree.root / "ten"))).body == b"x" * 10
        big = await f.read(str(tree.root / "eleven"))
        assert not big.ok and big.body is None and "max_bytes" in (big.reason or "")
    finally:
        await f.aclose()


async def test_a_missing_file_a_directory_and_a_fifo_are_not_read(fetcher: Fetcher, tree: Tree) -> None:
    os.mkfifo(tree.root / "pipe")
    (tree.root / "dir").mkdir()
    for name in ("missing.json", "dir", "pipe"):
        read = await asyncio.wait_for(fetcher.read(str(tree.root / name)), 5)
        assert not read.ok and read.reason


# -- artifact checks ------------------------------------------------------------------------------


async def test_an_artifact_whose_bytes_match_is_verified_with_what_was_read(fetcher: Fetcher, tree: Tree) -> None:
    r = ref(tree.root / "inventory.json")
    [result] = await run_checks([{"artifact": "inventory", "sha256": r.sha256}], {"inventory": r}, None, fetcher, {})
    assert result.status == "verified"
    assert result.detail["sha256"] == sha(INVENTORY) and result.detail["uri"] == r.uri


async def test_a_checksum_that_differs_fails_naming_both_hashes(fetcher: Fetcher, tree: Tree) -> None:
    claimed = ref(tree.root / "inventory.json", body=b"something else")
    [result] = await run_checks([{"artifact": "inventory"}], {"inventory": claimed}, None, fetcher, {})
    assert result.status == "failed"
    assert sha(INVENTORY) in (result.reason or "") and claimed.sha256 in (result.reason or "")

    contract_sha = sha(b"what the contract expects")
    honest = ref(tree.root / "inventory.json")
    checks = [{"artifact": "inventory", "sha256": contract_sha}]
    [result] = await run_checks(checks, {"inventory": honest}, None, fetcher, {})
    assert result.status == "failed"
    assert sha(INVENTORY) in (result.reason or "") and contract_sha in (result.reason or "")


async def test_an_artifact_that_was_not_given_fails(fetcher: Fetcher) -> None:
    [result] = await run_checks([{"artifact": "inventory"}], {}, None, fetcher, {})
    assert result.status == "failed" and "inventory" in (result.reason or "")


async def test_a_schema_check_passes_valid_json_and_fails_naming_the_errors(fetcher: Fetcher, tree: Tree) -> None:
    schema = {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["vendor", "price"]}}
    good = json.dumps([{"vendor": "a", "price": 1}]).encode()
    (tree.root / "good.json").write_bytes(good)
    (tree.root / "not.json").write_bytes(b"{not json")
    artifacts = {
        "good": ref(tree.root / "good.json", good, "good"),
        "bad": ref(tree.root / "inventory.json", INVENTORY, "bad"),
        "garbage": ref(tree.root / "not.json", b"{not json", "garbage"),
    }
    checks = [{"artifact": name, "schema": schema} for name in ("good", "bad", "garbage")]
    good_result, bad, garbage = await run_checks(checks, artifacts, None, fetcher, {})
    assert good_result.status == "verified"
    assert bad.status == "failed" and "0: 'price'" in (bad.reason or "") and "1: 'price'" in (bad.reason or "")
    assert garbage.status == "failed" and "not JSON" in (garbage.reason or "")


async def test_a_schema_with_a_remote_ref_fails_without_fetching_it(fetcher: Fetcher, tree: Tree) -> None:
    with respx.mock(assert_all_mocked=True) as router:  # any request at all would be an error
        checks = [{"artifact": "inventory", "schema": {"$ref": "https://allowed.example/schema.json"}}]
        [result] = await run_checks(checks, {"inventory": ref(tree.root / "inventory.json")}, None, fetcher, {})
    assert result.status == "failed" and not router.calls


class CountingReader:
    def __init__(self, inner: Fetcher) -> None:
        self.inner = inner
        self.reads: list[str] = []

    async def read(self, uri: str) -> ReadResult:
        self.reads.append(uri)
        return await self.inner.read(uri)

    async def request(self, url: str, method: str = "GET") -> ReadResult:
        return await self.inner.request(url, method)


async def test_each_artifact_is_read_once_per_run_of_checks(fetcher: Fetcher, tree: Tree) -> None:
    reader = CountingReader(fetcher)
    checks = [{"artifact": "inventory"}, {"artifact": "inventory", "schema": {"type": "array"}}]
    checks.append({"validator": "yes", "artifact": "inventory"})
    results = await run_checks(
        checks, {"inventory": ref(tree.root / "inventory.json")}, None, reader, {"yes": lambda b, e: True}
    )
    assert [r.status for r in results] == ["verified"] * 3
    assert reader.reads == [str(tree.root / "inventory.json")]


# -- validators and reviews -----------------------------------------------------------------------


async def _async_yes(body: bytes | None, evidence: Any) -> tuple[bool, str]:
    await asyncio.sleep(0)
    return True, "looked fine"


def _raises(body: bytes | None, evidence: Any) -> bool:
    raise RuntimeError("the validator broke")


VALIDATORS: dict[str, Callable[[bytes | None, Any], Any]] = {
    "yes": lambda body, evidence: True,
    "no": lambda body, evidence: False,
    "no_because": lambda body, evidence: (False, "only one vendor"),
    "async_yes": _async_yes,
    "raises": _raises,
    "maybe": lambda body, evidence: "yes",
    "sees": lambda body, evidence: (body == INVENTORY and evidence == {"note": "n"}, "checked"),
}


@pytest.mark.parametrize(
    ("name", "status", "words"),
    [
        ("yes", "verified", None),
        ("async_yes", "verified", "looked fine"),
        ("sees", "verified", "checked"),
        ("no", "failed", "said no"),
        ("no_because", "failed", "only one vendor"),
        ("raises", "failed", "RuntimeError: the validator broke"),
        ("maybe", "failed", "not true or false"),
        ("nobody", "failed", "no validator named nobody"),
    ],
)
async def test_a_validator_check_follows_what_the_function_says(
    fetcher: Fetcher, tree: Tree, name: str, status: str, words: str | None
) -> None:
    checks = [{"validator": name, "artifact": "inventory"}]
    artifacts = {"inventory": ref(tree.root / "inventory.json")}
    [result] = await run_checks(checks, artifacts, {"note": "n"}, fetcher, VALIDATORS)
    assert result.status == status
    if words is not None:
        assert words in (result.reason or "")


async def test_a_validator_without_an_artifact_gets_none(fetcher: Fetcher) -> None:
    seen: list[Any] = []
    validators = {"look": lambda body, evidence: seen.append((body, evidence)) is None}
    [result] = await run_checks([{"validator": "look"}], {}, {"note": "x"}, fetcher, validators)
    assert result.status == "verified" and seen == [(None, {"note": "x"})]


async def test_a_validator_that_hangs_is_cut_by_the_timeout(fetcher: Fetcher) -> None:
    release = threading.Event()
    try:
        validators = {"hangs": lambda body, evidence: release.wait(10)}
        [result] = await run_checks([{"validator": "hangs"}], {}, None, fetcher, validators, validator_timeout=0.05)
    finally:
        release.set()
    assert result.status == "unverified"


async def test_a_review_is_pending_and_the_milestone_waits_for_it(fetcher: Fetcher, tree: Tree) -> None:
    checks = [{"artifact": "inventory"}, {"review": {"reviewer": "ana"}}]
    results = await run_checks(checks, {"inventory": ref(tree.root / "inventory.json")}, None, fetcher, {})
    assert [r.status for r in results] == ["verified", "pending_review"]
    assert results[1].detail == {"reviewer": "ana"}
    assert milestone_status(results)[0] == "pending_review"


async def test_an_invalid_stored_check_fails_instead_of_raising(fetcher: Fetcher) -> None:
    [result] = await run_checks([{"artifact": "a", "http": {"url": "http://h/"}}], {}, None, fetcher, {})
    assert result.status == "failed"


# -- http (respx) ---------------------------------------------------------------------------------


async def test_a_host_not_listed_is_never_requested(fetcher: Fetcher) -> None:
    with respx.mock(assert_all_called=False) as router:
        route = router.get(url__regex=r".*").respond(200, content=b"x")
        for url in (
            "http://other.example/x",
            "http://127.0.0.1:8804/x",  # listed host, other port
            "http://127.0.0.1/x",  # listed only with a port
            "https://allowed.example:8443/x",
            "http://user:pw@allowed.example/x",
            "http://allowed.example.evil.test/x",
        ):
            assert not (await fetcher.read(url)).ok
            assert not (await fetcher.request(url)).ok
        assert not route.called


async def test_a_bare_host_allows_its_default_ports_in_any_case(fetcher: Fetcher) -> None:
    with respx.mock() as router:
        router.get("http://allowed.example/a").respond(200, content=b"a", headers={"ETag": '"v1"'})
        router.get("https://allowed.example/b").respond(200, content=b"b")
        router.get("http://127.0.0.1:8803/c").respond(200, content=b"c")
        a = await fetcher.read("http://ALLOWED.example:80/a")
        assert (a.ok, a.body, a.etag, a.status) == (True, b"a", '"v1"', 200)
        assert (await fetcher.read("https://allowed.example:443/b")).body == b"b"
        assert (await fetcher.read("http://127.0.0.1:8803/c")).body == b"c"


async def test_a_redirect_is_not_followed(fetcher: Fetcher) -> None:
    with respx.mock(assert_all_called=False) as router:
        router.get("http://allowed.example/moved").respond(302, headers={"Location": "http://allowed.example/x"})
        target = router.get("http://allowed.example/x").respond(200)
        read = await fetcher.read("http://allowed.example/moved")
        assert (read.ok, read.status) == (False, 302) and "redirect" in (read.reason or "")
        assert not target.called


async def test_http_errors_and_oversized_bodies_are_not_ok(fetcher: Fetcher) -> None:
    with respx.mock() as router:
        router.get("http://allowed.example/404").respond(404)
        router.get("http://allowed.example/big").respond(200, content=b"x" * 1025)
        router.get("http://allowed.example/down").mock(side_effect=httpx.ConnectError("refused"))
        assert (await fetcher.read("http://allowed.example/404")).status == 404
        big = await fetcher.read("http://allowed.example/big")
        assert not big.ok and "max_bytes" in (big.reason or "")
        down = await fetcher.read("http://allowed.example/down")
        assert not down.ok and "connect" in (down.reason or "")


async def test_http_checks_compare_status_and_contents(fetcher: Fetcher) -> None:
    with respx.mock() as router:
        router.get("http://allowed.example/ok").respond(200, text="vendor list ready")
        router.get("http://allowed.example/gone").respond(404)
        router.get("http://allowed.example/moved").respond(301, headers={"Location": "/ok"})
        checks: list[dict[str, Any]] = [
            {"http": {"url": "http://allowed.example/ok", "contains": "ready"}},
            {"http": {"url": "http://allowed.example/ok", "contains": "missing"}},
            {"http": {"url": "http://allowed.example/ok", "status": 201}},
            {"http": {"url": "http://allowed.example/gone"}},
            {"http": {"url": "http://allowed.example/gone", "status": 404}},
            {"http": {"url": "http://allowed.example/moved"}},
            {"http": {"url": "http://elsewhere.example/ok"}},
        ]
        results = await run_checks(checks, {}, None, fetcher, {})
    assert [r.status for r in results] == [
        "verified",
        "failed",
        "failed",
        "failed",
        "verified",
        "unverified",
        "unverified",
    ]
    assert results[3].detail["status"] == 404


# -- re-checks ------------------------------------------------------------------------------------


async def test_recheck_artifact_sees_same_changed_and_unreadable(fetcher: Fetcher, tree: Tree) -> None:
    path = tree.root / "inventory.json"
    r = ref(path)
    assert await recheck_artifact(r, fetcher) == ("same", None)
    path.write_bytes(b"[]")
    verdict, reason = await recheck_artifact(r, fetcher)
    assert verdict == "changed" and sha(b"[]") in (reason or "") and r.sha256 in (reason or "")
    path.unlink()
    assert (await recheck_artifact(r, fetcher))[0] == "unreadable"


async def test_recheck_source_compares_etags_then_hashes(fetcher: Fetcher) -> None:
    url = "http://allowed.example/vendors.csv"
    with respx.mock() as router:
        route = router.get(url)
        route.respond(200, content=b"a,b", headers={"ETag": 'W/"v7"'})
        assert await recheck_source(SourceRef(url, etag='"v7"'), fetcher) == ("same", None)
        route.respond(200, content=b"a,b", headers={"ETag": '"v8"'})
        assert (await recheck_source(SourceRef(url, etag='"v7"'), fetcher))[0] == "changed"
        route.respond(200, content=b"a,b")  # no ETag now
        assert (await recheck_source(SourceRef(url, etag='"v7"'), fetcher))[0] == "unreadable"
        assert await recheck_source(SourceRef(url, etag='"v7"', sha256=sha(b"a,b")), fetcher) == ("same", None)
        assert (await recheck_source(SourceRef(url, sha256=sha(b"a,c")), fetcher))[0] == "changed"
        route.respond(500)
        assert (await recheck_source(SourceRef(url, sha256=sha(b"a,b")), fetcher))[0] == "unreadable"


def test_check_results_are_plain_data() -> None:
    result = CheckResult("artifact", "verified")
    assert (result.reason, result.detail) == (None, {})


# -- configuration --------------------------------------------------------------------------------

ENV = {"WARRANT_LEDGER_KEY": "l"}


def _config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "warrant.yaml"
    path.write_text(body)
    return path


async def test_the_configuration_builds_the_fetcher_it_describes(tmp_path: Path) -> None:
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "inventory.json").write_bytes(INVENTORY)
    path = _config(
        tmp_path,
        "artifact_roots: [artifacts]\n"
        "artifact_hosts: ['127.0.0.1:8803', Example.com]\n"
        "artifact_limits: {max_bytes: 100, timeout: 2s}\n"
        "validators: {nonempty: 'examples.validators:nonempty_json_list'}\n",
    )
    settings = load_settings(path, ENV)
    assert settings.artifacts.roots == ((tmp_path / "artifacts").resolve(),)
    assert settings.artifacts.hosts == ("127.0.0.1:8803", "Example.com")
    assert (settings.artifacts.max_bytes, settings.artifacts.timeout) == (100, 2.0)
    assert settings.validators["nonempty"](INVENTORY, None) == (True, "2 item(s)")

    fetcher = build_fetcher(settings.artifacts)
    try:
        assert (fetcher.max_bytes, fetcher.timeout) == (100, 2.0)
        assert (await fetcher.read(str(tmp_path / "artifacts" / "inventory.json"))).body == INVENTORY
        assert not (await fetcher.read(str(path))).ok  # the config file itself is outside the root
    finally:
        await fetcher.aclose()


def test_by_default_nothing_may_be_read(tmp_path: Path) -> None:
    settings = load_settings(_config(tmp_path, "{}\n"), ENV)
    assert settings.artifacts == ArtifactSettings() and settings.validators == {}
    assert (settings.artifacts.roots, settings.artifacts.hosts) == ((), ())


def test_a_timeout_may_be_fractional_seconds(tmp_path: Path) -> None:
    settings = load_settings(_config(tmp_path, "artifact_limits: {timeout: 0.5}\n"), ENV)
    assert settings.artifacts.timeout == 0.5


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("artifact_roots: [no_such_dir]\n", "no_such_dir"),
        ("artifact_roots: [a_file.txt]\n", "a_file.txt"),
        ("artifact_hosts: ['http://h.example']\n", "artifact_hosts"),
        ("artifact_limits: {max_bytes: 0}\n", "max_bytes"),
        ("artifact_limits: {timeout: soon}\n", "timeout"),
        ("artifact_limits: {timeout: -1}\n", "timeout"),
        ("validators: {v: 'no_colon'}\n", "validators"),
        ("validators: {v: 'examples.no_such_module:f'}\n", "examples.no_such_module"),
        ("validators: {v: 'examples.validators:no_such_function'}\n", "no_such_function"),
        ("validators: {v: 'examples.validators:__doc__'}\n", "not callable"),
    ],
)
def test_a_bad_evidence_setting_stops_start_up_naming_it(tmp_path: Path, body: str, named: str) -> None:
    (tmp_path / "a_file.txt").write_text("not a directory")
    with pytest.raises(ConfigError) as caught:
        load_settings(_config(tmp_path, body), ENV)
    assert named in str(caught.value)
