"""Failpoints and sabotage switches (gateway/safeguards.py): off by default, set only by the
configuration's `drill:` section, and a fired `kill` is a real SIGKILL at that point."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import get_args

import pytest

from gateway.config import load_settings
from gateway.errors import ConfigError
from gateway.safeguards import ALL_ON, POINTS, SAFEGUARDS, Failpoint, Point, Safeguard, Safeguards


def test_off_by_default() -> None:
    for safeguards in (ALL_ON, Safeguards()):
        assert not safeguards.active
        for safeguard in SAFEGUARDS:
            assert not safeguards.sabotaged(safeguard)
        for name in POINTS:
            safeguards.hit(name, "any__tool")  # returns: nothing is armed


def test_the_names_and_their_types_agree() -> None:
    assert get_args(Point) == POINTS
    assert get_args(Safeguard) == SAFEGUARDS


def test_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match="after_lunch"):
        Safeguards({"after_lunch": Failpoint("after_lunch")})
    with pytest.raises(ValueError, match="seatbelts"):
        Safeguards(sabotage=["seatbelts"])


def test_sabotage_is_exactly_what_was_asked_and_only_where_it_was_given() -> None:
    drill = Safeguards(sabotage=["budget"])
    assert drill.active and drill.sabotaged("budget")
    assert not drill.sabotaged("fencing")
    assert not ALL_ON.sabotaged("budget")  # another object, another process's switches


def test_drill_mode_is_announced_only_when_a_switch_is_on(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="warrant.failpoints"):
        Safeguards().announce()
        assert caplog.records == []
        Safeguards({"after_admit": Failpoint("after_admit")}, ["approval"]).announce()
    assert [r.getMessage() for r in caplog.records] == [
        "DRILL MODE: failpoints after_admit, sabotaged safeguards approval; never run a deployment like this"
    ]


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
        from gateway.safeguards import Failpoint, Safeguards
        drill = Safeguards({"before_settle": Failpoint("before_settle", "kill", "a__write", 1)})
        drill.hit("after_admit", "a__write")      # another failpoint
        drill.hit("before_settle", "b__write")    # another tool
        drill.hit("before_settle", "a__write")    # skipped once
        print("still alive", flush=True)
        drill.hit("before_settle", "a__write")    # fires
        print("survived", flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert done.stdout == "still alive\n"
    assert "warrant failpoint before_settle fired (kill, tool a__write)" in done.stderr
