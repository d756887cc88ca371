import re

import pytest

from gateway.canonical import payload_sha256
from gateway.domain import (
    derive_operation_id,
    idempotency_key,
    looks_like_token,
    mint_token,
    repeat_operation_id,
    token_hash,
    valid_client_operation_id,
)

PAYLOAD = {"to": "bo@acme.example", "subject": "Hello", "body": {"text": "hi", "lines": [1, 2.0, 3]}}
REORDERED = {"body": {"lines": [1, 2, 3], "text": "hi"}, "subject": "Hello", "to": "bo@acme.example"}


def test_a_payload_hash_ignores_key_order_and_number_spelling() -> None:
    assert payload_sha256(PAYLOAD) == payload_sha256(REORDERED)


def test_a_payload_hash_changes_with_any_value() -> None:
    assert payload_sha256(PAYLOAD) != payload_sha256({**PAYLOAD, "subject": "Hello!"})
    assert payload_sha256({"list": [1, 2]}) != payload_sha256({"list": [2, 1]})


def test_a_payload_that_is_not_canonical_json_is_refused() -> None:
    with pytest.raises(ValueError):
        payload_sha256({"x": float("nan")})


def test_a_derived_operation_id_is_stable_when_the_payload_is_reordered() -> None:
    first = derive_operation_id("lin_1", "email__send", payload_sha256(PAYLOAD))
    again = derive_operation_id("lin_1", "email__send", payload_sha256(REORDERED))
    assert first == again
    assert re.fullmatch(r"op_[0-9a-f]{40}", first)


def test_a_derived_operation_id_differs_by_lineage_tool_and_payload() -> None:
    digest = payload_sha256(PAYLOAD)
    ids = {
        derive_operation_id("lin_1", "email__send", digest),
        derive_operation_id("lin_2", "email__send", digest),
        derive_operation_id("lin_1", "crm__create_contact", digest),
        derive_operation_id("lin_1", "email__send", payload_sha256({**PAYLOAD, "to": "cy@acme.example"})),
    }
    assert len(ids) == 4


def test_a_repeat_has_its_own_operation_id_and_asking_twice_is_one_repeat() -> None:
    first = repeat_operation_id("lin_1", "act_1", "the customer asked again")
    assert first == repeat_operation_id("lin_1", "act_1", "the customer asked again")
    assert first != repeat_operation_id("lin_1", "act_1", "another reason")
    assert first != repeat_operation_id("lin_1", "act_2", "the customer asked again")
    assert first != derive_operation_id("lin_1", "act_1", "the customer asked again")


def test_an_idempotency_key_is_wk_and_lowercase_unpadded_base32() -> None:
    key = idempotency_key("acme", "lin_1", "op_1")
    assert re.fullmatch(r"wk_[a-z2-7]{52}", key)
    assert key == idempotency_key("acme", "lin_1", "op_1")


def test_an_idempotency_key_differs_per_tenant_lineage_and_operation() -> None:
    keys = {
        idempotency_key("acme", "lin_1", "op_1"),
        idempotency_key("globex", "lin_1", "op_1"),
        idempotency_key("acme", "lin_2", "op_1"),
        idempotency_key("acme", "lin_1", "op_2"),
    }
    assert len(keys) == 4


def test_idempotency_key_parts_cannot_be_shifted_into_each_other() -> None:
    assert idempotency_key("a", "bc", "op") != idempotency_key("ab", "c", "op")
    assert idempotency_key("acme", "lin", "1op") != idempotency_key("acme", "lin1", "op")


@pytest.mark.parametrize("value", ["op-1", "order:2024/17", "a", "x" * 200, "user@host+tag=1.2_3"])
def test_a_well_formed_client_operation_id_is_accepted(value: str) -> None:
    assert valid_client_operation_id(value)


@pytest.mark.parametrize(
    "value", ["", "x" * 201, "has space", "new\nline", "trailing\n", "tab\t", "ünïcode", "semi;colon", 17, None, ["op"]]
)
def test_a_malformed_client_operation_id_is_refused(value: object) -> None:
    assert not valid_client_operation_id(value)


def test_lease_tokens_are_random_and_stored_only_as_their_hash() -> None:
    first, second = mint_token(), mint_token()
    assert first != second
    assert looks_like_token(first)
    assert re.fullmatch(r"[0-9a-f]{64}", token_hash(first))
    assert token_hash(first) != token_hash(second)
    assert first not in token_hash(first)


@pytest.mark.parametrize("value", ["", "wl_", "wl_short", "wk_" + "x" * 40, "Bearer wl_" + "x" * 40, "wl_" + "x" * 300])
def test_strings_that_are_not_lease_tokens_are_not_taken_for_one(value: str) -> None:
    assert not looks_like_token(value)
