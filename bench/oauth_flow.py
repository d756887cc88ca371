"""A client's whole MCP authorization flow over plain HTTP, for the benchmarks: register (RFC 7591),
authorize with PKCE S256, a person's sign-in and consent on the console's forms, the token.

`access_token` is what bench/mcp_proxy.py's `warrant-oauth` mode calls. Run on its own, this file
times the flow against a `warrant serve` of its own (a temp config and SQLite file, no adapters):

    .venv/bin/python bench/oauth_flow.py [--flows N] [--smoke]      # defaults: 20 flows; --smoke: 2

Each flow is one run's consent, timed from registration to the access token; the last token is
then used for an MCP `tools/list` through the official SDK client, which must list `warrant_status`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import html
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx

REDIRECT = "http://127.0.0.1:9/callback"
ROOT = Path(__file__).resolve().parent.parent
ADMIN_KEY = "bench-admin-key"
FLOWS = 20
SMOKE_FLOWS = 2  # `--smoke` (tests/bench/): the same flow and check, twice


def _field(page: str, name: str) -> str:
    match = re.search(rf'name="{re.escape(name)}" value="([^"]*)"', page)
    if match is None:
        raise RuntimeError(f"no field {name} in the page")
    return html.unescape(match.group(1))


async def access_token(base: str, api_key: str, run_id: str) -> str:
    """An access token acting for `run_id`, consented by `api_key`."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    async with httpx.AsyncClient(base_url=base, timeout=10, follow_redirects=False) as http:
        registered = await http.post(
            "/register", json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
        )
        registered.raise_for_status()
        client_id = registered.json()["client_id"]
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        answer = await http.get("/authorize", params=params)
        while answer.status_code in (302, 303):
            answer = await http.get(urljoin(str(answer.url), answer.headers["location"]))
        login = await http.post(
            "/console/login",
            data={"csrf": _field(answer.text, "csrf"), "api_key": api_key, "next": _field(answer.text, "next")},
        )
        page = await http.get(login.headers["location"])
        consent = await http.post(
            "/console/oauth/consent",
            data={
                "csrf": _field(page.text, "csrf"),
                "request": _field(page.text, "request"),
                "choice": f"run:{run_id}",
                "decision": "allow",
            },
        )
        code = parse_qs(urlsplit(consent.headers["location"]).query)["code"][0]
        token = await http.post(
            "/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "client_id": client_id,
                "code_verifier": verifier,
            },
        )
        token.raise_for_status()
        return str(token.json()["access_token"])


# -- on its own: the flow timed against a gateway of its own --------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _serve(home: Path, port: int) -> subprocess.Popen[bytes]:
    """`warrant serve` from this checkout on a config of its own in `home`; its output in home/serve.log."""
    (home / "warrant.yaml").write_text(
        f"database: sqlite:///{home}/warrant.db\n"
        f"listen: {{host: 127.0.0.1, port: {port}}}\n"
        "api_keys:\n  - {name: bench, tenant: bench, roles: [admin], key_env: BENCH_ADMIN_KEY}\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("WARRANT_", "OTEL_"))}
    environ |= {"BENCH_ADMIN_KEY": ADMIN_KEY, "WARRANT_LEDGER_KEY": "bench-ledger-key-not-a-secret"}
    environ["PYTHONPATH"] = str(ROOT)
    argv = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(home / "warrant.yaml")]
    with (home / "serve.log").open("wb") as out:
        return subprocess.Popen(
            [*argv, "--log-level", "warning"], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=environ
        )


def _running(server: subprocess.Popen[bytes], home: Path) -> None:
    if server.poll() is not None:
        raise RuntimeError(f"warrant serve exited {server.returncode}:\n{(home / 'serve.log').read_text()}")


async def _healthy(base: str, server: subprocess.Popen[bytes], home: Path, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(base_url=base, timeout=2) as http:
        while True:
            _running(server, home)
            try:
                if (await http.get("/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"warrant serve did not answer /healthz within {within:g} s")
            await asyncio.sleep(0.1)


async def _listed_tools(base: str, token: str) -> list[str]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=10) as http:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
            return [tool.name for tool in (await client.list_tools()).tools]


async def main(flows: int) -> int:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="warrant-bench-oauth-") as tmp:
        home = Path(tmp)
        server = _serve(home, port)
        try:
            await _healthy(base, server, home)
            contract = {
                "goal": "benchmark the MCP authorization flow",
                "spec_version": "v1",
                "owner": "bench@example.com",
                "expires_in": "1h",
                "budgets": {"spend": "1.00", "tool_calls": 10, "writes": 1, "active_seconds": 3600},
                "authority": {"allow": ["bench__*"]},
            }
            took: list[float] = []
            token = ""
            headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
            async with httpx.AsyncClient(base_url=base, timeout=10, headers=headers) as api:
                for _ in range(flows):
                    run = await api.post("/api/runs", json=contract)
                    run.raise_for_status()
                    started = time.perf_counter()
                    token = await access_token(base, ADMIN_KEY, run.json()["run_id"])
                    took.append((time.perf_counter() - started) * 1000)
            tools = await _listed_tools(base, token)
        finally:
            server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(10)
    ordered = sorted(took)
    print(f"MCP authorization flow (register, authorize, sign-in, consent, token) against warrant serve: {flows} flows")
    print(f"ms per flow: p50 {ordered[len(ordered) // 2]:.1f}, min {ordered[0]:.1f}, max {ordered[-1]:.1f}")
    print(f"the last token's tools/list: {len(tools)} tools")
    if "warrant_status" not in tools:
        print(f"ERROR: the access token's tools/list has no warrant_status: {tools}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--flows", type=int, default=FLOWS, help=f"flows timed (default {FLOWS})")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_FLOWS} flows, the same code")
    options = parser.parse_args()
    if options.smoke:
        options.flows = SMOKE_FLOWS
    if options.flows < 1:
        parser.error("--flows must be at least 1")
    sys.exit(asyncio.run(main(options.flows)))
