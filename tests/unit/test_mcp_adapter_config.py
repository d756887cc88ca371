"""Loading `kind: mcp` adapter documents: validation, `${...}` references, commands and paths."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gateway.adapters.mcp import McpAdapter
from gateway.config import load_adapter
from gateway.errors import ConfigError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "adapters" / "files.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def _config(adapter: object) -> object:
    assert isinstance(adapter, McpAdapter)
    return adapter._config


def test_python_is_the_gateways_interpreter_and_cwd_is_relative_to_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: files\nkind: mcp\ncommand: [python, server.py]\ncwd: ..\nenv: {K: '${SECRET}'}\n")
    config = _config(load_adapter(path, {"SECRET": "s3"}))
    assert config.command == [sys.executable, "server.py"]  # type: ignore[attr-defined]
    assert config.cwd == str(tmp_path.resolve())  # type: ignore[attr-defined]
    assert config.env == {"K": "s3"}  # type: ignore[attr-defined]


def test_a_command_runs_in_the_adapter_files_folder_by_default(tmp_path: Path) -> None:
    config = _config(load_adapter(_write(tmp_path, "name: files\nkind: mcp\ncommand: [server]\n"), {}))
    assert config.cwd == str(tmp_path / "adapters")  # type: ignore[attr-defined]


def test_headers_and_url_take_references_from_the_environment_and_files(tmp_path: Path) -> None:
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "token").write_text("from-a-file\n")
    text = "name: files\nkind: mcp\nurl: 'http://${HOST}/mcp'\nheaders: {A: 'Bearer ${TOKEN}', B: '${file:token}'}\n"
    config = _config(load_adapter(_write(tmp_path, text), {"HOST": "127.0.0.1:9", "TOKEN": "t"}))
    assert config.url == "http://127.0.0.1:9/mcp"  # type: ignore[attr-defined]
    assert config.headers == {"A": "Bearer t", "B": "from-a-file"}  # type: ignore[attr-defined]


def test_a_missing_variable_stops_start_up_naming_it_and_no_value(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: files\nkind: mcp\nurl: http://h/mcp\nheaders: {A: '${GONE} ${HERE}'}\n")
    with pytest.raises(ConfigError) as stopped:
        load_adapter(path, {"HERE": "a-secret-value"})
    assert "GONE" in str(stopped.value) and "a-secret-value" not in str(stopped.value)


@pytest.mark.parametrize(
    "text",
    [
        "name: files\nkind: mcp\n",  # neither command nor url
        "name: files\nkind: mcp\ncommand: [a]\nurl: http://h/mcp\n",
        "name: files\nkind: mcp\ncommand: [a]\nheaders: {A: b}\n",
        "name: files\nkind: mcp\nurl: ftp://h/mcp\n",
        "name: files\nkind: mcp\ncommand: [a]\npin: sometimes\n",
        "name: files\nkind: mcp\ncommand: [a]\ntools: {x: {retries: 3}}\n",
        "name: files\nkind: mcp\ncommand: []\n",
    ],
)
def test_an_invalid_mcp_adapter_stops_start_up(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError):
        load_adapter(_write(tmp_path, text), {})


def test_an_invalid_document_is_reported_before_any_reference_is_resolved(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: files\nkind: mcp\ncommand: [a]\nheaders: {A: '${TOKEN}'}\n")
    with pytest.raises(ConfigError) as stopped:
        load_adapter(path, {"TOKEN": "a-secret-value"})
    assert "a-secret-value" not in str(stopped.value)
