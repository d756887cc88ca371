"""Two `warrant serve` processes on one PostgreSQL database: one truth, whichever replica is asked."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.e2e.serving import ROOT, clean_environ, warrant_serve
from tests.harness import CONTRACT, free_port
from tests.harness_postgres import PostgresBackend

pytestmark = pytest.mark.slow
WAIT = 30.0  # seconds for a replica to answer /healthz
OPS = {"Authorization": "Bearer key-ops"}


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[list[str]]:
    """Two replicas' base URLs, on a fresh schema of their own."""
    for backend in PostgresBackend.session():
        env = clean_environ() | {"WARRANT_LEDGER_KEY": "replicas-ledger-key", "OPS_KEY": "key-ops"}
        urls = []
        with ExitStack() as stack:
            for name in ("a", "b"):
                port = free_port()
                config = tmp_path / f"{name}.yaml"
                config.write_text(
                    f"database: {backend.url}\nlisten: {{host: 127.0.0.1, port: {port}}}\n"
                    "api_keys:\n  - {name: ops, tenant: acme, roles: [admin], key_env: OPS_KEY}\n"
                    f"adapters: [{ROOT / 'adapters' / 'notes.yaml'}]\n"
                    f"policies: [{ROOT / 'policies' / 'default.yaml'}]\n"
                )
                url = f"http://127.0.0.1:{port}"
                stack.enter_context(warrant_serve(config, url, env, tmp_path / f"{name}.log", WAIT))
                urls.append(url)
            yield urls


def test_a_run_made_on_one_replica_is_led_by_the_other_and_a_takeover_there_fences_the_first(
    replicas: list[str],
) -> None:
    a, b = replicas
    contract = {key: value for key, value in CONTRACT.items() if key != "authority"}
    contract["authority"] = {"allow": ["notes__*"]}
    with httpx.Client(timeout=WAIT) as http:
        created = http.post(f"{a}/api/runs", json=contract, headers=OPS)
        assert created.status_code == 201, created.text
        run_id = created.json()["run_id"]
        first = http.post(f"{a}/api/runs/{run_id}/lease", json={"worker": "w1"}, headers=OPS).json()

        seen = http.get(f"{b}/api/runs/{run_id}", headers=OPS).json()
        assert seen["lease"]["epoch"] == first["epoch"]

        taken = http.post(f"{b}/api/runs/{run_id}/lease", json={"worker": "w2", "takeover": True}, headers=OPS)
        assert taken.status_code in (200, 201), taken.text
        renew = http.post(f"{a}/api/leases/renew", headers={"Authorization": f"Bearer {first['token']}"})
        assert renew.status_code == 409, renew.text
        assert renew.json()["error"]["code"] == "lease_superseded"
