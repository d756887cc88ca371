"""Which clients may ask, from outside over HTTP: RFC 7591 registration held to the redirect-URI
rules and to `oauth.max_clients`, confidential clients whose secret the store never holds, and
Client ID Metadata Documents fetched from a loopback server of the test's own."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.auth import OAuthClientInformationFull

from gateway.clock import ManualClock
from gateway.oauth import ClientRejected, MetadataDocuments
from gateway.oauth.clients import CACHE_SECONDS, FAILED_SECONDS
from tests.api.conftest import Api, serving_api
from tests.oauth.conftest import FormBrowser, code_of, write_templates
from tests.oauth.flow import (
    REDIRECT,
    Client,
    authorize_url,
    code_for,
    mcp_call,
    oauth_error,
    pkce,
    public_client,
    redeem,
    refresh,
    register,
    tokens_for,
)

pytestmark = pytest.mark.anyio


REFUSED_URIS = [
    "http://client.example/callback",  # plain http, not loopback
    "http://127.0.0.1.client.example/callback",  # looks loopback, is not
    "javascript:alert(1)",
    "data:text/html,hi",
    "https://client.example/callback#fragment",
    "http://127.0.0.1:9/callback#",
    "/callback",  # no scheme
]
ACCEPTED_URIS = [
    "https://client.example/callback",
    "http://localhost:7777/cb",
    "http://[::1]:7/cb",
    "cursor://oauth/cb",
]


async def test_a_redirect_uri_against_the_rules_is_refused_at_registration(oauth_api: Api, tmp_path: Path) -> None:
    for uri in REFUSED_URIS:
        answer = await register(oauth_api.url, [uri])
        assert answer.status_code == 400, (uri, answer.text)
        assert answer.json()["error"] in {"invalid_client_metadata", "invalid_redirect_uri"}, uri
        # Also when it hides behind a valid one.
        answer = await register(oauth_api.url, [REDIRECT, uri])
        assert answer.status_code == 400, (uri, answer.text)
    for uri in ACCEPTED_URIS:
        answer = await register(oauth_api.url, [uri])
        assert answer.status_code == 201, (uri, answer.text)
        assert answer.json()["redirect_uris"] == [uri]
    with sqlite3.connect(tmp_path / "w.db") as db:
        assert db.execute("SELECT COUNT(*) FROM oauth_clients").fetchone()[0] == len(ACCEPTED_URIS)


async def test_a_grant_type_not_served_is_refused(oauth_api: Api) -> None:
    answer = await register(oauth_api.url, grant_types=["authorization_code", "client_credentials"])
    assert oauth_error(answer) == "invalid_client_metadata"


async def test_registrations_beyond_max_clients_are_refused_until_unused_ones_can_go(tmp_path: Path) -> None:
    write_templates(tmp_path)
    extra = "oauth: {contract_templates: [templates], max_clients: 3}\n"
    async with serving_api(tmp_path, extra) as api:
        used = await public_client(api.url)
        await tokens_for(api.url, FormBrowser(api.url, "key-op"), used, f"run:{await api.new_run()}")
        for _ in range(2):
            await public_client(api.url)
        refused = await register(api.url)
        assert oauth_error(refused) == "invalid_client_metadata"
        assert "limit" in refused.json()["error_description"]
        # Unused registrations younger than a day are kept: still refused an hour later.
        api.clock.advance(3600)
        assert (await register(api.url)).status_code == 400
        # A day on, the two never used go; the one consented to stays.
        api.clock.advance(86_400)
        for _ in range(2):
            assert (await register(api.url)).status_code == 201
        assert (await register(api.url)).status_code == 400
        with sqlite3.connect(tmp_path / "w.db") as db:
            ids = {row[0] for row in db.execute("SELECT client_id FROM oauth_clients")}
        assert used.client_id in ids and len(ids) == 3


# -- confidential clients ----------------------------------------------------------------------
async def confidential(api: Api, method: str) -> Client:
    answer = await register(api.url, token_endpoint_auth_method=method)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["token_endpoint_auth_method"] == method and body["client_secret"]
    return Client(body["client_id"], REDIRECT, body["client_secret"])


@pytest.mark.parametrize(("method", "auth"), [("client_secret_post", "post"), ("client_secret_basic", "basic")])
async def test_a_confidential_client_signs_in_and_its_secret_is_not_stored(
    oauth_api: Api, tmp_path: Path, method: str, auth: str
) -> None:
    client = await confidential(oauth_api, method)
    assert client.secret is not None
    run_id = await oauth_api.new_run()
    code, verifier = await code_for(oauth_api.url, FormBrowser(oauth_api.url, "key-op"), client, f"run:{run_id}")

    # Without the secret, with a wrong one, or sent the other way: 401 invalid_client, and the
    # code is not spent by the failed attempts.
    anonymous = Client(client.client_id, client.redirect_uri)
    assert oauth_error(await redeem(oauth_api.url, anonymous, code, verifier), 401) == "invalid_client"
    wrong = Client(client.client_id, client.redirect_uri, client.secret + "x")
    assert oauth_error(await redeem(oauth_api.url, wrong, code, verifier, auth), 401) == "invalid_client"
    other_way = "basic" if auth == "post" else "post"
    assert oauth_error(await redeem(oauth_api.url, client, code, verifier, other_way), 401) == "invalid_client"

    answer = await redeem(oauth_api.url, client, code, verifier, auth)
    assert answer.status_code == 200, answer.text
    issued = answer.json()
    assert (await mcp_call(f"{oauth_api.url}/mcp", issued["access_token"])).status_code == 200

    with sqlite3.connect(tmp_path / "w.db") as db:
        rows = db.execute("SELECT client_id, kind, metadata FROM oauth_clients").fetchall()
        dump = "\n".join(db.iterdump())
    assert [(r[0], r[1]) for r in rows] == [(client.client_id, "registered")]
    assert client.secret not in rows[0][2]
    assert client.secret not in dump  # nowhere in the database
    assert issued["access_token"] not in dump and issued["refresh_token"] not in dump
    assert "client_secret_sha256" in json.loads(rows[0][2])


# -- Client ID Metadata Documents -----------------------------------------------------------
@contextmanager
def document_server() -> Iterator[tuple[str, dict[str, Any]]]:
    """A loopback HTTP server of JSON documents: (its base URL, path -> document)."""
    documents: dict[str, Any] = {}
    fetched: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetched.append(self.path)
            if self.path not in documents:
                self.send_error(404)
                return
            body = json.dumps(documents[self.path]).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        documents["__fetched__"] = fetched
        yield f"http://127.0.0.1:{server.server_address[1]}", documents
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def document(client_id: str, **changes: Any) -> dict[str, Any]:
    return {
        "client_id": client_id,
        "client_name": "a metadata document client",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **changes,
    }


async def authorize(url: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10, follow_redirects=False) as http:
        return await http.get(url)


async def test_a_client_id_metadata_document_client_signs_in_refreshes_and_calls(oauth_api: Api) -> None:
    with document_server() as (base, documents):
        client = Client(f"{base}/clients/warrant-test.json", REDIRECT)
        documents["/clients/warrant-test.json"] = document(client.client_id)
        run_id = await oauth_api.new_run()
        browser = FormBrowser(oauth_api.url, "key-op")
        issued = await tokens_for(oauth_api.url, browser, client, f"run:{run_id}")
        assert "a metadata document client" in browser.pages[-1]
        assert (await mcp_call(f"{oauth_api.url}/mcp", issued["access_token"])).status_code == 200
        rotated = await refresh(oauth_api.url, client, issued["refresh_token"])
        assert rotated.status_code == 200, rotated.text
        assert "/clients/warrant-test.json" in documents["__fetched__"]


@pytest.mark.parametrize(
    "change",
    [
        {"client_id": "http://127.0.0.1:1/some-other.json"},
        {"redirect_uris": ["http://client.example/callback"]},
        {"token_endpoint_auth_method": "client_secret_post"},
        {"client_secret": "s3cret"},
    ],
    ids=["other-client-id", "http-redirect", "confidential", "with-secret"],
)
async def test_a_metadata_document_against_the_rules_is_refused(oauth_api: Api, change: dict[str, Any]) -> None:
    with document_server() as (base, documents):
        client = Client(f"{base}/client.json", REDIRECT)
        documents["/client.json"] = {**document(client.client_id), **change}
        answer = await authorize(authorize_url(oauth_api.url, client, pkce()[1]))
        # Not a client: refused at /authorize itself, never redirected (its redirect URI unproven).
        assert answer.status_code == 400, answer.text
        assert "location" not in answer.headers
        assert answer.json()["error"] == "invalid_request"
        assert "/client.json" in documents["__fetched__"]  # fetched, then refused for what it says
        assert oauth_error(await redeem(oauth_api.url, client, "wac_" + "x" * 43, "v" * 43), 401) == "invalid_client"


async def test_a_loopback_metadata_document_is_refused_without_the_flag(tmp_path: Path) -> None:
    with document_server() as (base, documents):
        client = Client(f"{base}/client.json", REDIRECT)
        documents["/client.json"] = document(client.client_id)
        async with serving_api(tmp_path, "oauth: {metadata_documents: true}\n") as api:
            answer = await authorize(authorize_url(api.url, client, pkce()[1]))
        assert answer.status_code == 400, answer.text
        assert "location" not in answer.headers
        # Refused before any fetch: the gateway does not reach into its own network.
        assert documents["__fetched__"] == []


async def test_a_metadata_document_redirect_uri_is_matched_exactly(oauth_api: Api) -> None:
    with document_server() as (base, documents):
        client = Client(f"{base}/client.json", "http://127.0.0.1:9/not-in-the-document")
        documents["/client.json"] = document(client.client_id)
        answer = await authorize(authorize_url(oauth_api.url, client, pkce()[1]))
        assert answer.status_code == 400 and "location" not in answer.headers
        good = Client(client.client_id, REDIRECT)
        page = await FormBrowser(oauth_api.url, "key-op").consent(
            authorize_url(oauth_api.url, good, pkce()[1]), f"run:{await oauth_api.new_run()}"
        )
        code_of(page)


async def test_a_document_that_could_not_be_had_is_not_fetched_again_at_once(oauth_api: Api) -> None:
    """Naming a URL as client_id makes the gateway fetch it; naming it again soon does not, even
    when the first answer was a refusal (a bound on what an outsider can make it fetch)."""
    with document_server() as (base, documents):
        client = Client(f"{base}/missing.json", REDIRECT)
        for _ in range(3):
            answer = await authorize(authorize_url(oauth_api.url, client, pkce()[1]))
            assert answer.status_code == 400, answer.text
        assert documents["__fetched__"].count("/missing.json") == 1


async def test_a_document_is_kept_for_its_time_and_a_failure_for_a_shorter_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = ManualClock()
    documents = MetadataDocuments(allow_loopback_http=True, scopes="mcp", clock=clock)
    fetched: list[str] = []

    async def fetch(client_id: str) -> OAuthClientInformationFull:
        fetched.append(client_id)
        if client_id.endswith("/missing.json"):
            raise ClientRejected("the metadata document answered HTTP 404")
        return OAuthClientInformationFull(client_id=client_id, redirect_uris=[REDIRECT])

    monkeypatch.setattr(documents, "_fetch", fetch)
    good, missing = "https://client.example/good.json", "https://client.example/missing.json"
    assert await documents.client(good) is not None and await documents.client(missing) is None
    clock.advance(FAILED_SECONDS - 1)
    assert await documents.client(good) is not None and await documents.client(missing) is None
    assert fetched == [good, missing]
    clock.advance(1)
    await documents.client(missing)
    clock.advance(CACHE_SECONDS - FAILED_SECONDS)
    await documents.client(good)
    assert fetched == [good, missing, missing, good]


@pytest.mark.parametrize(
    "name", ["evil\u202eexe.txt", "line\nbreak", "bell\x07", "x" * 201], ids=["bidi", "newline", "control", "long"]
)
async def test_a_client_name_is_plain_text_of_bounded_length(oauth_api: Api, name: str) -> None:
    async with httpx.AsyncClient(base_url=oauth_api.url, timeout=10) as http:
        answer = await http.post(
            "/register",
            json={"client_name": name, "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"},
        )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_client_metadata"
