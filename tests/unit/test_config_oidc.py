"""`console_sign_in.oidc` in warrant.yaml: what is accepted, and the clear ConfigError for the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import load_settings
from gateway.errors import ConfigError

ENV = {"WARRANT_LEDGER_KEY": "k", "KEY_OPS": "key-ops", "OIDC_SECRET": "s"}
USER = "      - {match: ana@acme.example, name: ana, tenant: acme, roles: [operator]}\n"


def config(tmp_path: Path, oidc: str, users: str = USER) -> Path:
    path = tmp_path / "warrant.yaml"
    path.write_text(
        "api_keys:\n  - {name: ops, tenant: acme, roles: [admin], key_env: KEY_OPS}\n"
        "console_sign_in:\n  oidc:\n" + oidc + ("    users:\n" + users if users else "")
    )
    return path


BASE = "    issuer: https://login.acme.example/\n    client_id: warrant\n    client_secret_env: OIDC_SECRET\n"


def test_a_full_entry_is_read(tmp_path: Path) -> None:
    settings = load_settings(config(tmp_path, BASE + "    scopes: [openid, email, openid]\n"), ENV)
    oidc = settings.oidc
    assert oidc is not None
    assert oidc.issuer == "https://login.acme.example"  # the trailing slash dropped
    assert oidc.client_secret == "s"
    assert oidc.scopes == ("openid", "email") and oidc.claim == "email" and oidc.label == "login.acme.example"
    user = oidc.user_for("ANA@acme.example")  # addresses match whatever their case
    assert user is not None and (user.name, user.tenant, user.roles) == ("ana", "acme", frozenset({"operator"}))
    assert oidc.user_for("bo@acme.example") is None
    assert oidc.digest("ana@acme.example").startswith("oidc:")
    assert "client_secret" not in repr(oidc)


def test_without_the_section_there_is_no_provider(tmp_path: Path) -> None:
    path = tmp_path / "warrant.yaml"
    path.write_text("api_keys: []\n")
    assert load_settings(path, ENV).oidc is None


def test_a_claim_other_than_email_matches_exactly(tmp_path: Path) -> None:
    users = "      - {match: User-123, name: ana, tenant: acme, roles: [operator]}\n"
    oidc = load_settings(config(tmp_path, BASE + "    claim: sub\n", users), ENV).oidc
    assert oidc is not None and oidc.user_for("User-123") is not None and oidc.user_for("user-123") is None


@pytest.mark.parametrize(
    ("oidc", "users", "env", "says"),
    [
        (BASE, USER, {"OIDC_SECRET": ""}, "OIDC_SECRET"),
        (BASE.replace("https://login.acme.example/", "http://login.acme.example"), USER, {}, "must be https"),
        (BASE.replace("https://login.acme.example/", "https://login.acme.example/?x=1"), USER, {}, "no query"),
        (BASE + "    scopes: [email]\n", USER, {}, "must include openid"),
        (BASE, "", {}, "users"),
        (BASE, USER + USER.replace("ana@acme", "Ana@Acme").replace("ana,", "ana2,"), {}, "same identity"),
        (BASE, "      - {match: x@acme.example, name: ops, tenant: acme, roles: [admin]}\n", {}, "api_keys' names"),
        (BASE, USER + "      - {match: b@acme.example, name: ana, tenant: acme, roles: [admin]}\n", {}, "unique"),
        (BASE, "      - {match: x@acme.example, name: x, tenant: acme, roles: [root]}\n", {}, "roles"),
        (BASE + "    redirect_uri: https://w.example/elsewhere\n", USER, {}, "/console/login/oidc/callback"),
        (BASE + "    extra: 1\n", USER, {}, "extra"),
    ],
    ids=[
        "secret-unset",
        "http-issuer",
        "issuer-query",
        "no-openid",
        "no-users",
        "one-identity-twice",
        "a-key-name",
        "one-name-twice",
        "unknown-role",
        "redirect-elsewhere",
        "unknown-field",
    ],
)
def test_a_bad_entry_stops_start_up_saying_why(
    tmp_path: Path, oidc: str, users: str, env: dict[str, str], says: str
) -> None:
    with pytest.raises(ConfigError, match=says.replace("?", r"\?")):
        load_settings(config(tmp_path, oidc, users), ENV | env)


def test_plain_http_is_allowed_on_loopback_only(tmp_path: Path) -> None:
    oidc = BASE.replace("https://login.acme.example/", "http://127.0.0.1:8080")
    assert load_settings(config(tmp_path, oidc), ENV).oidc is not None
