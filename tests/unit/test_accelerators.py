"""The accelerators' fence (gateway/accelerators.py): a switch, a version range and private names each.

Outside its range (or with a private name it reads gone) an accelerator is off and one warning
names it, the installed version and the range; switched off in warrant.yaml it is off quietly.
The last tests are about the versions installed here: `make test-newest-sdk` runs them (with the
other differential tests) against the newest `mcp` release, where they check that the fence
decides as declared and says so.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from gateway import accelerators
from gateway.accelerators import Accelerators, Reach, settle, within
from gateway.config import load_settings
from gateway.errors import ConfigError

pytestmark = pytest.mark.differential

FRONT = next(a for a in accelerators.ACCELERATORS if a.name == "mcp_front")
SCHEMA = next(a for a in accelerators.ACCELERATORS if a.name == "quick_schema")
IN_RANGE = {"mcp": f"{FRONT.minimum}.0", "jsonschema": f"{SCHEMA.minimum}.0"}
BEYOND = {"mcp": f"{FRONT.below}.0", "jsonschema": f"{SCHEMA.below}.0.1"}  # the first releases past the ranges
ROOT = Path(__file__).resolve().parents[2]


def versions(**changes: str | None) -> Any:
    table: dict[str, str | None] = {**IN_RANGE, **changes}
    return lambda package: table.get(package)


def every_name_present(reach: Reach) -> bool:
    return True


def decide(switches: dict[str, bool] | None = None, **changes: str | None) -> Accelerators:
    return settle(switches, version_of=versions(**changes), reachable=every_name_present)


@pytest.mark.parametrize(
    ("version", "inside"),
    [
        ("2.3.0", True),
        ("2.3", True),
        ("2.3.7", True),
        ("2.3.0.post1", True),
        ("2.3.1+local.1", True),
        ("2.2.9", False),
        ("2.4.0", False),
        ("2.4", False),
        ("3.0.0", False),
        ("2.3.1rc1", False),  # a pre-release is outside every range
        ("2.4.0.dev3", False),
        ("not a version", False),
    ],
)
def test_a_version_is_within_the_range_only_as_a_final_release_in_it(version: str, inside: bool) -> None:
    assert within(version, "2.3", "2.4") is inside


def test_every_accelerator_serves_with_its_switch_on_and_the_versions_in_range(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, "warrant.accelerators"):
        fence = decide()
    assert fence.off == {}
    assert all(fence.on(name) for name in accelerators.NAMES)
    assert caplog.records == []


def test_an_sdk_outside_the_range_turns_both_mcp_accelerators_off_with_one_warning_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, "warrant.accelerators"):
        fence = decide(mcp=BEYOND["mcp"])
    assert set(fence.off) == {"mcp_front", "mcp_client"}
    assert fence.on("http11") and fence.on("quick_schema")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    front, client = warnings
    assert front.startswith("accelerator mcp_front ") and client.startswith("accelerator mcp_client ")
    for message in warnings:
        assert f"mcp {BEYOND['mcp']} is installed" in message and f"mcp>={FRONT.minimum},<{FRONT.below}" in message
    assert "the SDK's streamable-HTTP app answers every request" in front
    assert "the SDK client sends every call" in client


def test_a_library_missing_or_out_of_range_turns_its_accelerator_off(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "warrant.accelerators"):
        fence = decide(jsonschema=BEYOND["jsonschema"])
        gone = decide(mcp=None)
    assert set(fence.off) == {"quick_schema"}
    assert fence.off["quick_schema"] == f"jsonschema {BEYOND['jsonschema']} is outside jsonschema{SCHEMA.range}"
    assert set(gone.off) == {"mcp_front", "mcp_client"}
    assert any("mcp (not installed) is installed" in r.getMessage() for r in caplog.records)


def test_the_declared_ranges_are_the_ones_docs_operations_md_gives() -> None:
    rows = {
        line.split("|")[1].strip(" `"): line
        for line in (ROOT / "docs" / "operations.md").read_text().splitlines()
        if line.startswith("| `")
    }
    assert set(rows) == set(accelerators.NAMES)
    for accelerator in accelerators.ACCELERATORS:
        if accelerator.package is not None:
            assert f"`{accelerator.package}{accelerator.range}`" in rows[accelerator.name]
    assert (FRONT.package, FRONT.range, SCHEMA.package, SCHEMA.range) == (
        "mcp",
        ">=2.3,<2.4",
        "jsonschema",
        ">=4.20,<5",
    )


def test_http11_mirrors_no_library_and_has_only_its_switch() -> None:
    assert decide(mcp="9.0", jsonschema="9.0").on("http11")
    assert not decide({"http11": False}).on("http11")


def test_a_switch_turned_off_is_off_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, "warrant.accelerators"):
        fence = decide(dict.fromkeys(accelerators.NAMES, False))
    assert set(fence.off) == set(accelerators.NAMES)
    assert set(fence.off.values()) == {"switched off in warrant.yaml"}
    assert [r.levelno for r in caplog.records] == [logging.INFO] * 4


def test_a_missing_private_name_turns_its_accelerator_off(caplog: pytest.LogCaptureFixture) -> None:
    def without_otel(reach: Reach) -> bool:
        return reach is not accelerators.OTEL_MIDDLEWARE

    with caplog.at_level(logging.WARNING, "warrant.accelerators"):
        fence = settle(version_of=versions(), reachable=without_otel)
    assert fence.off == {"mcp_front": "mcp.server._otel.OpenTelemetryMiddleware is missing"}
    [warning] = caplog.records
    assert "mcp_front" in warning.getMessage() and "mcp.server._otel.OpenTelemetryMiddleware" in warning.getMessage()


def test_a_missing_private_name_of_no_accelerator_is_said_and_turns_nothing_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def without_provider(reach: Reach) -> bool:
        return reach is not accelerators.TRACER_PROVIDER

    with caplog.at_level(logging.WARNING, "warrant.accelerators"):
        fence = settle(version_of=versions(), reachable=without_provider)
    assert fence.off == {}
    [warning] = caplog.records
    assert "opentelemetry.trace._TRACER_PROVIDER" in warning.getMessage()
    assert "get_tracer_provider()" in warning.getMessage()


def test_the_private_names_read_here_are_the_ones_declared() -> None:
    # Every declared module-level name resolves with the installed SDK and OpenTelemetry API.
    assert accelerators.present(accelerators.OTEL_MIDDLEWARE)
    assert accelerators.present(accelerators.TRACER_PROVIDER)
    assert accelerators.resolve(accelerators.OTEL_MIDDLEWARE) is not None
    assert not accelerators.present(Reach("mcp.server", "no_such_name", "test", "nothing"))
    assert not accelerators.present(Reach("no_such_module", "x", "test", "nothing"))


def test_a_private_name_missing_at_run_time_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    reach = Reach("test", f"missing_{id(caplog)}", "a test", "the public path serves")
    with caplog.at_level(logging.WARNING, "warrant.accelerators"):
        accelerators.missing(reach)
        accelerators.missing(reach)
    assert [r.getMessage() for r in caplog.records] == [
        f"the private name {reach.name} is missing: the public path serves"
    ]


def test_an_unknown_switch_is_refused() -> None:
    with pytest.raises(ValueError, match="no accelerator named fast"):
        settle({"fast": True})
    with pytest.raises(KeyError):
        decide().on("fast")


def test_tracing_answers_the_same_without_the_private_provider_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    from gateway.observe import tracing

    before = tracing.enabled()
    monkeypatch.setattr(tracing, "_PROVIDER_GLOBAL", "_renamed_in_a_later_release")
    assert tracing.enabled() is before  # asked of the public API instead
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", TracerProvider())
    assert tracing.enabled() is True


# -- warrant.yaml ----------------------------------------------------------------------------
def settings_of(tmp_path: Path, text: str) -> Any:
    config = tmp_path / "warrant.yaml"
    config.write_text(text)
    return load_settings(config, {"WARRANT_LEDGER_KEY": "k"})


def test_a_configuration_without_the_section_switches_every_accelerator_on(tmp_path: Path) -> None:
    assert settings_of(tmp_path, "database: sqlite:///w.db\n").accelerators == dict.fromkeys(accelerators.NAMES, True)


def test_the_section_switches_each_accelerator_by_name(tmp_path: Path) -> None:
    settings = settings_of(tmp_path, "accelerators: {mcp_front: false, quick_schema: false}\n")
    assert settings.accelerators == {"mcp_front": False, "mcp_client": True, "http11": True, "quick_schema": False}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("accelerators: {mcp_fornt: false}\n", "accelerators.mcp_fornt"),
        ("accelerators: {http11: sometimes}\n", "accelerators.http11"),
        ("accelerators: [mcp_front]\n", "accelerators"),
    ],
)
def test_a_section_naming_no_accelerator_or_no_switch_stops_start_up(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        settings_of(tmp_path, text)


def test_the_switches_name_exactly_the_declared_accelerators() -> None:
    from gateway.config import AcceleratorsEntry

    assert tuple(AcceleratorsEntry.model_fields) == accelerators.NAMES


# -- the versions installed here ---------------------------------------------------------------
def test_the_installed_versions_are_fenced_as_declared(caplog: pytest.LogCaptureFixture) -> None:
    """In range, the accelerator serves; outside (the newest SDK may be), it is off and one
    warning names it, the installed version and the range."""
    with caplog.at_level(logging.WARNING, "warrant.accelerators"):
        fence = settle()
    warnings = [r.getMessage() for r in caplog.records]
    for accelerator in accelerators.ACCELERATORS:
        if accelerator.package is None:
            assert fence.on(accelerator.name)
            continue
        version = accelerators.installed_version(accelerator.package)
        assert version is not None
        inside = within(version, accelerator.minimum, accelerator.below)
        assert fence.on(accelerator.name) is inside
        said = [w for w in warnings if w.startswith(f"accelerator {accelerator.name} ")]
        if inside:
            assert said == []
        else:
            [warning] = said
            assert f"{accelerator.package} {version} is installed" in warning
            assert f"{accelerator.package}{accelerator.range}" in warning


# -- where the decision goes ---------------------------------------------------------------------
def test_the_app_routes_each_switch_to_the_path_it_chooses(tmp_path: Path) -> None:
    from gateway.adapters.mcp import McpAdapter
    from gateway.app import create_app
    from gateway.config import load_adapter

    adapter = tmp_path / "files.yaml"
    adapter.write_text("name: files\nkind: mcp\nurl: http://127.0.0.1:9/mcp\n")
    settings = settings_of(
        tmp_path,
        "adapters: [files.yaml]\n"
        "accelerators: {mcp_front: false, mcp_client: false, http11: false, quick_schema: false}\n",
    )
    app = create_app(settings)
    fence = app.state.accelerators
    assert set(fence.off) == set(accelerators.NAMES)
    loaded = load_adapter(adapter, {}, fence=fence)
    assert isinstance(loaded, McpAdapter) and loaded._accelerators is fence


class _Session:
    def __init__(self, dispatcher: Any) -> None:
        if dispatcher is not None:
            self._dispatcher = dispatcher


class _Client:
    def __init__(self, session: Any) -> None:
        self._session = session

    @property
    def session(self) -> Any:
        if self._session is None:
            raise RuntimeError("Client must be used within an async context manager")
        return self._session


def test_the_closed_connection_check_survives_the_sdk_renaming_its_private_flag(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from gateway.adapters.mcp.adapter import _closed

    monkeypatch.setattr(accelerators, "_missing", set())
    assert _closed(_Client(_Session(SimpleNamespace(_closed=True)))) is True
    assert _closed(_Client(_Session(SimpleNamespace(_closed=False)))) is False
    assert _closed(_Client(None)) is True  # not entered, or exited
    with caplog.at_level(logging.WARNING, "warrant.accelerators"):
        assert _closed(_Client(_Session(SimpleNamespace(closed=True)))) is False  # open until a call fails
        assert _closed(_Client(_Session(None))) is False
    [warning] = [r.getMessage() for r in caplog.records]
    assert "ClientSession._dispatcher._closed is missing" in warning
