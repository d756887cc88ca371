"""`warrant runs` and `warrant leases`: runs and their leases, over the operator HTTP API.

    warrant runs create CONTRACT                  a .yaml/.yml/.json file, or - for stdin
    warrant runs list [--status S] [--limit N] [--all]
    warrant runs show RUN                         budgets as bars, lease, pending approvals, milestones
    warrant runs pause RUN | resume RUN [--reason TEXT]
    warrant runs cancel RUN [--reason TEXT] [--hard]
    warrant runs fail RUN --reason TEXT           end a run failed (its reason kept as its cause)
    warrant runs successor RUN --reason TEXT [--extend-by 24h]
                                                  a new run in a terminal run's lineage (extending: admin)
    warrant runs revise RUN --spec-version V --patch FILE|JSON [--reason TEXT]
                                                  an RFC 7396 merge patch of the contract (widening: admin)
    warrant runs delegate PARENT CONTRACT         a sub-run carved out of a live run; prints its id
    warrant runs actions RUN                      the action ledger as a table
    warrant runs usage RUN --kind K --amount A [--note TEXT] [--ref REF]
                                                  report model or runtime spend against the run
    warrant runs signal RUN NAME [--payload JSON] [--key K]
                                                  send a run an outside event; a wait naming it goes on
    warrant runs report RUN                       the pilot measures and the cost by tag
    warrant runs dead-letters RUN                 operation ids given up after their retries (docs/retries.md)
    warrant runs plan RUN                         the plan: each task's state, attempts and calls
    warrant runs connections RUN                  the clients signed in for the run (MCP authorization)
    warrant runs disconnect RUN GRANT --reason TEXT
                                                  end one: its tokens stop, the lease it held is freed
    warrant leases acquire RUN [--worker W] [--takeover]
    warrant leases renew [--token T]              (default: WARRANT_TOKEN)

The gateway is `--url`, else WARRANT_URL, else http://127.0.0.1:8700; the API key comes from
WARRANT_API_KEY (`leases renew` needs only the lease token). `runs create` and `leases acquire`
print the new run id or token alone on stdout (the rest on stderr), so `RUN=$(warrant runs create
c.yaml)` keeps it. `--json` prints the API's JSON instead; a refusal is `warrant: [code] message`
on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import secrets
import socket
import sys
from pathlib import Path
from typing import Any

import httpx

from gateway.cli import http as cli_http
from gateway.cli.format import budget_lines, cell, plan_text, short_hash, short_time, table
from gateway.cli.http import ApiFailed, add_url, api_path, each_page, every_item, print_json, reporting
from gateway.cli.reports import run_report
from gateway.domain.lifecycle import RunStatus
from gateway.errors import Code, InvalidRequest

MAX_PAGE = 500  # the API's largest `limit`


def add_commands(sub: Any) -> None:
    runs = sub.add_parser("runs", help="create, list, show and control runs (WARRANT_API_KEY)")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True)
    create = runs_sub.add_parser("create", help="a run from a contract (YAML or JSON); prints its id")
    create.add_argument("contract", help="a .yaml, .yml or .json file, or - for stdin")
    create.set_defaults(func=reporting(_create))
    listing = runs_sub.add_parser("list", help="the tenant's runs, oldest first")
    listing.add_argument("--status", choices=[s.value for s in RunStatus])
    listing.add_argument("--limit", type=int, default=50, help=f"runs per page, 1 to {MAX_PAGE} (default 50)")
    listing.add_argument("--all", action="store_true", help="every page, not only the first")
    listing.set_defaults(func=reporting(_list))
    show = runs_sub.add_parser("show", help="one run: budgets, lease, pending approvals, milestones")
    show.add_argument("run_id")
    show.set_defaults(func=reporting(_show))
    commands = [create, listing, show]
    for name, what in (("pause", "pause a run"), ("resume", "resume a paused run (reconciles first)")):
        control = runs_sub.add_parser(name, help=what)
        control.add_argument("run_id")
        control.add_argument("--reason", help="recorded in the run's history")
        control.set_defaults(func=reporting(_control), control=name)
        commands.append(control)
    cancel = runs_sub.add_parser("cancel", help="cancel a run: every lease token dies at once")
    cancel.add_argument("run_id")
    cancel.add_argument("--reason", help="recorded in the run's history")
    cancel.add_argument("--hard", action="store_true", help="abort writes in flight (they become unknown)")
    cancel.set_defaults(func=reporting(_control), control="cancel")
    fail = runs_sub.add_parser("fail", help="end a run failed: every lease token dies, a run_failed alert is raised")
    fail.add_argument("run_id")
    fail.add_argument("--reason", required=True, help="why, kept as the run's cause (required)")
    fail.set_defaults(func=reporting(_control), control="fail")
    successor = runs_sub.add_parser("successor", help="a new run in the lineage of a terminal one")
    successor.add_argument("run_id")
    successor.add_argument("--reason", required=True, help="the authorization, recorded in both runs (required)")
    successor.add_argument("--extend-by", help='added to the inherited deadline, like "24h" (admin only)')
    successor.set_defaults(func=reporting(_successor))
    revise = runs_sub.add_parser("revise", help="change a run's contract (narrowing: operator; widening: admin)")
    revise.add_argument("run_id")
    revise.add_argument("--spec-version", required=True, help="the contract's new version")
    revise.add_argument(
        "--patch", required=True, help="an RFC 7396 merge patch: inline JSON, a .json/.yaml file, or - for stdin"
    )
    revise.add_argument("--reason", help="recorded in the run's history")
    revise.set_defaults(func=reporting(_revise))
    delegate = runs_sub.add_parser("delegate", help="a sub-run carved out of a live run; prints its id")
    delegate.add_argument("parent_run_id")
    delegate.add_argument("contract", help="the child's contract: a .yaml, .yml or .json file, or - for stdin")
    delegate.set_defaults(func=reporting(_delegate))
    actions = runs_sub.add_parser("actions", help="the run's action ledger as a table")
    actions.add_argument("run_id")
    actions.set_defaults(func=reporting(_actions))
    usage = runs_sub.add_parser("usage", help="report model or runtime spend against a run (worker or operator)")
    usage.add_argument("run_id")
    usage.add_argument("--kind", choices=["model", "runtime"], required=True)
    usage.add_argument("--amount", required=True, help='a decimal in the run\'s currency, like "0.42"')
    usage.add_argument("--note", help="what it was for, recorded in the run's history")
    usage.add_argument("--ref", help="your reference for this cost: a retry with the same one is charged once")
    usage.set_defaults(func=reporting(_usage))
    signal = runs_sub.add_parser("signal", help="send a run an outside event (worker or operator)")
    signal.add_argument("run_id")
    signal.add_argument("name", help="what happened, [a-z0-9_.:-]{1,64}: a wait's wake_on names it")
    signal.add_argument("--payload", help="any JSON (at most 16 KB) the agent reads in warrant_status")
    signal.add_argument("--key", help="an idempotency key: a retry with the same one is recorded once (default: new)")
    signal.set_defaults(func=reporting(_signal))
    letters = runs_sub.add_parser("dead-letters", help="the run's dead letters: operation ids given up after retries")
    letters.add_argument("run_id")
    letters.set_defaults(func=reporting(_dead_letters))
    report = runs_sub.add_parser("report", help="the pilot measures and the cost by tag")
    report.add_argument("run_id")
    report.set_defaults(func=reporting(_report))
    plan = runs_sub.add_parser("plan", help="the run's plan: each task's state, attempts and calls; current and next")
    plan.add_argument("run_id")
    plan.set_defaults(func=reporting(_plan))
    connections = runs_sub.add_parser("connections", help="the clients signed in for a run, with their status")
    connections.add_argument("run_id")
    connections.set_defaults(func=reporting(_connections))
    disconnect = runs_sub.add_parser("disconnect", help="disconnect a client: its tokens stop, its lease is freed")
    disconnect.add_argument("run_id")
    disconnect.add_argument("grant_id", help="the connection's id (og_...), from `warrant runs connections`")
    disconnect.add_argument("--reason", required=True, help="why, recorded in the run's history (required)")
    disconnect.set_defaults(func=reporting(_disconnect))
    commands += [cancel, fail, successor, revise, delegate, actions, usage, signal, report, plan]
    commands += [connections, disconnect, letters]

    leases = sub.add_parser("leases", help="acquire or renew a run's lease")
    leases_sub = leases.add_subparsers(dest="leases_command", required=True)
    acquire = leases_sub.add_parser("acquire", help="a lease token for a run, shown once (WARRANT_API_KEY)")
    acquire.add_argument("run_id")
    acquire.add_argument("--worker", help="who acts for the run (default: user@host)")
    acquire.add_argument("--takeover", action="store_true", help="supersede the current holder")
    acquire.set_defaults(func=reporting(_acquire))
    renew = leases_sub.add_parser("renew", help="extend the lease (token: --token, else WARRANT_TOKEN)")
    renew.add_argument("--token", help="the lease token (default: WARRANT_TOKEN)")
    renew.set_defaults(func=reporting(_renew))
    for command in [*commands, acquire, renew]:
        add_url(command)
        command.add_argument("--json", action="store_true", help="print the API's JSON answer")


# -- runs create -----------------------------------------------------------------------------
def read_contract(source: str) -> dict[str, Any]:
    """A contract from a file (`.json` as JSON, anything else as YAML) or `-` (stdin, JSON or YAML).

    Raises: ApiFailed `unreadable` (the file) or `invalid_contract` (not a JSON-able mapping).
    """
    import yaml

    from gateway.errors import ConfigError
    from gateway.yamlfile import parse_yaml, read_text  # the project's safe loader, for text (stdin too)

    try:
        text = sys.stdin.read() if source == "-" else read_text(Path(source))  # at most MAX_BYTES
    except (OSError, UnicodeDecodeError, ConfigError) as exc:
        raise ApiFailed(Code.UNREADABLE, f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        if source.lower().endswith(".json"):
            data = json.loads(text)
        else:  # YAML reads JSON too; stdin may be either
            data = parse_yaml(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ApiFailed(Code.INVALID_CONTRACT, f"{source} is not valid {_kind(source)}: {exc}") from exc
    if not isinstance(data, dict):
        raise ApiFailed(Code.INVALID_CONTRACT, f"{source}: a contract is a mapping (goal, budgets, authority, ...)")
    try:
        json.dumps(data)
    except (TypeError, ValueError) as exc:  # a YAML date or set has no JSON form: quote it
        raise ApiFailed(Code.INVALID_CONTRACT, f"{source}: not expressible as JSON ({exc}); quote the value") from exc
    return data


def _kind(source: str) -> str:
    return "JSON" if source.lower().endswith(".json") else "YAML"


def contract_problems(data: Any) -> list[str]:
    """What this version's contract model finds wrong, as `field: problem` (empty: nothing)."""
    from gateway.domain.contract import parse_contract  # loads CEL: only when a contract was refused

    try:
        parse_contract(data)
    except InvalidRequest as exc:
        return [f"{p['field']}: {p['problem']}" for p in exc.details.get("problems", [])]
    return []


def _create(args: argparse.Namespace) -> int:
    contract = read_contract(args.contract)
    with cli_http.client(args) as http:
        run = create_run(http, contract)
    return _new_run(args, run, f": {run.get('goal')}")


def create_run(http: httpx.Client, contract: dict[str, Any]) -> dict[str, Any]:
    """`POST /api/runs`. Raises: ApiFailed, `invalid_contract` naming every problem."""
    try:
        run: dict[str, Any] = cli_http.call(http, "POST", "/api/runs", contract)
    except ApiFailed as exc:
        # The API answers with a count; the same model here names every problem.
        problems = contract_problems(contract) if exc.code == Code.INVALID_CONTRACT else []
        if problems:
            raise ApiFailed(exc.code, f"{exc.message}: " + "; ".join(problems)) from exc
        raise
    return run


def _new_run(args: argparse.Namespace, run: dict[str, Any], note: str) -> int:
    """The new run's id alone on stdout (the rest on stderr), or the API's answer with `--json`."""
    if args.json:
        print_json(run)
        return 0
    print(f"created {run['run_id']} ({run['status']}){note}", file=sys.stderr)
    print(run["run_id"])
    return 0


# -- runs list / show ------------------------------------------------------------------------
def _used(budget: dict[str, Any]) -> str:
    return f"{budget['spent']}/{budget['limit']}"


def _lease_cell(lease: dict[str, Any]) -> str:
    return f"{lease['worker']}#{lease['epoch']}" if lease.get("worker") else "-"


def _goal(goal: Any, width: int = 40) -> str:
    text = cell(goal)
    return text if len(text) <= width else text[: width - 3] + "..."


def runs_table(runs: list[dict[str, Any]]) -> str:
    rows = [
        [
            r["run_id"],
            r["status"],
            _used(r["budgets"]["spend"]),
            _used(r["budgets"]["tool_calls"]),
            _used(r["budgets"]["writes"]),
            _lease_cell(r["lease"]),
            short_time(r["deadline"]),
            _goal(r.get("goal")),
        ]
        for r in runs
    ]
    return table(["RUN_ID", "STATUS", "SPEND", "CALLS", "WRITES", "LEASE", "DEADLINE", "GOAL"], rows)


def _list(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= MAX_PAGE:
        raise ApiFailed(Code.INVALID_REQUEST, f"--limit must be from 1 to {MAX_PAGE}")
    params = {"limit": str(args.limit)} | ({"status": args.status} if args.status else {})
    with cli_http.client(args) as http:
        if args.all:
            page: dict[str, Any] = {"items": [], "next_cursor": None, "damaged": []}
            for each in each_page(http, "/api/runs", params):
                page["items"] += each["items"]
                page["damaged"] += each.get("damaged", [])
        else:
            page = cli_http.call(http, "GET", "/api/runs", params=params)
    if args.json:
        print_json(page)
        return 0
    print(runs_table(page["items"]) if page["items"] else "no runs")
    for damaged in page.get("damaged", []):
        print(f"not listed: run {damaged['run_id']} ({damaged['code']}: its row was changed)", file=sys.stderr)
    if page["next_cursor"]:
        print(f"more runs follow: --all, or --limit up to {MAX_PAGE}", file=sys.stderr)
    return 0


def lease_text(lease: dict[str, Any]) -> str:
    if not lease.get("worker"):
        return "none"
    state = "live" if lease.get("live") else "not live"
    return f"{lease['worker']}, epoch {lease['epoch']}, expires {short_time(lease.get('expires_at'))} ({state})"


def standing_lines(st: dict[str, Any]) -> list[str]:
    """Where the run stands: the next decision and why, the blocker, current task and milestone, last artifact."""
    task, milestone, artifact, blocker = st.get("task"), st.get("milestone"), st.get("last_artifact"), st.get("blocker")
    task_text = f"{task['task_id']} {task['title']} ({task['status']}, attempt {task['attempts']})" if task else "none"
    saved = "none yet"
    if artifact:
        ref = artifact["artifact"]
        saved = f"{ref.get('id', '')} {ref.get('uri', '')} saved {short_time(artifact['saved_at'])}"
    rows = [
        ("next", f"{st['next_decision']}: {st.get('why', '')}"),
        ("blocker", f"{blocker['kind']}: {blocker['detail']}" if blocker else "none"),
        ("task", task_text),
        ("milestone", f"{milestone['milestone_id']} ({milestone['status']})" if milestone else "none left"),
        ("artifact", saved),
    ]
    return [f"{name.ljust(12)}  {cell(value)}" for name, value in rows]


def describe_run(run: dict[str, Any]) -> str:
    """`runs show` for a person: the run's facts, budgets as bars, lease, pending approvals, milestones."""
    status = run["status"] + (f" ({run['status_reason']})" if run.get("status_reason") else "")
    facts = [
        ("goal", run.get("goal")),
        ("owner", run.get("owner")),
        ("created", f"{short_time(run.get('created_at'))} by {cell(run.get('created_by'))}"),
        ("deadline", short_time(run.get("deadline"))),
        ("spec_version", run.get("spec_version")),
        ("lineage", run.get("lineage_id")),
        ("parent", run.get("parent_run_id")),
        ("lease", lease_text(run["lease"])),
    ]
    lines = [f"{run['run_id']}  {status}"]
    lines += [f"  {name.ljust(12)}  {cell(value)}" for name, value in facts]
    if run.get("standing"):
        lines += ["", "standing"] + [f"  {line}" for line in standing_lines(run["standing"])]
    lines += ["", f"budgets ({run.get('currency', '')})"] + [f"  {line}" for line in budget_lines(run["budgets"])]
    approvals = run.get("approvals") or []
    lines += ["", f"pending approvals ({len(approvals)})"]
    if approvals:
        rows = [
            [a["approval_id"], a["tool"], short_hash(a["payload_sha256"]), a.get("requested_by"), a.get("decide_by")]
            for a in approvals
        ]
        body = table(["APPROVAL_ID", "TOOL", "SHA256", "REQUESTED_BY", "DECIDE_BY"], rows)
        lines += [f"  {line}" for line in body.splitlines()]
    dropped = run.get("refusals_dropped") or {}
    if dropped.get("rate") or dropped.get("max_per_run"):
        lines += [
            "",
            f"refusals not recorded (limits.refusals): {dropped.get('rate', 0)} past the token rate, "
            f"{dropped.get('max_per_run', 0)} past max_per_run",
        ]
    milestones = run.get("milestones") or []
    lines += ["", f"milestones ({len(milestones)})"]
    for m in milestones:
        lines.append(f"  {cell(m.get('id'))}  {'required' if m.get('required', True) else 'optional'}  {m['status']}")
    return "\n".join(lines)


def _show(args: argparse.Namespace) -> int:
    with cli_http.client(args) as http:
        run = cli_http.call(http, "GET", api_path("runs", args.run_id))
    if args.json:
        print_json(run)
    else:
        print(describe_run(run))
    return 0


# -- controls --------------------------------------------------------------------------------
def _control(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"reason": args.reason} if args.reason else {}
    if getattr(args, "hard", False):
        body["hard"] = True
    with cli_http.client(args) as http:
        run = cli_http.call(http, "POST", api_path("runs", args.run_id, args.control), body)
    if args.json:
        print_json(run)
    else:
        reason = f" ({run['status_reason']})" if run.get("status_reason") else ""
        print(f"{run['run_id']}: {run['status']}{reason}")
    return 0


def _successor(args: argparse.Namespace) -> int:
    body = {"reason": args.reason, "extend_by": args.extend_by}
    with cli_http.client(args) as http:
        run = cli_http.call(
            http, "POST", api_path("runs", args.run_id, "successor"), {k: v for k, v in body.items() if v}
        )
    return _new_run(args, run, f" as the successor of {args.run_id}")


def _revise(args: argparse.Namespace) -> int:
    if args.patch.lstrip().startswith("{"):
        try:
            patch = json.loads(args.patch)
        except ValueError as exc:
            raise ApiFailed(Code.INVALID_REQUEST, f"--patch is not valid JSON: {exc}") from exc
    else:
        patch = read_contract(args.patch)  # a mapping from a file or stdin, as a contract is read
    body = {"spec_version": args.spec_version, "patch": patch} | ({"reason": args.reason} if args.reason else {})
    with cli_http.client(args) as http:
        run = cli_http.call(http, "POST", api_path("runs", args.run_id, "revise"), body)
    if args.json:
        print_json(run)
        return 0
    print(f"{run['run_id']}: {run['spec_version']} ({run['status']})")
    for change in run["changes"]:
        print(f"  {change['field']}  {change['effect']}: {cell(change['was'])} -> {cell(change['now'])}")
    return 0


def _delegate(args: argparse.Namespace) -> int:
    contract = read_contract(args.contract)
    with cli_http.client(args) as http:
        run = cli_http.call(http, "POST", api_path("runs", args.parent_run_id, "children"), contract)
    return _new_run(args, run, f" under {args.parent_run_id}")


def actions_table(actions: list[dict[str, Any]]) -> str:
    rows = []
    for a in actions:
        receipt = a.get("receipt")
        rows.append(
            [
                a["action_id"],
                a["tool"],
                a.get("effect"),
                a["status"],
                a.get("code"),
                a.get("actual_spend"),
                receipt.get("id") if isinstance(receipt, dict) else receipt,
                a.get("worker"),
                short_time(a.get("created_at")),
            ]
        )
    return table(["ACTION_ID", "TOOL", "EFFECT", "STATUS", "CODE", "SPEND", "RECEIPT", "WORKER", "CREATED"], rows)


def _actions(args: argparse.Namespace) -> int:
    with cli_http.client(args) as http:
        actions = every_item(http, api_path("runs", args.run_id, "actions"), {"limit": str(MAX_PAGE)})
    if args.json:
        print_json({"items": actions, "next_cursor": None})
    else:
        print(actions_table(actions) if actions else "no actions yet")
    return 0


# -- usage and the report --------------------------------------------------------------------
def _usage(args: argparse.Namespace) -> int:
    body = {"kind": args.kind, "amount": args.amount, "note": args.note, "ref": args.ref}
    with cli_http.client(args) as http:
        charge = cli_http.call(
            http, "POST", api_path("runs", args.run_id, "usage"), {k: v for k, v in body.items() if v is not None}
        )
    if args.json:
        print_json(charge)
        return 0
    again = " (reported before: not charged again)" if charge["replayed"] else ""
    spend = charge["spend"]
    print(
        f"{charge['charge_id']}: {charge['amount']} {charge['tag']}{again}; spent {spend['spent']} of {spend['limit']}"
    )
    return 0


def _signal(args: argparse.Namespace) -> int:
    payload = None
    if args.payload is not None:
        try:
            payload = json.loads(args.payload)
        except json.JSONDecodeError as exc:
            raise ApiFailed(Code.INVALID_REQUEST, f"--payload is not valid JSON: {exc}") from exc
    key = args.key or f"cli-{secrets.token_hex(8)}"
    body = {"name": args.name, "payload": payload, "idempotency_key": key}
    with cli_http.client(args) as http:
        signal = cli_http.call(http, "POST", api_path("runs", args.run_id, "signal"), body)
    if args.json:
        print_json(signal)
        return 0
    again = " (sent before with this key: nothing recorded again)" if signal["replayed"] else ""
    woke = f"; it ended wait {signal['woke_wait_id']}" if signal["woke_wait_id"] else ""
    print(f"{signal['signal_id']}: {signal['name']} (key {key}){again}{woke}; the run is {signal['status']}")
    return 0


def _dead_letters(args: argparse.Namespace) -> int:
    with cli_http.client(args) as http:
        letters = cli_http.call(http, "GET", api_path("runs", args.run_id, "dead-letters"))
    if args.json:
        print_json(letters)
        return 0
    for d in letters["items"]:
        print(
            f"{d['dead_letter_id']}  {d['status']:<8}  {d['tool']}  op {d['operation_id']}  "
            f"{d['attempts']} attempts, last {d['last_code']}"
        )
    if not letters["items"]:
        print("no dead letters")
    return 0


def _report(args: argparse.Namespace) -> int:
    return run_report(args)


def _plan(args: argparse.Namespace) -> int:
    with cli_http.client(args) as http:
        plan = cli_http.call(http, "GET", api_path("runs", args.run_id, "plan"))
    if args.json:
        print_json(plan)
    else:
        print(plan_text(plan))
    return 0


# -- connected clients -----------------------------------------------------------------------
def visible(value: Any) -> str:
    """A cell a client chose (its name, given at an unauthenticated registration): control
    characters shown escaped, so that none moves the cursor or colours the operator's terminal."""
    text = cell(value)
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _connection_state(c: dict[str, Any]) -> str:
    if c["status"] == "revoked":
        return f"revoked by {visible(c.get('revoked_by'))}: {visible(c.get('revoked_reason'))}"
    if c["status"] == "ended":
        return f"ended: {visible(c.get('reason'))}"
    return "active"


def connections_table(items: list[dict[str, Any]]) -> str:
    rows = [
        [
            c["grant_id"],
            _goal(visible(c.get("client_name") or c["client_id"]), 32),
            visible(c["granted_by"]),
            short_time(c["created_at"]),
            short_time(c.get("refreshed_at")),
            c["epoch"],
            _goal(_connection_state(c), 48),
        ]
        for c in items
    ]
    return table(["GRANT_ID", "CLIENT", "CONSENTED_BY", "CONSENTED", "REFRESHED", "EPOCH", "STATUS"], rows)


def _connections(args: argparse.Namespace) -> int:
    with cli_http.client(args) as http:
        listed = cli_http.call(http, "GET", api_path("runs", args.run_id, "connections"), params={"limit": "500"})
    if args.json:
        print_json(listed)
    else:
        print(connections_table(listed["items"]) if listed["items"] else "no client has signed in for this run")
    return 0


def _disconnect(args: argparse.Namespace) -> int:
    if not args.reason.strip():
        raise ApiFailed(Code.INVALID_REQUEST, "--reason must say why (it is recorded in the run's history)")
    with cli_http.client(args) as http:
        path = api_path("runs", args.run_id, "connections", args.grant_id, "revoke")
        shown = cli_http.call(http, "POST", path, {"reason": args.reason})
    if args.json:
        print_json(shown)
    else:
        name = visible(shown.get("client_name") or shown["client_id"])
        print(f"{shown['grant_id']} ({name}): {_connection_state(shown)}")
    return 0


# -- leases ----------------------------------------------------------------------------------
def default_worker() -> str:
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no login name in some containers
        user = "cli"
    return f"{user}@{socket.gethostname()}"[:128]


def _grant_text(grant: dict[str, Any]) -> str:
    return f"{grant['run_id']} for {grant['worker']}: epoch {grant['epoch']}, expires {short_time(grant['expires_at'])}"


def _acquire(args: argparse.Namespace) -> int:
    body = {"worker": args.worker or default_worker(), "takeover": args.takeover}
    with cli_http.client(args) as http:
        grant = cli_http.call(http, "POST", api_path("runs", args.run_id, "lease"), body)
    if args.json:
        print_json(grant)
        return 0
    print(f"lease on {_grant_text(grant)}", file=sys.stderr)
    print("the token is shown once (the agent's Bearer for /mcp; WARRANT_TOKEN for warrant stdio):", file=sys.stderr)
    print(grant["token"])
    return 0


def _renew(args: argparse.Namespace) -> int:
    token = args.token or os.environ.get("WARRANT_TOKEN", "")
    if not token:
        raise ApiFailed(Code.UNAUTHENTICATED, "set WARRANT_TOKEN (or --token) to the run's lease token")
    url = (args.url or os.environ.get("WARRANT_URL") or cli_http.DEFAULT_URL).rstrip("/")
    # Authenticated by the lease token itself: no API key, so not cli_http.client.
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        grant = cli_http.call(http, "POST", "/api/leases/renew")
    if args.json:
        print_json(grant)
    else:
        print(f"renewed {_grant_text(grant)}")
    return 0
