from typing import Any

import pytest

from gateway.adapters import Adapter, CallRequest, Outcome, OutcomeKind, ToolDefinition
from gateway.catalog import Catalog
from gateway.catalog.catalog import DEFAULT_TIMEOUT
from gateway.errors import ConfigError
from gateway.policy import ToolPolicy

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}


class StaticAdapter(Adapter):
    """An adapter that only lists definitions; the catalog never calls a tool."""

    def __init__(self, name: str, *definitions: ToolDefinition) -> None:
        self.name = name
        self._definitions = list(definitions)

    def definitions(self) -> list[ToolDefinition]:
        return self._definitions

    async def call(self, request: CallRequest) -> Outcome:
        return Outcome(OutcomeKind.NOT_SENT)


def _tool(name: str, **changes: Any) -> ToolDefinition:
    fields: dict[str, Any] = {"name": name, "description": f"The {name} tool.", "input_schema": SCHEMA, **changes}
    return ToolDefinition(**fields)


def _policy(**fields: Any) -> ToolPolicy:
    return ToolPolicy.model_validate({"effect": "write", **fields})


def test_tools_are_exposed_as_adapter_double_underscore_tool() -> None:
    catalog = Catalog([StaticAdapter("crm", _tool("create_contact"), _tool("search"))], {})
    assert sorted(spec.name for spec in catalog) == ["crm__create_contact", "crm__search"]
    spec = catalog.get("crm__create_contact")
    assert spec is not None and spec.tool == "create_contact"
    assert len(catalog) == 2
    assert catalog.get("create_contact") is None


@pytest.mark.parametrize("name", ["crm", "a", "crm2", "a" + "b" * 15])
def test_a_well_formed_adapter_name_is_accepted(name: str) -> None:
    assert len(Catalog([StaticAdapter(name, _tool("x"))], {})) == 1


@pytest.mark.parametrize("name", ["", "CRM", "2crm", "crm_x", "crm-x", "a" + "b" * 16, "crm\n", "crmé"])
def test_a_malformed_adapter_name_stops_start_up(name: str) -> None:
    with pytest.raises(ConfigError):
        Catalog([StaticAdapter(name, _tool("x"))], {})


def test_two_adapters_with_one_name_stop_start_up() -> None:
    with pytest.raises(ConfigError):
        Catalog([StaticAdapter("crm", _tool("a")), StaticAdapter("crm", _tool("b"))], {})


def test_an_exposed_name_of_exactly_48_characters_is_accepted() -> None:
    tool = "t" * (48 - len("crm__"))
    assert Catalog([StaticAdapter("crm", _tool(tool))], {}).get(f"crm__{tool}") is not None


def test_an_exposed_name_longer_than_48_characters_stops_start_up() -> None:
    with pytest.raises(ConfigError):
        Catalog([StaticAdapter("crm", _tool("t" * (49 - len("crm__"))))], {})


def test_an_expose_as_alias_covers_a_long_name() -> None:
    catalog = Catalog([StaticAdapter("crm", _tool("t" * 60, expose_as="crm__long"))], {})
    spec = catalog.get("crm__long")
    assert spec is not None and spec.tool == "t" * 60


@pytest.mark.parametrize("alias", ["has space", "dots.not.allowed", "x" * 49, "crm__x\n"])
def test_a_malformed_alias_stops_start_up(alias: str) -> None:
    with pytest.raises(ConfigError):
        Catalog([StaticAdapter("crm", _tool("x", expose_as=alias))], {})


def test_a_tool_name_with_characters_clients_refuse_stops_start_up() -> None:
    with pytest.raises(ConfigError):
        Catalog([StaticAdapter("crm", _tool("create.contact"))], {})


def test_two_tools_under_one_exposed_name_stop_start_up() -> None:
    crm = StaticAdapter("crm", _tool("create_contact"))
    other = StaticAdapter("other", _tool("x", expose_as="crm__create_contact"))
    with pytest.raises(ConfigError):
        Catalog([crm, other], {})


@pytest.mark.parametrize(
    "adapter",
    [StaticAdapter("crm", _tool("x", expose_as="warrant_status")), StaticAdapter("warrant", _tool("status"))],
)
def test_the_warrant_prefix_is_reserved(adapter: Adapter) -> None:
    with pytest.raises(ConfigError):
        Catalog([adapter], {})


def test_an_invalid_input_schema_stops_start_up() -> None:
    with pytest.raises(ConfigError):
        Catalog([StaticAdapter("crm", _tool("x", input_schema={"type": "nonsense"}))], {})


def test_a_policy_cost_that_the_currency_cannot_express_stops_start_up() -> None:
    with pytest.raises(ConfigError):
        Catalog([StaticAdapter("crm", _tool("x"))], {"crm__x": _policy(cost={"spend": "0.05"})}, currency="JPY")


def test_a_tool_with_a_policy_reserves_its_maximum_cost() -> None:
    policies = {"crm__x": _policy(cost={"spend": "0.05", "max": "0.10"}), "crm__y": _policy(cost={"spend": "0.05"})}
    catalog = Catalog([StaticAdapter("crm", _tool("x"), _tool("y"), _tool("z"))], policies)
    x, y, z = (catalog.get(f"crm__{n}") for n in "xyz")
    assert x is not None and (x.cost_spend, x.cost_max, x.reservation().spend) == (5, 10, 10)
    assert y is not None and (y.cost_spend, y.cost_max, y.reservation().spend) == (5, None, 5)
    assert z is not None and z.policy is None and z.reservation().spend == 0


def test_a_tool_takes_its_own_timeout_or_the_default() -> None:
    catalog = Catalog([StaticAdapter("crm", _tool("x", timeout=2.5), _tool("y"))], {})
    x, y = catalog.get("crm__x"), catalog.get("crm__y")
    assert x is not None and x.timeout == 2.5
    assert y is not None and y.timeout == DEFAULT_TIMEOUT


def test_argument_problems_name_where_they_are() -> None:
    spec = Catalog([StaticAdapter("crm", _tool("x"))], {}).get("crm__x")
    assert spec is not None
    assert spec.argument_problems({"email": "bo@acme.example"}) == []
    assert len(spec.argument_problems({})) == 1
    assert spec.argument_problems({"email": 3})[0].startswith("email:")


def test_the_definition_hash_changes_when_the_description_or_schema_changes() -> None:
    base = _tool("create_contact")
    other_description = _tool("create_contact", description="Create a contact, and email them.")
    other_schema = _tool("create_contact", input_schema={**SCHEMA, "required": []})
    assert len({base.sha256(), other_description.sha256(), other_schema.sha256()}) == 3


def test_the_definition_hash_ignores_key_order_and_local_settings() -> None:
    reordered = _tool("create_contact", input_schema=dict(reversed(list(SCHEMA.items()))))
    assert _tool("create_contact").sha256() == reordered.sha256()
    assert _tool("create_contact").sha256() == _tool("create_contact", timeout=3.0, expose_as="crm__cc").sha256()


def test_the_catalog_records_each_tools_definition_hash() -> None:
    spec = Catalog([StaticAdapter("crm", _tool("x"))], {}).get("crm__x")
    assert spec is not None and spec.definition_sha256 == _tool("x").sha256()
