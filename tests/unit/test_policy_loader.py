from pathlib import Path

import pytest

from gateway.errors import ConfigError
from gateway.policy import load_policies, parse_policy
from gateway.yamlfile import read_yaml

DEFAULT = """
tools:
  crm__search_contacts: {effect: read}
  crm__create_contact: {effect: write, cost: {spend: "0.05", max: "0.10"}}
"""
EMAIL = """
tools:
  email__send: {effect: write, cost: {spend: "0.01"},
               approval: {role: approver, decide_within: 4h, valid_for: 1h, on_expiry: pause,
                          when: "!args.to.endsWith('@acme.example')"}}
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_policy_files_are_merged(tmp_path: Path) -> None:
    currency, tools = load_policies([_write(tmp_path, "a.yaml", DEFAULT), _write(tmp_path, "b.yaml", EMAIL)])
    assert currency == "USD"
    assert set(tools) == {"crm__search_contacts", "crm__create_contact", "email__send"}
    assert tools["crm__search_contacts"].effect == "read"
    assert tools["crm__create_contact"].cost.max == "0.10"
    rule = tools["email__send"].approval
    assert rule is not None and rule.tool == "*" and rule.when is not None


def test_no_policy_files_means_no_tools() -> None:
    assert load_policies([]) == ("USD", {})


def test_a_tool_named_in_two_files_stops_loading(tmp_path: Path) -> None:
    first = _write(tmp_path, "a.yaml", DEFAULT)
    second = _write(tmp_path, "b.yaml", "tools:\n  crm__create_contact: {effect: read}\n")
    with pytest.raises(ConfigError):
        load_policies([first, second])


def test_a_tool_named_twice_in_one_file_stops_loading(tmp_path: Path) -> None:
    doubled = "tools:\n  crm__create_contact: {effect: write}\n  crm__create_contact: {effect: read}\n"
    with pytest.raises(ConfigError):
        load_policies([_write(tmp_path, "a.yaml", doubled)])


def test_yaml_merge_keys_may_still_be_overridden(tmp_path: Path) -> None:
    text = "base: &w {effect: write}\ntools:\n  crm__create_contact: {<<: *w, effect: read}\n"
    data = read_yaml(_write(tmp_path, "a.yaml", text))
    assert data["tools"]["crm__create_contact"] == {"effect": "read"}


def test_files_that_disagree_on_currency_stop_loading(tmp_path: Path) -> None:
    first = _write(tmp_path, "a.yaml", DEFAULT)
    second = _write(tmp_path, "b.yaml", "currency: EUR\ntools:\n  email__send: {effect: write}\n")
    with pytest.raises(ConfigError):
        load_policies([first, second])


def test_an_invalid_policy_lists_every_problem(tmp_path: Path) -> None:
    text = """
tools:
  crm__a: {effect: delete}
  crm__b: {effect: write, cost: {spend: 0.05}}
  crm__c: {effect: write, cost: {spend: "0.10", max: "0.05"}}
  crm__d: {effect: write, approval: {when: "args.to.endsWith("}}
  crm__e: {effect: read, retries: 3}
"""
    with pytest.raises(ConfigError) as caught:
        parse_policy(read_yaml(_write(tmp_path, "bad.yaml", text)), "bad.yaml")
    # The problems are listed by field path, one per line.
    listing = str(caught.value)
    for field in ("tools.crm__a.effect", "tools.crm__b.cost.spend", "tools.crm__c.cost", "tools.crm__d.approval.when"):
        assert field in listing
    assert "tools.crm__e.retries" in listing


@pytest.mark.parametrize("text", ["tools: [1, 2]", "just a string", "tools:\n  x: {effect: read}\nextra: 1"])
def test_a_policy_document_of_the_wrong_shape_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError):
        load_policies([_write(tmp_path, "a.yaml", text)])


def test_a_missing_policy_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_policies([tmp_path / "absent.yaml"])


def test_a_policy_file_that_is_not_yaml_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_policies([_write(tmp_path, "a.yaml", "tools: {crm__x: [unclosed\n")])


def test_yaml_tags_that_build_python_objects_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        read_yaml(_write(tmp_path, "a.yaml", "x: !!python/object/apply:os.getcwd []\n"))
