"""End to end, every part a real process: `warrant serve` fronting the example notebook (a downstream
MCP server), an agent calling it through the official MCP client (reads, writes, an approved
write, a refusal, a failure), then `warrant ledger export` over the API and `warrant ledger verify
--file` offline, as an auditor would run them. An edited bundle, a wrong key and a missing key fail
with their codes; `warrant ledger verify` without `--file` still checks the store."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.store.chain import GENESIS, entry_hash
from tests.adapters.conftest import Notebook, free_port
from tests.e2e.serving import ROOT, clean_environ, warrant_serve
from tests.e2e.test_mcp_end_to_end import WAIT, Served, code_of

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LEDGER_KEY = "e2e-cli-ledger-key"
KEYS = {"op": "operator", "appr": "approver", "aud": "auditor"}
POLICY = """currency: USD
tools:
  files__read_note: {effect: read}
  files__write_note: {effect: write, cost: {spend: "0.01"},
                      approval: {role: approver, when: "args.title.startsWith('approve-')"}}
  files__fail: {effect: write}
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path, dict[str, str]]]:
    """A running `warrant serve`, its configuration file and the environment its keys come from."""
    tmp = tmp_path_factory.mktemp("cli_ledger")
    notebook = Notebook(tmp / "notebook")
    notebook.folder.mkdir()
    adapter = {"name": "files", "kind": "mcp", "command": [sys.executable, *notebook.args()], "pin": "first_use"}
    (tmp / "files.yaml").write_text(json.dumps(adapter))
    (tmp / "policy.yaml").write_text(POLICY)
    port = free_port()
    keys = "\n".join(
        f"  - {{name: {n}, tenant: acme, roles: [{r}], key_env: CLI_KEY_{n.upper()}}}" for n, r in KEYS.items()
    )
    config = tmp / "warrant.yaml"
    config.write_text(
        f"database: sqlite:///{tmp}/w.db\nlisten: {{host: 127.0.0.1, port: {port}}}\n"
        f"api_keys:\n{keys}\nadapters: [files.yaml]\npolicies: [policy.yaml]\n"
    )
    env = clean_environ() | {"WARRANT_LEDGER_KEY": LEDGER_KEY} | {f"CLI_KEY_{n.upper()}": f"key-{n}" for n in KEYS}
    url = f"http://127.0.0.1:{port}"
    with warrant_serve(config, url, env, tmp / "serve.log", WAIT):
        yield Served(url, notebook, tmp / "serve.log"), config, env


def warrant(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The `warrant` command as a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=WAIT
    )


async def agent_work(served: Served) -> str:
    """A run in which the agent reads, writes, waits for an approval, is refused and fails once."""
    run_id, token = await served.start()
    with anyio.fail_after(WAIT):
        async with served.connect(token, "auto") as client:
            assert code_of(await client.call_tool("files__write_note", {"title": "plain", "body": "x"})) is None
            assert code_of(await client.call_tool("files__read_note", {"title": "plain"})) is None
            note = {"title": "approve-me", "body": "y"}
            asked = await client.call_tool("files__write_note", note)
            assert code_of(asked) == "approval_required" and asked.structured_content is not None
            approval_id = asked.structured_content["error"]["approval_id"]
            async with served.api("appr") as api:
                assert (await api.post(f"/api/approvals/{approval_id}/approve", json={})).status_code == 200
            assert code_of(await client.call_tool("files__write_note", note)) is None
            assert code_of(await client.call_tool("files__slow_write", {"title": "t", "body": "b"})) == "forbidden"
            assert code_of(await client.call_tool("files__fail", {"reason": "no"})) == "upstream_failed"
    return run_id


def export_bundle(env: dict[str, str], served: Served, run_id: str, out: Path) -> dict[str, Any]:
    exported = warrant(
        env | {"WARRANT_API_KEY": "key-aud", "WARRANT_URL": served.url},
        *("ledger", "export", "--run", run_id, "--out", str(out), "--json"),
    )
    assert exported.returncode == 0, exported.stderr
    summary: dict[str, Any] = json.loads(exported.stdout)
    return summary


async def test_an_exported_bundle_verifies_offline_and_an_edited_one_does_not(
    gateway: tuple[Served, Path, dict[str, str]], tmp_path: Path
) -> None:
    served, _, env = gateway
    run_id = await agent_work(served)
    bundle = tmp_path / "run.bundle.jsonl"
    summary = export_bundle(env, served, run_id, bundle)
    assert summary["run_id"] == run_id and summary["file"] == str(bundle)
    assert summary["events"] > 0 and summary["actions"] == 5 and summary["bytes"] == bundle.stat().st_size
    assert not (tmp_path / "run.bundle.jsonl.partial").exists()

    offline = {k: v for k, v in env.items() if not k.startswith("CLI_KEY_")}  # only the ledger key
    verified = warrant(offline, "ledger", "verify", "--file", str(bundle), "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    report = json.loads(verified.stdout)
    assert (report["ok"], report["run_id"], report["events"], report["actions"]) == (
        True,
        run_id,
        summary["events"],
        5,
    )

    lines = bundle.read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if '"type":"action_rejected"' in line)
    edited: dict[str, Any] = json.loads(lines[i])
    entry = json.loads(edited["body"])
    entry["data"]["code"] = "approval_required"  # someone rewrites why the call was refused ...
    edited["body"] = json.dumps(entry, separators=(",", ":"), sort_keys=True)
    lines[i] = json.dumps(edited)
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    failed = warrant(offline, "ledger", "verify", "--file", str(tampered), "--json")
    assert failed.returncode == 1
    bad = json.loads(failed.stdout)["first_bad"]
    assert (bad["code"], bad["item"], bad["ref"]) == ("entry_edited", "event", edited["seq"])

    prev = GENESIS  # ... and recomputes the chain to cover it up: only the key could MAC the new head
    rewritten = [json.loads(line) for line in lines]
    for obj in rewritten:
        if obj["kind"] == "event":
            obj["prev_hash"], obj["hash"] = prev, entry_hash(prev, obj["body"])
            prev = obj["hash"]
    rewritten[0]["head"]["hash"] = prev
    tampered.write_text("".join(json.dumps(obj) + "\n" for obj in rewritten))
    failed = warrant(offline, "ledger", "verify", "--file", str(tampered))
    assert failed.returncode == 1 and "[head_mac_invalid]" in failed.stdout


async def test_a_wrong_key_or_no_key_does_not_verify(
    gateway: tuple[Served, Path, dict[str, str]], tmp_path: Path
) -> None:
    served, _, env = gateway
    run_id, _ = await served.start()
    bundle = tmp_path / "run.jsonl"
    export_bundle(env, served, run_id, bundle)
    to_stdout = warrant(
        env | {"WARRANT_API_KEY": "key-aud", "WARRANT_URL": served.url}, "ledger", "export", "--run", run_id
    )
    assert to_stdout.returncode == 0 and f"exported {run_id}" in to_stdout.stderr
    assert to_stdout.stdout.splitlines()[1:] == bundle.read_text().splitlines()[1:]  # all but the export time
    key_file = tmp_path / "ledger.key"
    key_file.write_text(LEDGER_KEY + "\n")
    no_key = {k: v for k, v in env.items() if k != "WARRANT_LEDGER_KEY"}
    assert warrant(no_key, "ledger", "verify", "--file", str(bundle), "--key-file", str(key_file)).returncode == 0
    key_file.write_text("not the ledger key")
    wrong = warrant(no_key, "ledger", "verify", "--file", str(bundle), "--key-file", str(key_file), "--json")
    assert (wrong.returncode, json.loads(wrong.stdout)["first_bad"]["code"]) == (1, "head_mac_invalid")
    assert warrant(no_key, "ledger", "verify", "--file", str(bundle)).returncode == 2
    assert warrant(env, "ledger", "verify", "--file", str(tmp_path / "missing.jsonl")).returncode == 2


async def test_export_refusals_are_one_line_with_their_code_and_leave_no_file(
    gateway: tuple[Served, Path, dict[str, str]], tmp_path: Path
) -> None:
    served, _, env = gateway
    run_id, _ = await served.start()
    out = tmp_path / "refused.jsonl"
    for key, run, code in (("key-op", run_id, "forbidden"), ("key-aud", "run_nosuchrun", "not_found")):
        refused = warrant(
            env | {"WARRANT_API_KEY": key, "WARRANT_URL": served.url},
            "ledger",
            "export",
            "--run",
            run,
            "--out",
            str(out),
        )
        assert refused.returncode == 1 and f"[{code}]" in refused.stderr
        assert not out.exists() and not (tmp_path / "refused.jsonl.partial").exists()


async def test_verify_without_a_file_still_checks_the_store(gateway: tuple[Served, Path, dict[str, str]]) -> None:
    served, config, env = gateway
    await served.start()
    checked = warrant(env, "ledger", "verify", "--config", str(config))
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert report["ok"] is True and report["runs"] >= 1


async def test_an_anchor_written_by_the_cli_verifies_and_an_edited_one_does_not(
    gateway: tuple[Served, Path, dict[str, str]], tmp_path: Path
) -> None:
    served, config, env = gateway
    await served.start()
    out = tmp_path / "anchor.json"
    written = warrant(env, "ledger", "anchor", "--config", str(config), "--out", str(out))
    assert written.returncode == 0, written.stderr
    anchor = json.loads(out.read_text())
    assert anchor["kind"] == "warrant-ledger-anchor" and anchor["runs"]
    checked = warrant(env, "ledger", "verify", "--config", str(config), "--anchor", str(out))
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["anchor"] == {"ok": True, "first_bad": None}
    run_id = next(iter(anchor["runs"]))
    anchor["runs"][run_id][0] += 1  # claims a longer chain than the gateway anchored
    out.write_text(json.dumps(anchor))
    refused = warrant(env, "ledger", "verify", "--config", str(config), "--anchor", str(out))
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["anchor"]["first_bad"]["code"] == "anchor_invalid"
    out.write_text("not json")
    assert warrant(env, "ledger", "verify", "--config", str(config), "--anchor", str(out)).returncode == 2
