"""Failpoints and sabotage switches (gateway/failpoints.py): off by default, set only by the
configuration's `drill:` section, and a fired `kill` is a real SIGKILL at that point."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway import failpoints
from gateway.config import load_settings
from gateway.errors import ConfigError


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    failpoints.reset()


def test_off_by_default() -> None:
    assert not failpoints.active()
    for safeguard in failpoints.SAFEGUARDS:
        assert not failpoints.sabotaged(safeguard)
    for name in failpoints.POINTS:
        failpoints.hit(name, "any__tool")  # returns: nothing is armed


def test_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match="after_lunch"):
        failpoints.configure({"after_lunch": failpoints.Failpoint("after_lunch")}, ())
    with pytest.raises(ValueError, match="seatbelts"):
        failpoints.configure({}, ["seatbelts"])
    assert not failpoints.active()


def test_sabotage_is_exactly_what_was_asked() -> None:
    failpoints.configure({}, ["budget"])
    assert failpoints.sabotaged("budget")
    assert not failpoints.sabotaged("fencing")
    failpoints.reset()
    assert not failpoints.sabotaged("budget")


def _config(tmp_path: Path, drill: str) -> Path:
    path = tmp_path / "warrant.yaml"
    path.write_text(f"database: sqlite:///w.db\n{drill}")
    return path


def test_the_drill_section_is_read_and_checked(tmp_path: Path) -> None:
    env = {"WARRANT_LEDGER_KEY": "k" * 32}
    plain = load_settings(_config(tmp_path, ""), env)
    assert plain.failpoints == {} and plain.sabotage == ()
    drill = "drill:\n  failpoints:\n    after_dispatch: {tool: crm__create_contact, skip: 2}\n  sabotage: [fencing]\n"
    settings = load_settings(_config(tmp_path, drill), env)
    entry = settings.failpoints["after_dispatch"]
    assert (entry.action, entry.tool, entry.skip) == ("kill", "crm__create_contact", 2)
    assert settings.sabotage == ("fencing",)
    with pytest.raises(ConfigError, match="failpoints"):
        load_settings(_config(tmp_path, "drill:\n  failpoints:\n    after_lunch: {}\n"), env)
    with pytest.raises(ConfigError, match="sabotage"):
        load_settings(_config(tmp_path, "drill:\n  sabotage: [seatbelts]\n"), env)
    assert plain.clock_offset_s == 0
    assert load_settings(_config(tmp_path, "drill:\n  clock_offset_s: 600\n"), env).clock_offset_s == 600
    with pytest.raises(ConfigError, match="clock_offset_s"):
        load_settings(_config(tmp_path, "drill:\n  clock_offset_s: 1e9\n"), env)


def test_a_kill_fires_once_at_the_matching_hit_and_is_a_sigkill() -> None:
    program = textwrap.dedent(
        """
        import sys
        from gateway import failpoints
        failpoints.configure({"before_settle": failpoints.Failpoint("before_settle", "kill", "a__write", 1)}, ())
        failpoints.hit("after_admit", "a__write")      # another failpoint
        failpoints.hit("before_settle", "b__write")    # another tool
        failpoints.hit("before_settle", "a__write")    # skipped once
        print("still alive", flush=True)
        failpoints.hit("before_settle", "a__write")    # fires
        print("survived", flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert done.stdout == "still alive\n"
    assert "warrant failpoint before_settle fired (kill, tool a__write)" in done.stderr
